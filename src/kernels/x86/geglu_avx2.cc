// AVX2 GeGlu. Numerics: elementwise GeluTanhF8(gate) * up; GeluTanhF8 is
// lane-for-lane equal to GeluTanhF (math_avx2.h), the tail uses GeluTanhF:
// equal to ref/geglu.cc bit for bit (geglu_test.cc).
#include "kernels/glu_simd.h"
#include "kernels/x86/avx2_util.h"
#include "numerics/math_avx2.h"

namespace stet::kernels::avx2 {

void GeGlu(const float* gate, const float* up, int64_t n, float* out) {
  GatedSimd<F32x8, GeluTanhF8, GeluTanhF>(gate, up, n, out);
}

}  // namespace stet::kernels::avx2

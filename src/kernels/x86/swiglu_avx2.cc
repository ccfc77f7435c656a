// AVX2 SwiGlu. Numerics: elementwise SiluF8(gate) * up; SiluF8 is lane-for-lane
// equal to SiluF (math_avx2.h), the tail uses SiluF: equal to ref/swiglu.cc bit
// for bit (swiglu_test.cc).
#include "kernels/glu_simd.h"
#include "kernels/x86/avx2_util.h"
#include "numerics/math_avx2.h"

namespace stet::kernels::avx2 {

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  GatedSimd<F32x8, SiluF8, SiluF>(gate, up, n, out);
}

}  // namespace stet::kernels::avx2

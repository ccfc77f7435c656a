// NEON GeGlu. Numerics: elementwise GeluTanhF4(gate) * up; GeluTanhF4 is
// lane-for-lane equal to GeluTanhF (math_neon.h), the tail uses GeluTanhF: equal
// to ref/geglu.cc bit for bit (geglu_test.cc).
#include "kernels/glu_simd.h"
#include "kernels/neon/neon_util.h"
#include "numerics/math_neon.h"

namespace stet::kernels::neon {

void GeGlu(const float* gate, const float* up, int64_t n, float* out) {
  GatedSimd<F32x4, GeluTanhF4, GeluTanhF>(gate, up, n, out);
}

}  // namespace stet::kernels::neon

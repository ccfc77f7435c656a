// NEON SwiGlu. Numerics: elementwise SiluF4(gate) * up; SiluF4 is lane-for-lane
// equal to SiluF (math_neon.h), the tail uses SiluF: equal to ref/swiglu.cc bit
// for bit (swiglu_test.cc).
#include "kernels/glu_simd.h"
#include "kernels/neon/neon_util.h"
#include "numerics/math_neon.h"

namespace stet::kernels::neon {

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  GatedSimd<F32x4, SiluF4, SiluF>(gate, up, n, out);
}

}  // namespace stet::kernels::neon

// NEON SwiGlu. Numerics: elementwise SiluF4(gate) * up; SiluF4 is lane-for-lane
// equal to SiluF (math_neon.h), the tail uses SiluF: equal to ref/swiglu.cc bit
// for bit (swiglu_test.cc).
#include "kernels/neon/neon_util.h"
#include "numerics/math_neon.h"

namespace stet::kernels::neon {

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    vst1q_f32(out + i, vmulq_f32(SiluF4(vld1q_f32(gate + i)), vld1q_f32(up + i)));
  }
  for (; i < n; ++i) out[i] = SiluF(gate[i]) * up[i];
}

}  // namespace stet::kernels::neon

// NEON GeGlu. Numerics: elementwise GeluTanhF4(gate) * up; GeluTanhF4 is
// lane-for-lane equal to GeluTanhF (math_neon.h), the tail uses GeluTanhF: equal
// to ref/geglu.cc bit for bit (geglu_test.cc).
#include "kernels/neon/neon_util.h"
#include "numerics/math_neon.h"

namespace stet::kernels::neon {

void GeGlu(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    vst1q_f32(out + i, vmulq_f32(GeluTanhF4(vld1q_f32(gate + i)), vld1q_f32(up + i)));
  }
  for (; i < n; ++i) out[i] = GeluTanhF(gate[i]) * up[i];
}

}  // namespace stet::kernels::neon

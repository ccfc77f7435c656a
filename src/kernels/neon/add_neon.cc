// NEON Add: out[i] = a[i] + b[i], one IEEE addition per element as in
// ref/add.cc, so bit for bit equal (add_test.cc). out may alias a or b.
#include "kernels/neon/neon_util.h"

namespace stet::kernels::neon {

void Add(const float* a, const float* b, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace stet::kernels::neon

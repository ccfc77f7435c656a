// NEON Argmax, as cpu/argmax_avx2.cc: 0 when x[0] is NaN, else the first index
// holding M, the largest non-NaN value — M by a vector max that skips NaNs
// (select where x > acc: false for NaN), then the first index equal to M.
// Equal to ref/argmax.cc's serial strict-> loop (argmax_test.cc).
#include <cmath>

#include "kernels/neon/neon_util.h"

namespace stet::kernels::neon {

namespace {

// The largest non-NaN x[i]; -inf if there is none.
float MaxIgnoringNan(const float* x, int64_t n) {
  float32x4_t m0 = vdupq_n_f32(-INFINITY), m1 = m0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float32x4_t a = vld1q_f32(x + i), b = vld1q_f32(x + i + 4);
    m0 = vbslq_f32(vcgtq_f32(a, m0), a, m0);
    m1 = vbslq_f32(vcgtq_f32(b, m1), b, m1);
  }
  float l[8];
  vst1q_f32(l, m0);
  vst1q_f32(l + 4, m1);
  float m = -INFINITY;
  for (float v : l) m = v > m ? v : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

}  // namespace

int64_t Argmax(const float* x, int64_t n) {
  if (n <= 1 || std::isnan(x[0])) return 0;
  const float m = MaxIgnoringNan(x, n);
  const float32x4_t mv = vdupq_n_f32(m);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    if (vmaxvq_u32(vceqq_f32(vld1q_f32(x + i), mv)) != 0) break;
  }
  for (; i < n; ++i) {
    if (x[i] == m) return i;
  }
  return 0;  // not reached: x[0] is not NaN, so some x[i] == m
}

}  // namespace stet::kernels::neon

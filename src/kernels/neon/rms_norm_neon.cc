// NEON RmsNorm. Numerics as ref/rms_norm.cc: the sum of squares is the 8-lane
// sum (lane = fma(x, x, lane), two float32x4_t, n % 8 tail by scalar fma into its
// lanes, fixed tree); scale = 1/sqrt(sum/n + eps) in scalar IEEE ops; y = (x *
// scale) * w as two separate multiplies. Bitwise equal (rms_norm_test.cc).
#include <cmath>

#include "kernels/neon/neon_util.h"

namespace stet::kernels::neon {

void RmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* y) {
  for (int64_t r = 0; r < m; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    Lanes8 acc = ZeroLanes();
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
      const float32x4_t a = vld1q_f32(xr + k), b = vld1q_f32(xr + k + 4);
      acc.lo = vfmaq_f32(acc.lo, a, a);
      acc.hi = vfmaq_f32(acc.hi, b, b);
    }
    float lanes[kLanes];
    StoreLanes(acc, lanes);
    for (int64_t j = k; j < n; ++j) lanes[j - k] = std::fma(xr[j], xr[j], lanes[j - k]);
    const float sum = CombineLanes(lanes);
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    const float32x4_t vs = vdupq_n_f32(scale);
    k = 0;
    for (; k + 4 <= n; k += 4) {
      vst1q_f32(yr + k, vmulq_f32(vmulq_f32(vld1q_f32(xr + k), vs), vld1q_f32(w + k)));
    }
    for (; k < n; ++k) yr[k] = (xr[k] * scale) * w[k];
  }
}

}  // namespace stet::kernels::neon

// Scalar reference RmsNorm. Numerics: sum of squares is the 8-lane sum
// (lane = fma(x, x, lane)); scale = 1/sqrt(sum/n + eps) with IEEE sqrt and
// division; y = (x * scale) * w; depends on n only, rows independent (rms_norm_test.cc).
#include <cmath>

#include "kernels/internal.h"

namespace stet::kernels::ref {

void RmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* y) {
  for (int64_t r = 0; r < m; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float lanes[kLanes] = {};
    for (int64_t k = 0; k < n; ++k) lanes[k % kLanes] = std::fma(xr[k], xr[k], lanes[k % kLanes]);
    const float sum = CombineLanes(lanes);
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    for (int64_t k = 0; k < n; ++k) yr[k] = (xr[k] * scale) * w[k];
  }
}

}  // namespace stet::kernels::ref

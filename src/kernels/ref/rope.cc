// Scalar reference Rope. Numerics: per pair x0' = x0*c - x1*s, x1' = x0*s + x1*c,
// no fma, cos/sin from the caller's table; dims >= rot_dim untouched; depends on
// nothing but the pair (rope_test.cc).
#include "kernels/internal.h"

namespace stet::kernels::ref {

void Rope(float* x, int n_heads, int head_dim, int rot_dim, const float* cos, const float* sin,
          RopeStyle style) {
  const int half = rot_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* xh = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const int i0 = style == RopeStyle::kNormal ? 2 * i : i;
      const int i1 = style == RopeStyle::kNormal ? 2 * i + 1 : i + half;
      const float x0 = xh[i0], x1 = xh[i1];
      const float c = cos[i], s = sin[i];
      xh[i0] = x0 * c - x1 * s;
      xh[i1] = x0 * s + x1 * c;
    }
  }
}

}  // namespace stet::kernels::ref

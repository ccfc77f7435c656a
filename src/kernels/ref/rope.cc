// Scalar reference Rope. Numerics: per pair x0' = x0*c - x1*s, x1' = x0*s + x1*c,
// no fma, cos/sin from the caller's table; dims >= rot_dim untouched; depends on
// nothing but the pair (rope_test.cc).
#include "kernels/internal.h"

namespace stet::kernels::ref {

void Rope(float* x, int n_heads, int head_dim, int rot_dim, const float* cos, const float* sin,
          RopeStyle style) {
  const int half = rot_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    RopePairs(x + static_cast<int64_t>(h) * head_dim, 0, half, style, cos, sin);
  }
}

}  // namespace stet::kernels::ref

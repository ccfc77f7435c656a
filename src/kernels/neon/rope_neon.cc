// NEON Rope. Numerics as ref/rope.cc: per pair x0' = x0*c - x1*s, x1' = x0*s +
// x1*c as separate multiplies and an add/sub (no fma), four pairs at a time
// (kNormal de-interleaves the (2i, 2i+1) pairs with LD2/ST2); the rest in scalar
// with the same ops. Bitwise equal (rope_test.cc).
#include "kernels/neon/neon_util.h"

namespace stet::kernels::neon {

namespace {

inline void Rotate(float32x4_t x0, float32x4_t x1, float32x4_t c, float32x4_t s, float32x4_t* y0,
                   float32x4_t* y1) {
  *y0 = vsubq_f32(vmulq_f32(x0, c), vmulq_f32(x1, s));
  *y1 = vaddq_f32(vmulq_f32(x0, s), vmulq_f32(x1, c));
}

}  // namespace

void Rope(float* x, int n_heads, int head_dim, int rot_dim, const float* cos, const float* sin,
          RopeStyle style) {
  const int half = rot_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* xh = x + static_cast<int64_t>(h) * head_dim;
    int i = 0;
    for (; i + 4 <= half; i += 4) {
      const float32x4_t c = vld1q_f32(cos + i), s = vld1q_f32(sin + i);
      if (style == RopeStyle::kNormal) {
        float32x4x2_t v = vld2q_f32(xh + 2 * i);
        float32x4x2_t o;
        Rotate(v.val[0], v.val[1], c, s, &o.val[0], &o.val[1]);
        vst2q_f32(xh + 2 * i, o);
      } else {
        float32x4_t y0, y1;
        Rotate(vld1q_f32(xh + i), vld1q_f32(xh + i + half), c, s, &y0, &y1);
        vst1q_f32(xh + i, y0);
        vst1q_f32(xh + i + half, y1);
      }
    }
    RopePairs(xh, i, half, style, cos, sin);
  }
}

}  // namespace stet::kernels::neon

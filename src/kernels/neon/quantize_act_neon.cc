// NEON activation quantization (rule R6: per row, per block along K). Same
// numbers as ref/quantize_act.cc: amax by FMAXNM from 0 (a nan element is
// ignored, as the reference's `a > amax` ignores it), d = amax/127 and id by
// scalar IEEE division, q = FRINTN(x*id) (ties to even) clamped by FMAXNM/FMINNM
// to [-127, 127] with nan -> -127, integer sums exact (quantize_act_test.cc).
#include <cstring>

#include "kernels/neon/neon_util.h"

namespace stet::kernels::neon {

namespace {

// 16 consecutive floats -> 16 int8 q's.
inline int8x16_t Quantize16(const float* x, float32x4_t id) {
  const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
  int32x4_t q[4];
  for (int i = 0; i < 4; ++i) {
    const float32x4_t r = vrndnq_f32(vmulq_f32(vld1q_f32(x + 4 * i), id));
    q[i] = vcvtq_s32_f32(vminnmq_f32(vmaxnmq_f32(r, lo), hi));
  }
  const int16x8_t h0 = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
  const int16x8_t h1 = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
  return vcombine_s8(vmovn_s16(h0), vmovn_s16(h1));
}

// amax of n (a multiple of 16) floats, nan ignored.
inline float AbsMax(const float* x, int n) {
  float32x4_t m = vdupq_n_f32(0.0f);
  for (int i = 0; i < n; i += 4) m = vmaxnmq_f32(m, vabsq_f32(vld1q_f32(x + i)));
  return vmaxnmvq_f32(m);
}

// Quantizes n (a multiple of 16) values into q; returns d.
inline float QuantizeBlock(const float* x, int n, int8_t* q) {
  const float amax = AbsMax(x, n);
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const float32x4_t vid = vdupq_n_f32(id);
  for (int i = 0; i < n; i += 16) vst1q_s8(q + i, Quantize16(x + i, vid));
  return d;
}

}  // namespace

void QuantizeActQ8(const float* x, ActQ8* a) {
  FillActQ8(x, a, [](const float* xb, int8_t* qb, int32_t* qsum) {
    const float d = QuantizeBlock(xb, kQK, qb);
    const int16x8_t p = vaddq_s16(vpaddlq_s8(vld1q_s8(qb)), vpaddlq_s8(vld1q_s8(qb + 16)));
    *qsum = vaddlvq_s16(p);
    return d;
  });
}

void QuantizeActQ8K(const float* x, ActQ8K* a) {
  FillActQ8K(x, a, [](const float* xb, int8_t* q, int16_t* bsums) {
    const float d = QuantizeBlock(xb, kQKK, q);
    for (int g = 0; g < kQKK / 16; ++g) {
      bsums[g] = static_cast<int16_t>(vaddlvq_s8(vld1q_s8(q + 16 * g)));
    }
    return d;
  });
}

}  // namespace stet::kernels::neon

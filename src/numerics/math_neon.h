// NEON twins of math.h (aarch64), lane-for-lane bitwise equal to the scalar
// functions: the same operations in the same order with the same roundings
// (vfmaq_f32 where math.h writes std::fma, nowhere else). Only included on aarch64.
#pragma once

#include <arm_neon.h>

#include "numerics/math.h"

namespace stet {

inline float32x4_t ExpF4(float32x4_t x) {
  using namespace math_internal;
  const float32x4_t magic = vdupq_n_f32(kRoundMagic);
  const float32x4_t t = vaddq_f32(vmulq_f32(x, vdupq_n_f32(kLog2e)), magic);
  const float32x4_t n = vsubq_f32(t, magic);
  float32x4_t r = vsubq_f32(x, vmulq_f32(n, vdupq_n_f32(kLn2Hi)));
  r = vsubq_f32(r, vmulq_f32(n, vdupq_n_f32(kLn2Lo)));
  float32x4_t p = vdupq_n_f32(kP0);
  p = vfmaq_f32(vdupq_n_f32(kP1), p, r);  // fma(p, r, kP1)
  p = vfmaq_f32(vdupq_n_f32(kP2), p, r);
  p = vfmaq_f32(vdupq_n_f32(kP3), p, r);
  p = vfmaq_f32(vdupq_n_f32(kP4), p, r);
  p = vfmaq_f32(vdupq_n_f32(kP5), p, r);
  const float32x4_t r2 = vmulq_f32(r, r);
  p = vfmaq_f32(r, p, r2);  // fma(p, r2, r)
  p = vaddq_f32(p, vdupq_n_f32(1.0f));
  // ni / 2 rounds toward zero as in C++: add 1 to negative ni before the shift.
  const int32x4_t ni = vcvtq_s32_f32(n);
  const int32x4_t n1 = vshrq_n_s32(
      vaddq_s32(ni, vreinterpretq_s32_u32(vshrq_n_u32(vreinterpretq_u32_s32(ni), 31))), 1);
  const int32x4_t n2 = vsubq_s32(ni, n1);
  const int32x4_t bias = vdupq_n_s32(127);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
  float32x4_t res = vmulq_f32(vmulq_f32(p, s1), s2);
  // The scalar early returns, in reverse order of precedence: x < kExpMin -> 0,
  // x > kExpMax -> inf, nan -> x.
  res = vbslq_f32(vcltq_f32(x, vdupq_n_f32(kExpMin)), vdupq_n_f32(0.0f), res);
  res = vbslq_f32(vcgtq_f32(x, vdupq_n_f32(kExpMax)), vdupq_n_f32(INFINITY), res);
  return vbslq_f32(vceqq_f32(x, x), res, x);
}

inline float32x4_t SiluF4(float32x4_t x) {
  const float32x4_t res = vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), ExpF4(vnegq_f32(x))));
  return vbslq_f32(vceqq_f32(x, vdupq_n_f32(-INFINITY)), vdupq_n_f32(-0.0f), res);
}

// Lane-for-lane GeluTanhF: the same operations in the same order.
inline float32x4_t GeluTanhF4(float32x4_t x) {
  const float32x4_t x2 = vmulq_f32(x, x);
  const float32x4_t x3 = vmulq_f32(x2, x);
  const float32x4_t s = vaddq_f32(x, vmulq_f32(vdupq_n_f32(kGeluA), x3));
  const float32x4_t z = vmulq_f32(vdupq_n_f32(kGelu2C), s);
  const float32x4_t res = vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), ExpF4(vnegq_f32(z))));
  return vbslq_f32(vceqq_f32(x, vdupq_n_f32(-INFINITY)), vdupq_n_f32(-0.0f), res);
}

}  // namespace stet

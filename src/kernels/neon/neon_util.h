// NEON helpers shared by kernels/neon/*_neon.cc: one logical 8-lane accumulator
// as two float32x4_t (lo = lanes 0-3, hi = lanes 4-7), the canonical lane tree
// on it, exact half-precision loads, and the dotprod target attribute. Bitwise
// twins of kernels/internal.h. Only included on aarch64.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "base/cpu_features.h"
#include "kernels/internal.h"

// SDOT/UDOT code is compiled for ARMv8.2+dotprod inside an otherwise baseline
// ARMv8.0 binary and is called only when CpuHasDotProd() says so.
#if defined(__clang__)
#define STET_TARGET_DOTPROD __attribute__((target("dotprod")))
#else
#define STET_TARGET_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

namespace stet::kernels::neon {

// The float vector the shared SIMD templates (sum_exp_simd.h, argmax_simd.h, glu_simd.h)
// run on: 4 lanes, the element-wise steps every one of them needs (NEON's loads and
// stores need no alignment: Store and StoreU are one).
namespace {  // internal linkage, as the static helpers below: no copy built for another ISA
struct F32x4 {
  using Vec = float32x4_t;
  static constexpr int kWidth = 4;
  static Vec Splat(float v) { return vdupq_n_f32(v); }
  static Vec Load(const float* p) { return vld1q_f32(p); }
  static void Store(float* p, Vec v) { vst1q_f32(p, v); }
  static void StoreU(float* p, Vec v) { vst1q_f32(p, v); }
  static Vec Sub(Vec a, Vec b) { return vsubq_f32(a, b); }
  static Vec Mul(Vec a, Vec b) { return vmulq_f32(a, b); }
};
}  // namespace

// The logical 8-lane accumulator: lane i < 4 in lo[i], lane i >= 4 in hi[i - 4].
struct Lanes8 {
  float32x4_t lo, hi;
};

static inline Lanes8 ZeroLanes() { return {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)}; }

static inline void StoreLanes(const Lanes8& l, float* out) {
  vst1q_f32(out, l.lo);
  vst1q_f32(out + 4, l.hi);
}

// internal.h's CombineLanes: s4[i] = l[i] + l[i+4]; t0 = s4[0] + s4[2],
// t1 = s4[1] + s4[3]; t0 + t1.
static inline float CombineLanes8(const Lanes8& l) {
  const float32x4_t s4 = vaddq_f32(l.lo, l.hi);
  const float32x2_t t = vadd_f32(vget_low_f32(s4), vget_high_f32(s4));
  return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
}

// Four f16 / bf16 values at p as floats: exact conversions. FCVTL quiets a
// signalling NaN as F16ToF32 does not, so a NaN weight keeps its NaN-ness but
// not necessarily its payload (the AVX2 path's VCVTPH2PS behaves the same).
static inline float32x4_t LoadF16x4(const uint16_t* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}
static inline float32x4_t LoadBF16x4(const uint16_t* p) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

// The integer-dot MatMul rows (matmul_q8_neon.cc, matmul_qk_neon.cc) as two kernel
// families over Blocks: `name` with SDOT (KDot::Row, where the CPU has dotprod)
// and `widen_name` with the widening dots (KWiden::Row, every CPU). Rows compiled
// for dotprod inline KDot's row through RowWalk (a class, not a lambda, keeps the
// target attribute).
template <typename KDot, typename Block>
STET_TARGET_DOTPROD void DotProdRows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  RowWalk<KDot, Block>(a, r0, r1);
}
template <typename KDot, typename KWiden, typename... Blocks>
constexpr auto IntDotKernels(const char* name, const char* widen_name, ActLayout act) {
  return Concat(
      KernelRowsOf<Blocks...>({name, Isa::kNeon, kEveryClass, Packed::kNo, act, CpuHasDotProd},
                              [](auto tag) {
                                using B = typename decltype(tag)::type;
                                return TypeRows{B::kType, DotProdRows<KDot, B>};
                              }),
      RowWalkKernels<KWiden, Blocks...>({widen_name, Isa::kNeon, kEveryClass, Packed::kNo, act}));
}

// Exact int32 sum of 4 lanes (no caller can overflow).
static inline int32_t HsumS32(int32x4_t v) { return vaddvq_s32(v); }

}  // namespace stet::kernels::neon

// NEON MatMul for the 32-block weights (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl) on
// 32-block quantized activations. Block b's exact int32 dot (SDOT where the CPU
// has dotprod, SMULL + SADALP otherwise: integer sums, so both give the same
// number) goes to logical lane b%8: eight blocks at a time, lanes 0-3 and 4-7 in
// two float32x4_t, lane = fma(dw*dx, float(isum), lane) (q4_1 then fma(mw, sx,
// lane); q5_1 likewise); the nb % 8 tail by scalar fma; fixed lane tree. Equal to
// ref/matmul_q8.cc bit for bit (matmul_test.cc).
#include <cmath>
#include <type_traits>

#include "base/check.h"
#include "base/cpu_features.h"
#include "kernels/neon/neon_util.h"
#include "numerics/half.h"

namespace stet::kernels::neon {

namespace {

// A block's 32 integer weights as two int8x16_t (elements 0-15, 16-31).
inline void Decode(const BlockQ8_0& b, int8x16_t* w0, int8x16_t* w1) {
  *w0 = vld1q_s8(b.qs);
  *w1 = vld1q_s8(b.qs + 16);
}
inline void Decode(const BlockQ4_0& b, int8x16_t* w0, int8x16_t* w1) {
  const uint8x16_t raw = vld1q_u8(b.qs);
  const int8x16_t eight = vdupq_n_s8(8);
  *w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0x0f))), eight);
  *w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), eight);
}
inline void Decode(const BlockQ4_1& b, int8x16_t* w0, int8x16_t* w1) {
  const uint8x16_t raw = vld1q_u8(b.qs);
  *w0 = vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0x0f)));
  *w1 = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
}

// Element e's fifth bit (bit e of qh) as 0x10 in byte e: elements 0-15 in *h0,
// 16-31 in *h1.
inline void HighBits(const uint8_t* qh, uint8x16_t* h0, uint8x16_t* h1) {
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bit = vld1q_u8(kBit), x10 = vdupq_n_u8(0x10);
  const uint8x16_t b0 = vcombine_u8(vdup_n_u8(qh[0]), vdup_n_u8(qh[1]));
  const uint8x16_t b1 = vcombine_u8(vdup_n_u8(qh[2]), vdup_n_u8(qh[3]));
  *h0 = vandq_u8(vtstq_u8(b0, bit), x10);
  *h1 = vandq_u8(vtstq_u8(b1, bit), x10);
}
// q5_1's q = nibble | fifth bit in [0, 31]; q5_0's the same minus 16.
inline void Decode(const BlockQ5_1& b, int8x16_t* w0, int8x16_t* w1) {
  const uint8x16_t raw = vld1q_u8(b.qs);
  uint8x16_t h0, h1;
  HighBits(b.qh, &h0, &h1);
  *w0 = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(raw, vdupq_n_u8(0x0f)), h0));
  *w1 = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(raw, 4), h1));
}
inline void Decode(const BlockQ5_0& b, int8x16_t* w0, int8x16_t* w1) {
  const uint8x16_t raw = vld1q_u8(b.qs);
  uint8x16_t h0, h1;
  HighBits(b.qh, &h0, &h1);
  const int8x16_t sixteen = vdupq_n_s8(16);
  *w0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(raw, vdupq_n_u8(0x0f)), h0)), sixteen);
  *w1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(raw, 4), h1)), sixteen);
}
// iq4_nl: each nibble through the 16-entry level table (TBL).
inline void Decode(const BlockIQ4_NL& b, int8x16_t* w0, int8x16_t* w1) {
  const int8x16_t table = vld1q_s8(kIQ4NLValues);
  const uint8x16_t raw = vld1q_u8(b.qs);
  *w0 = vqtbl1q_s8(table, vandq_u8(raw, vdupq_n_u8(0x0f)));
  *w1 = vqtbl1q_s8(table, vshrq_n_u8(raw, 4));
}

// The exact int32 dot of 32 weights with 32 q's, as four partial sums.
struct DotProd {
  STET_TARGET_DOTPROD static inline int32x4_t Dot(int8x16_t w0, int8x16_t w1, const int8_t* q) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(q)), w1, vld1q_s8(q + 16));
  }
};
struct Widen {
  // |w * q| <= 128 * 128: one product per int16 lane, then pairwise into int32.
  static inline int32x4_t Dot(int8x16_t w0, int8x16_t w1, const int8_t* q) {
    const int8x16_t q0 = vld1q_s8(q), q1 = vld1q_s8(q + 16);
    int32x4_t s = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(q0)));
    s = vpadalq_s16(s, vmull_high_s8(w0, q0));
    s = vpadalq_s16(s, vmull_s8(vget_low_s8(w1), vget_low_s8(q1)));
    return vpadalq_s16(s, vmull_high_s8(w1, q1));
  }
};

// Integer dots of blocks b..b+3 of one row, one per lane.
template <typename Block, typename D>
__attribute__((always_inline)) inline int32x4_t Dots4(const Block* blocks, const int8_t* qx,
                                                      int64_t b) {
  int32x4_t p[4];
  for (int t = 0; t < 4; ++t) {
    int8x16_t w0, w1;
    Decode(blocks[b + t], &w0, &w1);
    p[t] = D::Dot(w0, w1, qx + (b + t) * kQK);
  }
  return vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));
}

// DotRows' dot with D's integer dots: blocks 8 at a time, lanes 0-3 and 4-7 in
// two vectors (Lead), the nb % 8 tail one at a time (Of).
template <typename D>
struct Dot8 {
  template <typename Block>
  __attribute__((always_inline)) static inline int64_t Lead(const Block* blocks, const int8_t* qx,
                                                            const float* dx, const float* sx,
                                                            int64_t nb, float* lanes) {
    Lanes8 acc = ZeroLanes();
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8) {
      float dd[8], mw[8];
      for (int t = 0; t < 8; ++t) {
        dd[t] = F16ToF32(blocks[b + t].d) * dx[b + t];
        if constexpr (kBlockHasMin<Block>) mw[t] = F16ToF32(blocks[b + t].m);
      }
      const float32x4_t i0 = vcvtq_f32_s32(Dots4<Block, D>(blocks, qx, b));
      const float32x4_t i1 = vcvtq_f32_s32(Dots4<Block, D>(blocks, qx, b + 4));
      acc.lo = vfmaq_f32(acc.lo, vld1q_f32(dd), i0);
      acc.hi = vfmaq_f32(acc.hi, vld1q_f32(dd + 4), i1);
      if constexpr (kBlockHasMin<Block>) {
        acc.lo = vfmaq_f32(acc.lo, vld1q_f32(mw), vld1q_f32(sx + b));
        acc.hi = vfmaq_f32(acc.hi, vld1q_f32(mw + 4), vld1q_f32(sx + b + 4));
      }
    }
    StoreLanes(acc, lanes);
    return b;
  }
  template <typename Block>
  __attribute__((always_inline)) static inline int32_t Of(const Block& block, const int8_t* q) {
    int8x16_t w0, w1;
    Decode(block, &w0, &w1);
    return HsumS32(D::Dot(w0, w1, q));
  }
};

constexpr auto kKernels =
    IntDotKernels<DotRows<Dot8<DotProd>>, DotRows<Dot8<Widen>>, BlockQ8_0, BlockQ4_0, BlockQ4_1,
                  BlockQ5_0, BlockQ5_1, BlockIQ4_NL>("neon.q8", "neon.q8_widen", ActLayout::kQ8);

}  // namespace

std::span<const MatMulKernel> MatMulQ8Kernels() { return kKernels; }

}  // namespace stet::kernels::neon

// NEON MatMul for the 256-superblock weights (q2_k, q3_k, q4_k, q5_k, q6_k,
// iq4_xs) on ActQ8K activations. Per superblock the weights are unpacked to
// int8 vectors, each sub-block's exact int32 dot (SDOT where the CPU has
// dotprod, SMULL + SADALP otherwise) is scaled by its integer scale in int32
// (MLA) into two accumulators (shorter dependency chains), and their partial
// sums are added: isum, exact, the same integer as
// ref/matmul_qk.cc's. msum (q2_k, q4_k, q5_k) comes from the activation's
// 16-element sums. Then, as the reference: lane b%8 = fma(d*dx, float(isum),
// lane), fma(-(dmin*dx), float(msum), lane); fixed lane tree. Equal to the
// reference bit for bit (matmul_test.cc). |isum| < 2^31: at most 256 * 128 *
// 32 * 127 (q6_k).
#include <cmath>
#include <type_traits>

#include "base/check.h"
#include "base/cpu_features.h"
#include "kernels/neon/neon_util.h"
#include "numerics/half.h"

namespace stet::kernels::neon {

namespace {

// The exact int32 dot of 16 weights with 16 q's, as four partial sums.
struct DotProd {
  STET_TARGET_DOTPROD static inline int32x4_t Dot16(int8x16_t w, const int8_t* q) {
    return vdotq_s32(vdupq_n_s32(0), w, vld1q_s8(q));
  }
  STET_TARGET_DOTPROD static inline int32x4_t Dot32(int8x16_t w0, int8x16_t w1, const int8_t* q) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(q)), w1, vld1q_s8(q + 16));
  }
};
struct Widen {
  // |w * q| <= 128 * 128: one product per int16 lane, then pairwise into int32.
  static inline int32x4_t Dot16(int8x16_t w, const int8_t* q) {
    const int8x16_t x = vld1q_s8(q);
    return vpadalq_s16(vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(x))), vmull_high_s8(w, x));
  }
  static inline int32x4_t Dot32(int8x16_t w0, int8x16_t w1, const int8_t* q) {
    return vaddq_s32(Dot16(w0, q), Dot16(w1, q + 16));
  }
};

// acc += sc * <w0 w1, q[0..31]> (one sub-block of 32).
template <typename D>
__attribute__((always_inline)) inline int32x4_t Mla32(int32x4_t acc, int8x16_t w0, int8x16_t w1,
                                                      const int8_t* q, int32_t sc) {
  return vmlaq_n_s32(acc, D::Dot32(w0, w1, q), sc);
}
template <typename D>
__attribute__((always_inline)) inline int32x4_t Mla16(int32x4_t acc, int8x16_t w, const int8_t* q,
                                                      int32_t sc) {
  return vmlaq_n_s32(acc, D::Dot16(w, q), sc);
}

inline int8x16_t Lo4(uint8x16_t v) { return vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0f))); }
inline int8x16_t Hi4(uint8x16_t v) { return vreinterpretq_s8_u8(vshrq_n_u8(v, 4)); }

// The scale unpacking of numerics/dequant.h (UnpackScaleMinK4, Q3KScale,
// IQ4XSScale), inline here: out-of-line calls cost as much as a superblock's dots.
inline void ScaleMinK4(const uint8_t* q, uint8_t* sc, uint8_t* mn) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = q[j] & 63;
    mn[j] = q[j + 4] & 63;
    sc[j + 4] = static_cast<uint8_t>((q[j + 8] & 0x0f) | ((q[j] >> 6) << 4));
    mn[j + 4] = static_cast<uint8_t>((q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4));
  }
}
inline void ScalesQ3K(const uint8_t* s, int32_t* sc) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (s[j] & 0x0f) : (s[j - 8] >> 4);
    sc[j] = (low | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
  }
}
inline int32_t ScaleIQ4XS(const BlockIQ4_XS& b, int j) {
  const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f;
  return (low | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
}

// msum = sum_j m_j * (bsums[2j] + bsums[2j + 1]) over the 8 sub-blocks of 32.
inline int32_t MinSum32(const uint8_t* mins, const int16_t* bsums) {
  int32_t ms = 0;
  for (int j = 0; j < 8; ++j) ms += mins[j] * (bsums[2 * j] + bsums[2 * j + 1]);
  return ms;
}

// q4_k and q5_k: sub-block j = nibble j % 2 of qs[32 (j / 2) + l]; q5_k's weights
// | bit j of qh[l] << 4.
template <typename D, typename Block>
requires(std::is_same_v<Block, BlockQ4_K> || std::is_same_v<Block, BlockQ5_K>)
    __attribute__((always_inline)) inline void SuperDot(const Block& b, const int8_t* qx,
                                                        const int16_t* bsums, int32_t* isum,
                                                        int32_t* msum) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_K>;
  uint8_t sc[8], mn[8];
  ScaleMinK4(b.scales, sc, mn);
  [[maybe_unused]] uint8x16_t qh[2];
  if constexpr (kQ5) qh[0] = vld1q_u8(b.qh), qh[1] = vld1q_u8(b.qh + 16);
  int32x4_t acc[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
  for (int p = 0; p < 4; ++p) {
    const uint8x16_t r[2] = {vld1q_u8(b.qs + 32 * p), vld1q_u8(b.qs + 32 * p + 16)};
    for (int half = 0; half < 2; ++half) {  // sub-block j = 2p + half
      const int j = 2 * p + half;
      int8x16_t w[2];
      for (int u = 0; u < 2; ++u) {  // elements 16u..16u + 15
        w[u] = half == 0 ? Lo4(r[u]) : Hi4(r[u]);
        if constexpr (kQ5) {
          const uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1u << j));
          w[u] =
              vorrq_s8(w[u], vreinterpretq_s8_u8(vandq_u8(vtstq_u8(qh[u], bit), vdupq_n_u8(0x10))));
        }
      }
      acc[half] = Mla32<D>(acc[half], w[0], w[1], qx + 32 * j, sc[j]);
    }
  }
  *isum = HsumS32(vaddq_s32(acc[0], acc[1]));
  *msum = MinSum32(mn, bsums);
}

// q6_k: element 128h + 32g + l: low nibble of ql[64h + 32 (g & 1) + l] (g < 2) or
// its high nibble, | bits 2g.. of qh[32h + l] << 4, minus 32; sub-block of 16
// e / 16 = 8h + 2g + l / 16.
template <typename D>
__attribute__((always_inline)) inline void SuperDot(const BlockQ6_K& b, const int8_t* qx,
                                                    const int16_t*, int32_t* isum,
                                                    int32_t* /*no mins*/) {
  const uint8x16_t x30 = vdupq_n_u8(0x30);
  const int8x16_t off = vdupq_n_s8(32);
  int32x4_t acc[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8x16_t la[2] = {vld1q_u8(ql), vld1q_u8(ql + 16)};
    const uint8x16_t lb[2] = {vld1q_u8(ql + 32), vld1q_u8(ql + 48)};
    for (int t = 0; t < 2; ++t) {
      const uint8x16_t qh = vld1q_u8(b.qh + 32 * h + 16 * t);
      const uint8x16_t hi[4] = {vandq_u8(vshlq_n_u8(qh, 4), x30), vandq_u8(vshlq_n_u8(qh, 2), x30),
                                vandq_u8(qh, x30), vandq_u8(vshrq_n_u8(qh, 2), x30)};
      const int8x16_t lo[4] = {Lo4(la[t]), Lo4(lb[t]), Hi4(la[t]), Hi4(lb[t])};
      for (int g = 0; g < 4; ++g) {
        const int8x16_t w = vsubq_s8(vorrq_s8(lo[g], vreinterpretq_s8_u8(hi[g])), off);
        const int e = 128 * h + 32 * g + 16 * t;
        acc[g & 1] = Mla16<D>(acc[g & 1], w, qx + e, b.scales[e / 16]);
      }
    }
  }
  *isum = HsumS32(vaddq_s32(acc[0], acc[1]));
}

// q2_k: element 128h + 32g + l is bits 2g.. of qs[32h + l]; sub-block of 16
// j = 8h + 2g + l / 16 has scale sc_j & 15 and min sc_j >> 4.
template <typename D>
__attribute__((always_inline)) inline void SuperDot(const BlockQ2_K& b, const int8_t* qx,
                                                    const int16_t* bsums, int32_t* isum,
                                                    int32_t* msum) {
  const uint8x16_t three = vdupq_n_u8(3);
  int32x4_t acc[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
  for (int h = 0; h < 2; ++h) {
    for (int t = 0; t < 2; ++t) {
      const uint8x16_t q = vld1q_u8(b.qs + 32 * h + 16 * t);
      const uint8x16_t v[4] = {vandq_u8(q, three), vandq_u8(vshrq_n_u8(q, 2), three),
                               vandq_u8(vshrq_n_u8(q, 4), three), vshrq_n_u8(q, 6)};
      for (int g = 0; g < 4; ++g) {
        const int j = 8 * h + 2 * g + t;
        acc[g & 1] =
            Mla16<D>(acc[g & 1], vreinterpretq_s8_u8(v[g]), qx + 16 * j, b.scales[j] & 0x0f);
      }
    }
  }
  int32_t ms = 0;
  for (int j = 0; j < 16; ++j) ms += (b.scales[j] >> 4) * bsums[j];
  *isum = HsumS32(vaddq_s32(acc[0], acc[1]));
  *msum = ms;
}

// q3_k: q2_k's 2-bit layout, minus 4 where bit 4h + g of hmask[l] is clear:
// (low | 4 * bit) - 4; scale Q3KScale(j) in [-32, 31].
template <typename D>
__attribute__((always_inline)) inline void SuperDot(const BlockQ3_K& b, const int8_t* qx,
                                                    const int16_t*, int32_t* isum,
                                                    int32_t* /*no mins*/) {
  int32_t sc[16];
  ScalesQ3K(b.scales, sc);
  const uint8x16_t three = vdupq_n_u8(3), four = vdupq_n_u8(4);
  const int8x16_t off = vdupq_n_s8(4);
  int32x4_t acc[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
  for (int t = 0; t < 2; ++t) {
    const uint8x16_t hm = vld1q_u8(b.hmask + 16 * t);
    for (int h = 0; h < 2; ++h) {
      const uint8x16_t q = vld1q_u8(b.qs + 32 * h + 16 * t);
      const uint8x16_t v[4] = {vandq_u8(q, three), vandq_u8(vshrq_n_u8(q, 2), three),
                               vandq_u8(vshrq_n_u8(q, 4), three), vshrq_n_u8(q, 6)};
      for (int g = 0; g < 4; ++g) {
        const uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1u << (4 * h + g)));
        const uint8x16_t hi = vandq_u8(vtstq_u8(hm, bit), four);
        const int8x16_t w = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(v[g], hi)), off);
        const int j = 8 * h + 2 * g + t;
        acc[g & 1] = Mla16<D>(acc[g & 1], w, qx + 16 * j, sc[j]);
      }
    }
  }
  *isum = HsumS32(vaddq_s32(acc[0], acc[1]));
}

// iq4_xs: sub-block j of 32 = the nibbles of qs[16j..16j + 15] through the
// iq4_nl level table (low: elements 0-15, high: 16-31), scale IQ4XSScale(j).
template <typename D>
__attribute__((always_inline)) inline void SuperDot(const BlockIQ4_XS& b, const int8_t* qx,
                                                    const int16_t*, int32_t* isum,
                                                    int32_t* /*no mins*/) {
  const int8x16_t table = vld1q_s8(kIQ4NLValues);
  int32x4_t acc[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
  for (int j = 0; j < 8; ++j) {
    const uint8x16_t raw = vld1q_u8(b.qs + 16 * j);
    const int8x16_t w0 = vqtbl1q_s8(table, vandq_u8(raw, vdupq_n_u8(0x0f)));
    const int8x16_t w1 = vqtbl1q_s8(table, vshrq_n_u8(raw, 4));
    acc[j % 2] = Mla32<D>(acc[j % 2], w0, w1, qx + 32 * j, ScaleIQ4XS(b, j));
  }
  *isum = HsumS32(vaddq_s32(acc[0], acc[1]));
}

// DotRows' sums with D's integer dots.
template <typename D>
struct Sums {
  template <typename Block>
  __attribute__((always_inline)) static inline void Of(const Block& b, const int8_t* qx,
                                                       const int16_t* bsums, int32_t* isum,
                                                       int32_t* msum) {
    SuperDot<D>(b, qx, bsums, isum, msum);
  }
};

constexpr auto kKernels =
    IntDotKernels<DotRows<Sums<DotProd>>, DotRows<Sums<Widen>>, BlockQ2_K, BlockQ3_K, BlockQ4_K,
                  BlockQ5_K, BlockQ6_K, BlockIQ4_XS>("neon.qk", "neon.qk_widen", ActLayout::kQ8K);

}  // namespace

std::span<const MatMulKernel> MatMulQKKernels() { return kKernels; }

}  // namespace stet::kernels::neon

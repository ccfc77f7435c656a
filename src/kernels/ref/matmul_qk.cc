// Scalar reference MatMul for q2_k/q3_k/q4_k/q5_k/q6_k/iq4_xs weights on
// 256-superblock quantized activations. Numerics: superblock b's exact int32 sums go
// to lane b%8: lane = fma(d*dx, float(isum), lane), then for q2_k/q4_k/q5_k
// lane = fma(-(dmin*dx), float(msum), lane); fixed lane tree; depends on w.cols only
// (matmul_test.cc).
#include <cmath>
#include <type_traits>

#include "base/check.h"
#include "kernels/internal.h"
#include "numerics/dequant.h"
#include "numerics/half.h"

namespace stet::kernels::ref {

namespace {

// q4_k / q5_k: isum = sum_j sc_j * sum_{e in j} q_e*qx_e; msum = sum_j m_j * sum_{e in j}
// qx_e; q5_k's fifth bit of element 32j + l is bit j of qh[l].
template <typename Block>
void SuperDotK45(const Block& b, const int8_t* qx, int32_t* isum, int32_t* msum) {
  int32_t is = 0, ms = 0;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    UnpackScaleMinK4(b.scales, j, &sc, &mn);
    int32_t dot = 0, sx = 0;
    for (int l = 0; l < 32; ++l) {
      const uint8_t byte = b.qs[32 * (j / 2) + l];
      int q = (j % 2 == 0) ? (byte & 0x0f) : (byte >> 4);
      if constexpr (std::is_same_v<Block, BlockQ5_K>) q |= ((b.qh[l] >> j) & 1) << 4;
      dot += q * qx[32 * j + l];
      sx += qx[32 * j + l];
    }
    is += sc * dot;
    ms += mn * sx;
  }
  *isum = is;
  *msum = ms;
}
void SuperDot(const BlockQ4_K& b, const int8_t* qx, int32_t* isum, int32_t* msum) {
  SuperDotK45(b, qx, isum, msum);
}
void SuperDot(const BlockQ5_K& b, const int8_t* qx, int32_t* isum, int32_t* msum) {
  SuperDotK45(b, qx, isum, msum);
}

// q2_k: isum = sum_j (sc_j & 15) * <q_j, qx_j>, msum = sum_j (sc_j >> 4) * sum qx_j over
// its 16-element sub-blocks j; element 128h + 32g + l is bits 2g.. of qs[32h + l].
void SuperDot(const BlockQ2_K& b, const int8_t* qx, int32_t* isum, int32_t* msum) {
  int32_t is = 0, ms = 0;
  for (int j = 0; j < 16; ++j) {
    int32_t dot = 0, sx = 0;
    for (int t = 0; t < 16; ++t) {
      const int e = 16 * j + t, h = e / 128, g = (e % 128) / 32, l = e % 32;
      dot += ((b.qs[32 * h + l] >> (2 * g)) & 3) * qx[e];
      sx += qx[e];
    }
    is += (b.scales[j] & 0x0f) * dot;
    ms += (b.scales[j] >> 4) * sx;
  }
  *isum = is;
  *msum = ms;
}

// q3_k: isum = sum_j s_j * <q_j, qx_j>, s_j = Q3KScale(j) in [-32, 31], q in [-4, 3].
void SuperDot(const BlockQ3_K& b, const int8_t* qx, int32_t* isum, int32_t* /*no mins*/) {
  int32_t is = 0;
  for (int j = 0; j < 16; ++j) {
    int32_t dot = 0;
    for (int t = 0; t < 16; ++t) {
      const int e = 16 * j + t, h = e / 128, g = (e % 128) / 32, l = e % 32;
      const int low = (b.qs[32 * h + l] >> (2 * g)) & 3;
      dot += (low - (((b.hmask[l] >> (4 * h + g)) & 1) ? 0 : 4)) * qx[e];
    }
    is += Q3KScale(b.scales, j) * dot;
  }
  *isum = is;
}

// iq4_xs: isum = sum_j (ls_j - 32) * <kIQ4NLValues[q_j], qx_j> over sub-blocks of 32.
void SuperDot(const BlockIQ4_XS& b, const int8_t* qx, int32_t* isum, int32_t* /*no mins*/) {
  int32_t is = 0;
  for (int j = 0; j < 8; ++j) {
    int32_t dot = 0;
    for (int l = 0; l < 16; ++l) {
      dot += kIQ4NLValues[b.qs[16 * j + l] & 0x0f] * qx[32 * j + l];
      dot += kIQ4NLValues[b.qs[16 * j + l] >> 4] * qx[32 * j + 16 + l];
    }
    is += IQ4XSScale(b, j) * dot;
  }
  *isum = is;
}

// isum = sum_e scales[e/16] * (q_e - 32) * qx_e.
void SuperDot(const BlockQ6_K& b, const int8_t* qx, int32_t* isum, int32_t* /*no mins*/) {
  int32_t is = 0;
  for (int e = 0; e < kQKK; ++e) {
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    const uint8_t lbyte = b.ql[64 * h + l + 32 * (g & 1)];
    const int low = g < 2 ? (lbyte & 0x0f) : (lbyte >> 4);
    const int q = (low | (((b.qh[32 * h + l] >> (2 * g)) & 3) << 4)) - 32;
    is += b.scales[e / 16] * q * qx[e];
  }
  *isum = is;
}

// DotRows' sums: SuperDot (the 16-element activation sums are not needed here).
struct Sums {
  template <typename Block>
  static void Of(const Block& b, const int8_t* qx, const int16_t*, int32_t* isum, int32_t* msum) {
    SuperDot(b, qx, isum, msum);
  }
};

constexpr auto kKernels = RowWalkKernels<DotRows<Sums>, BlockQ2_K, BlockQ3_K, BlockQ4_K, BlockQ5_K,
                                         BlockQ6_K, BlockIQ4_XS>(
    {"ref.qk", Isa::kScalar, kEveryClass, Packed::kNo, ActLayout::kQ8K});

}  // namespace

std::span<const MatMulKernel> MatMulQKKernels() { return kKernels; }

}  // namespace stet::kernels::ref

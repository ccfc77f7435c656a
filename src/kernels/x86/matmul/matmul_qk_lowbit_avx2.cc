// AVX2 MatMul for q2_k/q3_k/iq4_xs weights on 256-superblock int8 activations (the
// K-quants matmul_qk_avx2.cc does not hold). Each weight superblock is unpacked once
// into bytes and int16 scales and reused for RM activation rows; its exact int32 sums
// (maddubs/madd, offsets via the activation's 16-element bsums) are reduced to scalars
// and placed in lane b%8 with scalar fma, as ref/matmul_qk.cc does. Numerics: bit-equal
// to the reference; depends on w.cols only (matmul_test.cc).
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/matmul/qk_rows_avx2.h"
#include "numerics/half.h"

namespace stet::kernels::avx2 {

namespace {

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Sub-block scales of 16 elements as int16 in maddubs' layout: for the 32 bytes of
// group G (elements 32G..32G+31), [s[2G] x8 | s[2G+1] x8].
inline void PairScales16(__m128i s8, bool is_signed, __m256i out[8]) {
  STET_UNROLL
  for (int g = 0; g < 8; ++g) {
    const char a = static_cast<char>(2 * g), b = static_cast<char>(2 * g + 1);
    const __m128i pick =
        _mm_shuffle_epi8(s8, _mm_setr_epi8(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b));
    out[g] = is_signed ? _mm256_cvtepi8_epi16(pick) : _mm256_cvtepu8_epi16(pick);
  }
}

// q2_k and q3_k share the 2-bit layout: group G = 4h + g (elements 128h + 32g + l) is
// bits 2g..2g+1 of qs[32h + l].
inline void LowBits2(const uint8_t* qs, __m256i q[8]) {
  const __m256i three = _mm256_set1_epi8(3);
  STET_UNROLL
  for (int h = 0; h < 2; ++h) {
    const __m256i raw = Load256(qs + 32 * h);
    STET_UNROLL
    for (int g = 0; g < 4; ++g)
      q[4 * h + g] = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * g), three);
  }
}

// isum = sum_G <q_G, x_G> weighted by the per-16 scales (int16 pairs), exact.
inline __m256i ScaledDots(const __m256i q[8], const __m256i scale16[8], const int8_t* qx) {
  __m256i acc = _mm256_setzero_si256();
  STET_UNROLL
  for (int g = 0; g < 8; ++g) {
    const __m256i p = _mm256_maddubs_epi16(q[g], Load256(qx + 32 * g));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, scale16[g]));
  }
  return acc;
}

// q2_k: q in [0, 3]; 4-bit scales (low nibble) and mins (high nibble) per 16.
struct UnpackedQ2K {
  __m256i q[8];
  __m256i scale16[8];
  __m256i mins16;  // the 16 mins as int16: pairs with the 16 bsums
  float d, dmin;
};

inline void Unpack(const BlockQ2_K& b, UnpackedQ2K* u) {
  LowBits2(b.qs, u->q);
  const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
  const __m128i low4 = _mm_set1_epi8(0x0f);
  PairScales16(_mm_and_si128(sc, low4), false, u->scale16);
  u->mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), low4));
  u->d = F16ToF32(b.d);
  u->dmin = F16ToF32(b.dmin);
}

// lane += (d*dx) * isum, then -(dmin*dx) * msum: the reference's two fmas.
inline void Accumulate(const UnpackedQ2K& u, const int8_t* qx, const int16_t* bsums, float dx,
                       float* lane) {
  const int32_t isum = HsumEpi32(ScaledDots(u.q, u.scale16, qx));
  const int32_t msum = HsumEpi32(_mm256_madd_epi16(Load256(bsums), u.mins16));
  *lane = std::fma(u.d * dx, static_cast<float>(isum), *lane);
  *lane = std::fma(-(u.dmin * dx), static_cast<float>(msum), *lane);
}

// q3_k: q' = low 2 bits | hmask bit << 2 in [0, 7] (q = q' - 4, applied through the
// bsums); signed 6-bit scales per 16.
struct UnpackedQ3K {
  __m256i q[8];
  __m256i scale16[8];
  __m256i all_scales16;  // the 16 scales as int16: pairs with the 16 bsums
  float d;
};

inline void Unpack(const BlockQ3_K& b, UnpackedQ3K* u) {
  LowBits2(b.qs, u->q);
  // Group G's third bit is bit G of hmask[l]; 16-bit shifts are safe because the mask
  // keeps bit 0 of each byte before it moves to bit 2.
  const __m256i hm = Load256(b.hmask);
  const __m256i one = _mm256_set1_epi8(1);
  STET_UNROLL
  for (int g = 0; g < 8; ++g) {
    const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, g), one);
    u->q[g] = _mm256_or_si256(u->q[g], _mm256_slli_epi16(hb, 2));
  }
  // The 16 signed 6-bit scales (dequant.cc's Q3KScale), all at once: low nibbles of
  // bytes 0..7 then their high nibbles; the top two bits of scale 4q + i are bits
  // 2q..2q+1 of byte 8 + i.
  uint8_t raw[16] = {};
  std::memcpy(raw, b.scales, 12);
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(raw));
  const __m128i low4 = _mm_set1_epi8(0x0f);
  const __m128i low =
      _mm_unpacklo_epi64(_mm_and_si128(bytes, low4), _mm_and_si128(_mm_srli_epi16(bytes, 4), low4));
  const __m128i top =
      _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(Load32(raw + 8)), _mm_setr_epi32(0, 2, 4, 6)),
                    _mm_set1_epi8(3));
  const __m128i s8 = _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(top, 4)), _mm_set1_epi8(32));
  PairScales16(s8, true, u->scale16);
  u->all_scales16 = _mm256_cvtepi8_epi16(s8);
  u->d = F16ToF32(b.d);
}

// isum = sum_j s_j <q'_j, x_j> - 4 sum_j s_j bsum_j.
inline void Accumulate(const UnpackedQ3K& u, const int8_t* qx, const int16_t* bsums, float dx,
                       float* lane) {
  const __m256i off = _mm256_madd_epi16(Load256(bsums), u.all_scales16);
  const __m256i acc = ScaledDots(u.q, u.scale16, qx);
  const int32_t isum = HsumEpi32(_mm256_sub_epi32(acc, _mm256_slli_epi32(off, 2)));
  *lane = std::fma(u.d * dx, static_cast<float>(isum), *lane);
}

// iq4_xs: sub-block j's 32 weights kIQ4NLValues[nibble] as |w| and w (q8_0's sign
// trick: maddubs(|w|, x * sign w), |w| <= 127), its signed scale broadcast to int16.
struct UnpackedIQ4XS {
  __m256i abs[8], sign[8];
  __m256i scale16[8];
  float d;
};

inline void Unpack(const BlockIQ4_XS& b, UnpackedIQ4XS* u) {
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  STET_UNROLL
  for (int j = 0; j < 8; ++j) {
    // Bytes 16j..16j+15: low nibbles are elements 32j..32j+15, high ones the next 16.
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * j));
    const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), low4);
    const __m256i w = _mm256_shuffle_epi8(table, nib);
    u->abs[j] = _mm256_sign_epi8(w, w);
    u->sign[j] = w;
    const int ls =
        ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((b.scales_h >> (2 * j)) & 3) << 4);
    u->scale16[j] = _mm256_set1_epi16(static_cast<int16_t>(ls - 32));
  }
  u->d = F16ToF32(b.d);
}

inline void Accumulate(const UnpackedIQ4XS& u, const int8_t* qx, const int16_t* /*bsums*/, float dx,
                       float* lane) {
  __m256i acc = _mm256_setzero_si256();
  STET_UNROLL
  for (int j = 0; j < 8; ++j) {
    const __m256i x = _mm256_sign_epi8(Load256(qx + 32 * j), u.sign[j]);
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u.abs[j], x), u.scale16[j]));
  }
  *lane = std::fma(u.d * dx, static_cast<float>(HsumEpi32(acc)), *lane);
}

constexpr auto kKernels =
    KernelRows({"avx2.qk", Isa::kAvx2, kEveryClass, Packed::kNo, ActLayout::kQ8K},
               {{DType::kQ2_K, UnpackedRows<BlockQ2_K, UnpackedQ2K, Unpack, Accumulate>},
                {DType::kQ3_K, UnpackedRows<BlockQ3_K, UnpackedQ3K, Unpack, Accumulate>},
                {DType::kIQ4_XS, UnpackedRows<BlockIQ4_XS, UnpackedIQ4XS, Unpack, Accumulate>}});

}  // namespace

std::span<const MatMulKernel> MatMulQKLowBitKernels() { return kKernels; }

}  // namespace stet::kernels::avx2

// AVX2 MatMul for q4_k/q5_k/q6_k weights on 256-superblock int8 activations.
// Each weight superblock is unpacked once and reused for RM activation rows;
// its exact int32 sums (maddubs/madd, scales applied in integer) are reduced to
// scalars and placed in lane b%8 with scalar fma, exactly as ref/matmul_qk.cc
// does. Numerics: bit-equal to the reference; depends on w.cols only (matmul_test.cc).
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/matmul/qk_rows_avx2.h"
#include "numerics/half.h"

namespace stet::kernels::avx2 {

namespace {

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// The 6-bit scales and mins of a q4_k/q5_k superblock (ggml's get_scale_min_k4
// packing), four at a time: bytes 0..3 low scales, 4..7 low mins, 8..11 the low
// nibbles of scales/mins 4..7, whose top two bits sit in bits 6..7 of bytes 0..7.
inline void UnpackScalesK4(const uint8_t* packed, uint8_t sc[8], uint8_t mn[8]) {
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const uint32_t s_lo = u[0] & 0x3f3f3f3fu;
  const uint32_t m_lo = u[1] & 0x3f3f3f3fu;
  const uint32_t s_hi = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
  const uint32_t m_hi = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
  std::memcpy(sc, &s_lo, 4);
  std::memcpy(sc + 4, &s_hi, 4);
  std::memcpy(mn, &m_lo, 4);
  std::memcpy(mn + 4, &m_hi, 4);
}

// A q4_k/q5_k superblock unpacked: q[j] holds sub-block j's 32 quants as bytes.
struct UnpackedK4 {
  __m256i q[8];
  __m256i scale16[8];  // sub-block j's scale broadcast to 16 int16
  __m256i mins16;      // [m0 m0 m1 m1 ... m7 m7]: pairs with the 16-element bsums
  float d, dmin;
};

inline void UnpackCommonK4(const uint8_t* scales, UnpackedK4* u) {
  uint8_t sc[8], mn[8];
  UnpackScalesK4(scales, sc, mn);
  STET_UNROLL
  for (int j = 0; j < 8; ++j) u->scale16[j] = _mm256_set1_epi16(sc[j]);
  uint64_t m64;
  std::memcpy(&m64, mn, 8);
  const __m128i m8 = _mm_cvtsi64_si128(static_cast<long long>(m64));
  u->mins16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
}

inline void Unpack(const BlockQ4_K& b, UnpackedK4* u) {
  UnpackCommonK4(b.scales, u);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  STET_UNROLL
  for (int c = 0; c < 4; ++c) {
    const __m256i raw = Load256(b.qs + 32 * c);
    u->q[2 * c] = _mm256_and_si256(raw, low4);
    u->q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
  }
  u->d = F16ToF32(b.d);
  u->dmin = F16ToF32(b.dmin);
}

inline void Unpack(const BlockQ5_K& b, UnpackedK4* u) {
  UnpackCommonK4(b.scales, u);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i one = _mm256_set1_epi8(1);
  const __m256i hbits = Load256(b.qh);
  // Sub-block j's fifth bit is bit j of qh[l]; 16-bit shifts are safe because
  // the mask keeps only bit 0 of each byte before moving it to bit 4.
  __m256i h = hbits;
  STET_UNROLL
  for (int c = 0; c < 4; ++c) {
    const __m256i raw = Load256(b.qs + 32 * c);
    const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(h, one), 4);
    const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 1), one), 4);
    u->q[2 * c] = _mm256_or_si256(_mm256_and_si256(raw, low4), h0);
    u->q[2 * c + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low4), h1);
    h = _mm256_srli_epi16(h, 2);
  }
  u->d = F16ToF32(b.d);
  u->dmin = F16ToF32(b.dmin);
}

// isum = sum_j sc_j * <q_j, x_j>, msum = sum_j m_j * sum(x_j), both exact.
inline void SuperDot(const UnpackedK4& u, const int8_t* qx, const int16_t* bsums, int32_t* isum,
                     int32_t* msum) {
  __m256i acc = _mm256_setzero_si256();
  STET_UNROLL
  for (int j = 0; j < 8; ++j) {
    const __m256i p = _mm256_maddubs_epi16(u.q[j], Load256(qx + 32 * j));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, u.scale16[j]));
  }
  *isum = HsumEpi32(acc);
  *msum = HsumEpi32(_mm256_madd_epi16(Load256(bsums), u.mins16));
}

// A q6_k superblock unpacked: q[G] holds elements 32G..32G+31 as bytes 0..63
// (the -32 offset is applied through the bsums).
struct UnpackedK6 {
  __m256i q[8];
  __m256i scale16[8];    // [sc[2G] x8 | sc[2G+1] x8]: matches maddubs' int16 layout
  __m256i all_scales16;  // sc[0..15] as int16: pairs with the 16-element bsums
  float d;
};

inline void Unpack(const BlockQ6_K& b, UnpackedK6* u) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i two = _mm256_set1_epi8(3);
  STET_UNROLL
  for (int h = 0; h < 2; ++h) {
    const __m256i a = Load256(b.ql + 64 * h);
    const __m256i bq = Load256(b.ql + 64 * h + 32);
    const __m256i hb = Load256(b.qh + 32 * h);
    const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(hb, two), 4);
    const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), two), 4);
    const __m256i h2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), two), 4);
    const __m256i h3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), two), 4);
    u->q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(a, low4), h0);
    u->q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(bq, low4), h1);
    u->q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low4), h2);
    u->q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bq, 4), low4), h3);
  }
  const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
  u->all_scales16 = _mm256_cvtepi8_epi16(sc8);
  STET_UNROLL
  for (int g = 0; g < 8; ++g) {
    const __m128i pattern = _mm_setr_epi8(
        static_cast<char>(2 * g), static_cast<char>(2 * g), static_cast<char>(2 * g),
        static_cast<char>(2 * g), static_cast<char>(2 * g), static_cast<char>(2 * g),
        static_cast<char>(2 * g), static_cast<char>(2 * g), static_cast<char>(2 * g + 1),
        static_cast<char>(2 * g + 1), static_cast<char>(2 * g + 1), static_cast<char>(2 * g + 1),
        static_cast<char>(2 * g + 1), static_cast<char>(2 * g + 1), static_cast<char>(2 * g + 1),
        static_cast<char>(2 * g + 1));
    u->scale16[g] = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pattern));
  }
  u->d = F16ToF32(b.d);
}

// isum = sum_j sc_j * <q_j - 32, x_j> = sum_j sc_j <q_j, x_j> - 32 sum_j sc_j bsum_j.
inline int32_t SuperDot(const UnpackedK6& u, const int8_t* qx, const int16_t* bsums) {
  __m256i acc = _mm256_setzero_si256();
  STET_UNROLL
  for (int g = 0; g < 8; ++g) {
    const __m256i p = _mm256_maddubs_epi16(u.q[g], Load256(qx + 32 * g));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, u.scale16[g]));
  }
  const __m256i off = _mm256_madd_epi16(Load256(bsums), u.all_scales16);
  return HsumEpi32(_mm256_sub_epi32(acc, _mm256_slli_epi32(off, 5)));
}

// lane += (d*dx) * isum, then -(dmin*dx) * msum: the reference's two fmas.
inline void Accumulate(const UnpackedK4& u, const int8_t* qx, const int16_t* bsums, float dx,
                       float* lane) {
  int32_t isum, msum;
  SuperDot(u, qx, bsums, &isum, &msum);
  *lane = std::fma(u.d * dx, static_cast<float>(isum), *lane);
  *lane = std::fma(-(u.dmin * dx), static_cast<float>(msum), *lane);
}
inline void Accumulate(const UnpackedK6& u, const int8_t* qx, const int16_t* bsums, float dx,
                       float* lane) {
  *lane = std::fma(u.d * dx, static_cast<float>(SuperDot(u, qx, bsums)), *lane);
}

constexpr auto kKernels =
    KernelRows({"avx2.qk", Isa::kAvx2, kEveryClass, Packed::kNo, ActLayout::kQ8K},
               {{DType::kQ4_K, UnpackedRows<BlockQ4_K, UnpackedK4, Unpack, Accumulate>},
                {DType::kQ5_K, UnpackedRows<BlockQ5_K, UnpackedK4, Unpack, Accumulate>},
                {DType::kQ6_K, UnpackedRows<BlockQ6_K, UnpackedK6, Unpack, Accumulate>}});

}  // namespace

std::span<const MatMulKernel> MatMulQKKernels() { return kKernels; }

}  // namespace stet::kernels::avx2

// AVX2 MatMul for q8_0/q4_0/q4_1/q4_k weights in the packed 16-row layout
// (kernels/pack.cc), for decode (one activation row). The group is walked as
// two 8-row halves: a 32-byte load brings 4 quants of 8 rows, and one maddubs
// with a broadcast 4-byte activation word does 32 exact multiply-adds, so a
// block's int32 dots for 8 rows land in one vector — no horizontal sums and
// no per-row scale gathers (the 8 rows' scales are adjacent f16s).
//  * q4_0/q4_1: nibbles (0..15) are maddubs' unsigned operand; the 8 int16
//    partials of a block are added in int16 (|sum| <= 8 * 2 * 15 * 127 = 30480,
//    exact), then widened by madd; q4_0 subtracts 8 * sum qx (exact).
//  * q8_0 (stored q + 128): un-biased, then |w| * (x * sign w) as the unbatched
//    kernel does (pairs <= 2 * 128 * 127, exact), widened per word.
// Numerics: per output, block b's exact isum goes to logical lane b % 8 as
// lane = fma(dw * dx, float(isum), lane) (q4_1 then lane = fma(mw, s, lane)), in
// increasing b, then the fixed lane tree: equal to ref/matmul_q8.cc bit for bit.
// q4_k the same per superblock, as ref/matmul_qk.cc (see OneSuper). Both pinned
// by matmul_test.cc: Avx2PackedEqualsScalar.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "kernels/cpu/avx2_util.h"
#include "kernels/internal.h"

namespace stet::kernels::avx2 {

namespace {

inline int32_t Load32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Block b (at p) of one 8-row half (byte offset `half` = 0 or 32 in each
// 64-byte word) into the lane accumulator acc.
template <typename Block>
inline void OneBlock(const uint8_t* p, int half, const ActQ8& act, int64_t blk, __m256& acc) {
  constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
  const int8_t* xq = act.qs + blk * kQK;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i is;
  if constexpr (kQ8) {
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
    is = _mm256_setzero_si256();
    STET_UNROLL
    for (int j = 0; j < 8; ++j) {
      const __m256i w = _mm256_xor_si256(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * j + half)), bias);
      const __m256i x = _mm256_set1_epi32(Load32(xq + 4 * j));
      const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
      is = _mm256_add_epi32(is, _mm256_madd_epi16(p16, ones));
    }
  } else {
    const __m256i mask = _mm256_set1_epi8(0x0f);
    __m256i s16 = _mm256_setzero_si256();
    STET_UNROLL
    for (int j = 0; j < 4; ++j) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * j + half));
      // Low nibbles: elements 4j..4j+3; high nibbles: 16+4j..16+4j+3.
      s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(_mm256_and_si256(raw, mask),
                                                       _mm256_set1_epi32(Load32(xq + 4 * j))));
      s16 = _mm256_add_epi16(
          s16, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), mask),
                                    _mm256_set1_epi32(Load32(xq + 16 + 4 * j))));
    }
    is = _mm256_madd_epi16(s16, ones);
    if constexpr (std::is_same_v<Block, BlockQ4_0>) {
      is = _mm256_sub_epi32(is, _mm256_set1_epi32(8 * act.qsum[blk]));
    }
  }
  constexpr int kQBytes = kQ8 ? 512 : 256;
  const __m256 dw = _mm256_cvtph_ps(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kQBytes + half / 2)));
  const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(act.d[blk]));
  acc = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(is), acc);
  if constexpr (std::is_same_v<Block, BlockQ4_1>) {
    const __m256 mw = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kQBytes + 32 + half / 2)));
    acc = _mm256_fmadd_ps(mw, _mm256_set1_ps(act.s[blk]), acc);
  }
}

// internal.h's CombineLanes, lane-wise over 8 outputs: l[i] holds logical lane i.
inline __m256 CombineLanes8x8(const __m256* l) {
  const __m256 s0 = _mm256_add_ps(l[0], l[4]), s1 = _mm256_add_ps(l[1], l[5]);
  const __m256 s2 = _mm256_add_ps(l[2], l[6]), s3 = _mm256_add_ps(l[3], l[7]);
  return _mm256_add_ps(_mm256_add_ps(s0, s2), _mm256_add_ps(s1, s3));
}

// The 8 outputs of a half group, or the first n of them at the matrix's end.
inline void StoreHalf(__m256 r, float* y, int64_t n) {
  if (n >= 8) {
    _mm256_storeu_ps(y, r);
  } else {
    _mm256_maskstore_ps(y, TailMask(n), r);
  }
}

template <typename Block>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const WeightView& w = *a.w;
  const ActQ8& act = *a.a8;
  const int64_t nb = act.nb, stride = PackedBlockBytes(w.type);
  const auto* packed = static_cast<const uint8_t*>(w.packed);
  STET_CHECK(r0 % 16 == 0);
  for (int64_t i = 0; i < a.m; ++i) {
    const int64_t blk0 = i * act.nb_pad;
    for (int64_t row0 = r0; row0 < r1; row0 += 8) {
      const int64_t g = row0 / 16;
      const int half = static_cast<int>(row0 % 16) * 4;  // 0 or 32 bytes into each word
      const uint8_t* p = packed + g * nb * stride;
      __m256 acc[kLanes];
      STET_UNROLL
      for (int l = 0; l < kLanes; ++l) acc[l] = _mm256_setzero_ps();
      int64_t b = 0;
      for (; b + kLanes <= nb; b += kLanes) {
        STET_UNROLL
        for (int l = 0; l < kLanes; ++l) {
          OneBlock<Block>(p + (b + l) * stride, half, act, blk0 + b + l, acc[l]);
        }
      }
      for (int l = 0; b < nb; ++b, ++l) OneBlock<Block>(p + b * stride, half, act, blk0 + b, acc[l]);
      StoreHalf(CombineLanes8x8(acc), a.y + i * w.rows + row0, r1 - row0);
    }
  }
}

// -(a * b), as C++'s unary minus of the rounded product (sign flip, nan too).
inline __m256 NegMul(__m256 a, __m256 b) {
  return _mm256_xor_ps(_mm256_mul_ps(a, b), _mm256_castsi256_ps(_mm256_set1_epi32(
                                                static_cast<int32_t>(0x80000000u))));
}

// q4_k superblock b (at p, pack.cc's layout) of one 8-row half into acc:
// isum = sum_j sc_j * dot_j (each dot_j's 8 maddubs partials added in int16,
// |sum| <= 30480, exact) and msum = sum_j min_j * sum qx_j (madd on (min_2q,
// min_2q+1) pairs), both exact; then the two fmas of ref/matmul_qk.cc.
inline void OneSuper(const uint8_t* p, int half, const ActQ8K& act, int64_t i, int64_t b,
                     __m256& acc) {
  const int8_t* xq = act.qs + i * act.k + b * kQKK;
  const int16_t* bs = act.bsums + (i * act.nsb + b) * 16;
  const __m256i mask = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const int rows8 = half / 4;  // 0 or 8: this half's first row within the group
  __m256i isum = _mm256_setzero_si256();
  STET_UNROLL
  for (int jp = 0; jp < 4; ++jp) {  // sub-blocks 2jp (low nibbles) and 2jp + 1 (high)
    __m256i lo16 = _mm256_setzero_si256(), hi16 = _mm256_setzero_si256();
    STET_UNROLL
    for (int s = 0; s < 8; ++s) {
      const __m256i raw =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + (8 * jp + s) * 64 + half));
      lo16 = _mm256_add_epi16(lo16, _mm256_maddubs_epi16(_mm256_and_si256(raw, mask),
                                                         _mm256_set1_epi32(Load32(xq + 64 * jp + 4 * s))));
      hi16 = _mm256_add_epi16(
          hi16, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), mask),
                                     _mm256_set1_epi32(Load32(xq + 64 * jp + 32 + 4 * s))));
    }
    const __m256i sc_lo = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 2048 + 32 * jp + rows8)));
    const __m256i sc_hi = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 2048 + 32 * jp + 16 + rows8)));
    isum = _mm256_add_epi32(
        isum, _mm256_add_epi32(_mm256_mullo_epi32(_mm256_madd_epi16(lo16, ones), sc_lo),
                               _mm256_mullo_epi32(_mm256_madd_epi16(hi16, ones), sc_hi)));
  }
  __m256i msum = _mm256_setzero_si256();
  STET_UNROLL
  for (int q = 0; q < 4; ++q) {
    const int32_t s_even = bs[4 * q] + bs[4 * q + 1], s_odd = bs[4 * q + 2] + bs[4 * q + 3];
    const int32_t pair = static_cast<int32_t>((static_cast<uint32_t>(s_even) & 0xffffu) |
                                              (static_cast<uint32_t>(s_odd) << 16));
    const __m256i mins = _mm256_cvtepu8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2048 + 128 + 32 * q + 2 * rows8)));
    msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mins, _mm256_set1_epi32(pair)));
  }
  const uint8_t* dp = p + 2048 + 128 + 128;
  const __m256 dx = _mm256_set1_ps(act.d[i * act.nsb + b]);
  const __m256 d =
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dp + 2 * rows8)));
  const __m256 dmin =
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dp + 32 + 2 * rows8)));
  acc = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(isum), acc);
  acc = _mm256_fmadd_ps(NegMul(dmin, dx), _mm256_cvtepi32_ps(msum), acc);
}

}  // namespace

void MatMulPackedQKRows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  STET_CHECK_MSG(a.w->type == DType::kQ4_K, "avx2::MatMulPackedQKRows: q4_k only");
  const WeightView& w = *a.w;
  const ActQ8K& act = *a.a8k;
  const int64_t nsb = act.nsb, stride = PackedBlockBytes(w.type);
  const auto* packed = static_cast<const uint8_t*>(w.packed);
  STET_CHECK(r0 % 16 == 0);
  for (int64_t i = 0; i < a.m; ++i) {
    for (int64_t row0 = r0; row0 < r1; row0 += 8) {
      const uint8_t* p = packed + (row0 / 16) * nsb * stride;
      const int half = static_cast<int>(row0 % 16) * 4;
      __m256 acc[kLanes];
      STET_UNROLL
      for (int l = 0; l < kLanes; ++l) acc[l] = _mm256_setzero_ps();
      for (int64_t b = 0; b < nsb; ++b) OneSuper(p + b * stride, half, act, i, b, acc[b % kLanes]);
      StoreHalf(CombineLanes8x8(acc), a.y + i * w.rows + row0, r1 - row0);
    }
  }
}

void MatMulPackedRows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  switch (a.w->type) {
    case DType::kQ8_0:
      Rows<BlockQ8_0>(a, r0, r1);
      break;
    case DType::kQ4_0:
      Rows<BlockQ4_0>(a, r0, r1);
      break;
    case DType::kQ4_1:
      Rows<BlockQ4_1>(a, r0, r1);
      break;
    default:
      STET_CHECK_MSG(false, "avx2::MatMulPackedRows: no AVX2 packed kernel for this type");
  }
}

}  // namespace stet::kernels::avx2

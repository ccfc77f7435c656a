// AVX-512 VNNI MatMul for q8_0/q4_0/q4_1 (and q4_k) weights in the packed layout
// (kernels/pack.cc), for small batches (decode). One 16-lane vector holds 16
// weight rows: a 64-byte load brings 4 quants of each, and one vpdpbusd with a
// broadcast 4-byte activation word does 64 exact multiply-adds, so a block's
// int32 dots for 16 rows land in one vector with no horizontal sums. q8_0 is
// stored as q + 128 (unsigned, as vpdpbusd wants) and 128 * sum qx of the
// activation block is subtracted; q4_0 subtracts 8 * sum qx; both exact.
//
// Numerics: per output, block b's exact isum goes to logical lane b % 8 as
// lane = fma(dw * dx, float(isum), lane) (q4_1 then lane = fma(mw, s, lane)),
// in increasing b, then the fixed lane tree: equal to ref/matmul_q8.cc. q4_k:
// per superblock isum = sum_j sc_j * dot_j (vpmulld) and msum = sum_j min_j *
// sum qx_j (vpdpwssd), exact; lane = fma(d*dx, float(isum), lane); lane =
// fma(-(dmin*dx), float(msum), lane): equal to ref/matmul_qk.cc.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "kernels/cpu/avx2_util.h"
#include "kernels/cpu/avx512_util.h"
#include "kernels/internal.h"

namespace stet::kernels::avx512 {

namespace {

// Block b of a 16-row group into lane accumulator acc.
template <typename Block>
inline void OneBlock(const uint8_t* p, const ActQ8& act, int64_t i, int64_t b, __m512& acc) {
  constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
  const int64_t blk = i * act.nb_pad + b;
  const int8_t* xq = act.qs + blk * kQK;
  __m512i is = _mm512_setzero_si512();
  if constexpr (kQ8) {
    STET_UNROLL
    for (int j = 0; j < 8; ++j) {
      is = _mm512_dpbusd_epi32(is, _mm512_loadu_si512(p + 64 * j),
                               _mm512_set1_epi32(Load32(xq + 4 * j)));
    }
    is = _mm512_sub_epi32(is, _mm512_set1_epi32(128 * act.qsum[blk]));
  } else {
    const __m512i mask = _mm512_set1_epi8(0x0f);
    STET_UNROLL
    for (int j = 0; j < 4; ++j) {
      const __m512i raw = _mm512_loadu_si512(p + 64 * j);
      // Low nibbles: elements 4j..4j+3; high nibbles: 16+4j..16+4j+3.
      is = _mm512_dpbusd_epi32(is, _mm512_and_si512(raw, mask),
                               _mm512_set1_epi32(Load32(xq + 4 * j)));
      is = _mm512_dpbusd_epi32(is, _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask),
                               _mm512_set1_epi32(Load32(xq + 16 + 4 * j)));
    }
    if constexpr (std::is_same_v<Block, BlockQ4_0>) {
      is = _mm512_sub_epi32(is, _mm512_set1_epi32(8 * act.qsum[blk]));
    }
  }
  constexpr int kQBytes = kQ8 ? 512 : 256;
  const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kQBytes)));
  const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(act.d[blk]));
  acc = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(is), acc);
  if constexpr (std::is_same_v<Block, BlockQ4_1>) {
    const __m512 mw =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kQBytes + 32)));
    acc = _mm512_fmadd_ps(mw, _mm512_set1_ps(act.s[blk]), acc);
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
    for (int64_t g = r0 / 16; g * 16 < r1; ++g) {
      const uint8_t* p = packed + g * nb * stride;
      __m512 acc[kLanes];
      STET_UNROLL
      for (int l = 0; l < kLanes; ++l) acc[l] = _mm512_setzero_ps();
      int64_t b = 0;
      for (; b + kLanes <= nb; b += kLanes) {
        STET_UNROLL
        for (int l = 0; l < kLanes; ++l) OneBlock<Block>(p + (b + l) * stride, act, i, b + l, acc[l]);
      }
      for (int l = 0; b < nb; ++b, ++l) OneBlock<Block>(p + b * stride, act, i, b, acc[l]);
      const __m512 r = CombineLanes16(acc);  // the fixed lane tree, 16 outputs at a time
      const int64_t row0 = 16 * g, n = (r1 - row0) < 16 ? r1 - row0 : 16;
      _mm512_mask_storeu_ps(a.y + i * w.rows + row0, static_cast<__mmask16>((1u << n) - 1), r);
    }
  }
}

// q4_k superblock b of a 16-row group (pack.cc's layout) into acc.
inline void OneSuper(const uint8_t* p, const ActQ8K& act, int64_t i, int64_t b, __m512& acc) {
  const int8_t* xq = act.qs + i * act.k + b * kQKK;
  const int16_t* bs = act.bsums + (i * act.nsb + b) * 16;
  const __m512i mask = _mm512_set1_epi8(0x0f);
  __m512i isum = _mm512_setzero_si512();
  STET_UNROLL
  for (int jp = 0; jp < 4; ++jp) {  // sub-blocks 2jp (low nibbles) and 2jp + 1 (high)
    __m512i dlo = _mm512_setzero_si512(), dhi = _mm512_setzero_si512();
    STET_UNROLL
    for (int s = 0; s < 8; ++s) {
      const __m512i raw = _mm512_loadu_si512(p + (8 * jp + s) * 64);
      dlo = _mm512_dpbusd_epi32(dlo, _mm512_and_si512(raw, mask),
                                _mm512_set1_epi32(Load32(xq + 64 * jp + 4 * s)));
      dhi = _mm512_dpbusd_epi32(dhi, _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask),
                                _mm512_set1_epi32(Load32(xq + 64 * jp + 32 + 4 * s)));
    }
    const __m512i sc_lo =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2048 + 32 * jp)));
    const __m512i sc_hi = _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2048 + 32 * jp + 16)));
    isum = _mm512_add_epi32(isum, _mm512_add_epi32(_mm512_mullo_epi32(dlo, sc_lo),
                                                   _mm512_mullo_epi32(dhi, sc_hi)));
  }
  // msum = sum_j min_j * (sum of the activation's q over sub-block j), as int16 pairs.
  __m512i msum = _mm512_setzero_si512();
  STET_UNROLL
  for (int q = 0; q < 4; ++q) {
    const int32_t s_even = bs[4 * q] + bs[4 * q + 1], s_odd = bs[4 * q + 2] + bs[4 * q + 3];
    const int32_t pair = static_cast<int32_t>((static_cast<uint32_t>(s_even) & 0xffffu) |
                                              (static_cast<uint32_t>(s_odd) << 16));
    const __m512i mins = _mm512_cvtepu8_epi16(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2048 + 128 + 32 * q)));
    msum = _mm512_dpwssd_epi32(msum, mins, _mm512_set1_epi32(pair));
  }
  const uint8_t* dp = p + 2048 + 128 + 128;
  const __m512 dx = _mm512_set1_ps(act.d[i * act.nsb + b]);
  const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dp)));
  const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dp + 32)));
  acc = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum), acc);
  acc = _mm512_fmadd_ps(NegMul(dmin, dx), _mm512_cvtepi32_ps(msum), acc);
}

}  // namespace

void MatMulPackedQKRows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  STET_CHECK_MSG(a.w->type == DType::kQ4_K, "avx512::MatMulPackedQKRows: q4_k only");
  const WeightView& w = *a.w;
  const ActQ8K& act = *a.a8k;
  const int64_t nsb = act.nsb, stride = PackedBlockBytes(w.type);
  const auto* packed = static_cast<const uint8_t*>(w.packed);
  STET_CHECK(r0 % 16 == 0);
  for (int64_t i = 0; i < a.m; ++i) {
    for (int64_t g = r0 / 16; g * 16 < r1; ++g) {
      const uint8_t* p = packed + g * nsb * stride;
      __m512 acc[kLanes];
      STET_UNROLL
      for (int l = 0; l < kLanes; ++l) acc[l] = _mm512_setzero_ps();
      for (int64_t b = 0; b < nsb; ++b) OneSuper(p + b * stride, act, i, b, acc[b % kLanes]);
      const __m512 r = CombineLanes16(acc);
      const int64_t row0 = 16 * g, n = (r1 - row0) < 16 ? r1 - row0 : 16;
      _mm512_mask_storeu_ps(a.y + i * w.rows + row0, static_cast<__mmask16>((1u << n) - 1), r);
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
      STET_CHECK_MSG(false, "avx512::MatMulPackedRows: no packed layout for this type");
  }
}

}  // namespace stet::kernels::avx512

// AVX-512 VNNI MatMul for q8_0/q4_0/q4_1 (and q4_k, q6_k) weights in the packed layout
// (kernels/pack.cc), for small batches (decode, speculative verification: up
// to 15 rows; each weight load serves up to 8 activation rows (q4_k: 4), the
// group is re-read from cache for the next pass). One 16-lane vector holds 16
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
// sum qx_j (vpdpwssd on ActQ8K::sx2, the sums paired once per call), exact; lane = fma(d*dx,
// float(isum), lane); lane = fma(-(dmin*dx), float(msum), lane): equal to ref/matmul_qk.cc. q6_k:
// the same without the mins, isum = sum_j sc_j * (dot_j - 32 * bsum_j).
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/avx512_util.h"

namespace stet::kernels::avx512 {

namespace {

// Activation rows sharing each weight load (verification steps of speculative
// decoding, a few concurrent decodes); one row keeps the register-unrolled path.
constexpr int kRMax = 8;
constexpr int kRMaxQK = 4;

// Block b of a 16-row group for RM activation rows (block indices blk[r]) into
// the lane accumulators *acc[r]. Each 64-byte weight load (and its nibble
// split) serves all RM rows.
template <typename Block, int RM>
inline void OneBlock(const uint8_t* p, const ActQ8& act, const int64_t* blk, __m512* const* acc) {
  constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
  const int8_t* xq[RM];
  __m512i is[RM];
  STET_UNROLL
  for (int r = 0; r < RM; ++r) {
    xq[r] = act.qs + blk[r] * kQK;
    is[r] = _mm512_setzero_si512();
  }
  if constexpr (kQ8) {
    STET_UNROLL
    for (int j = 0; j < 8; ++j) {
      const __m512i w = _mm512_loadu_si512(p + 64 * j);
      STET_UNROLL
      for (int r = 0; r < RM; ++r) {
        is[r] = _mm512_dpbusd_epi32(is[r], w, _mm512_set1_epi32(Load32(xq[r] + 4 * j)));
      }
    }
    STET_UNROLL
    for (int r = 0; r < RM; ++r) {
      is[r] = _mm512_sub_epi32(is[r], _mm512_set1_epi32(128 * act.qsum[blk[r]]));
    }
  } else {
    const __m512i mask = _mm512_set1_epi8(0x0f);
    STET_UNROLL
    for (int j = 0; j < 4; ++j) {
      const __m512i raw = _mm512_loadu_si512(p + 64 * j);
      // Low nibbles: elements 4j..4j+3; high nibbles: 16+4j..16+4j+3.
      const __m512i lo = _mm512_and_si512(raw, mask);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask);
      STET_UNROLL
      for (int r = 0; r < RM; ++r) {
        is[r] = _mm512_dpbusd_epi32(is[r], lo, _mm512_set1_epi32(Load32(xq[r] + 4 * j)));
        is[r] = _mm512_dpbusd_epi32(is[r], hi, _mm512_set1_epi32(Load32(xq[r] + 16 + 4 * j)));
      }
    }
    if constexpr (std::is_same_v<Block, BlockQ4_0>) {
      STET_UNROLL
      for (int r = 0; r < RM; ++r) {
        is[r] = _mm512_sub_epi32(is[r], _mm512_set1_epi32(8 * act.qsum[blk[r]]));
      }
    }
  }
  constexpr int kQBytes = kQ8 ? 512 : 256;
  const __m512 dw =
      _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kQBytes)));
  STET_UNROLL
  for (int r = 0; r < RM; ++r) {
    const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(act.d[blk[r]]));
    *acc[r] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(is[r]), *acc[r]);
  }
  if constexpr (std::is_same_v<Block, BlockQ4_1>) {
    const __m512 mw =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kQBytes + 32)));
    STET_UNROLL
    for (int r = 0; r < RM; ++r)
      *acc[r] = _mm512_fmadd_ps(mw, _mm512_set1_ps(act.s[blk[r]]), *acc[r]);
  }
}

// Blocks ahead of the one computed that the first pass over a group prefetches:
// decode streams the packed matrix from DRAM, and the hardware prefetcher alone
// leaves a core below its bandwidth. One row: 16 (the AVX2 packed kernels'
// distance). Several rows (the default mode's decode: x and its residual): 32,
// 9-17 KB — on a Zen 4, DRAM-cold at m = 2, 2 threads, 16 -> 32 blocks took q4_1
// 576x1536 from 32 to 21 us and the 576-wide 49152-row output from 870 to 560 us
// (q8_0: 1257 -> 995 us), as fast as avx2.packed, the same elsewhere. The K-quants
// have two rows in the table, which Isa::kAuto measures: a far prefetch into L2 (4
// superblocks, 10-13 KB: DRAM-cold decode 15-40% faster than the near one on a
// Zen 4, whose T1 fills L2 only) and a near one into L1 (1 superblock, 2.4-3.4 KB).
constexpr int64_t kPrefetchBlocks = 16;
constexpr int64_t kPrefetchBlocksRows = 32;
enum class Ahead { kL2Far, kL1Near };

// Superblock p + (4 or 1) * stride, into L2 or L1.
template <Ahead kAhead>
inline void PrefetchSuper(const uint8_t* p, int64_t stride) {
  constexpr bool kIntoL1 = kAhead == Ahead::kL1Near;
  avx2::PrefetchLines<kIntoL1>(p + (kIntoL1 ? 1 : 4) * stride, stride);
}

// The 16 outputs of one group (n of them valid) for activation row i: the
// 8-block loop unrolled so the lane accumulators stay in registers.
template <typename Block>
void GroupOneRow(const uint8_t* p, int64_t stride, const ActQ8& act, int64_t i, float* y,
                 int64_t n) {
  const int64_t nb = act.nb;
  __m512 acc[kLanes];
  STET_UNROLL
  for (int l = 0; l < kLanes; ++l) acc[l] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + kLanes <= nb; b += kLanes) {
    if (i == 0) avx2::PrefetchLines(p + (b + kPrefetchBlocks) * stride, kLanes * stride);
    STET_UNROLL
    for (int l = 0; l < kLanes; ++l) {
      const int64_t blk = i * act.nb_pad + b + l;
      __m512* lane = &acc[l];
      OneBlock<Block, 1>(p + (b + l) * stride, act, &blk, &lane);
    }
  }
  for (int l = 0; b < nb; ++b, ++l) {
    const int64_t blk = i * act.nb_pad + b;
    __m512* lane = &acc[l];
    OneBlock<Block, 1>(p + b * stride, act, &blk, &lane);
  }
  const __m512 r = CombineLanes16(acc);  // the fixed lane tree, 16 outputs at a time
  _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << n) - 1), r);
}

// The same for RM > 1 rows i0.. (outputs y + r * ldy): lane b % 8 indexed at
// run time, so the RM x 8 accumulators live in L1 rather than spill.
template <typename Block, int RM>
void GroupRows(const uint8_t* p, int64_t stride, const ActQ8& act, int64_t i0, float* y,
               int64_t ldy, int64_t n) {
  __m512 acc[RM][kLanes];
  FillTile(acc, _mm512_setzero_ps());
  int64_t blk[RM];
  __m512* lane[RM];
  for (int64_t b = 0; b < act.nb; ++b) {
    if (i0 == 0) avx2::PrefetchLines(p + (b + kPrefetchBlocksRows) * stride, stride);
    STET_UNROLL
    for (int r = 0; r < RM; ++r) {
      blk[r] = (i0 + r) * act.nb_pad + b;
      lane[r] = &acc[r][b % kLanes];
    }
    OneBlock<Block, RM>(p + b * stride, act, blk, lane);
  }
  STET_UNROLL
  for (int r = 0; r < RM; ++r) {
    _mm512_mask_storeu_ps(y + r * ldy, static_cast<__mmask16>((1u << n) - 1),
                          CombineLanes16(acc[r]));
  }
}

// Splits m activation rows into the fewest passes of at most RMax rows, as
// even as they go (RMax 8: m = 5 one pass, 9 passes of 5 and 4), and calls
// pass(i0, rows) for each; the group stays in L1/L2 after the first pass.
template <int RMax, typename Pass>
void BalancedPasses(int64_t m, const Pass& pass) {
  int64_t i = 0;
  for (int64_t left = (m + RMax - 1) / RMax; left > 0; --left) {
    const int64_t rm = (m - i + left - 1) / left;
    pass(i, static_cast<int>(rm));
    i += rm;
  }
}

// Rows i0 .. i0 + rm - 1 of one group, one pass (rm <= kRMax).
template <typename Block, int RM = kRMax>
void GroupPass(int rm, const uint8_t* p, int64_t stride, const ActQ8& act, int64_t i0, float* y,
               int64_t ldy, int64_t n) {
  if constexpr (RM > 1) {
    if (rm < RM) return GroupPass<Block, RM - 1>(rm, p, stride, act, i0, y, ldy, n);
    GroupRows<Block, RM>(p, stride, act, i0, y, ldy, n);
  } else {
    GroupOneRow<Block>(p, stride, act, i0, y, n);
  }
}

// Weight rows [r0, r1) (r0 a multiple of 16), group by group (`blocks` blocks
// each), every activation row in balanced passes of at most RMax:
// pass(rm, p, stride, i0, y, ldy, n) for rows i0 .. i0 + rm - 1 of the group at p.
template <int RMax, typename Pass>
void GroupsInPasses(const MatMulArgs& a, int64_t blocks, int64_t r0, int64_t r1, const Pass& pass) {
  const WeightView& w = *a.w;
  const int64_t stride = PackedBlockBytes(w.type);
  const auto* packed = static_cast<const uint8_t*>(w.packed);
  STET_CHECK(r0 % 16 == 0);
  for (int64_t g = r0 / 16; g * 16 < r1; ++g) {
    const int64_t row0 = 16 * g, n = (r1 - row0) < 16 ? r1 - row0 : 16;
    const uint8_t* p = packed + g * blocks * stride;
    BalancedPasses<RMax>(a.m, [&](int64_t i0, int rm) {
      pass(rm, p, stride, i0, a.y + i0 * w.rows + row0, w.rows, n);
    });
  }
}

template <typename Block>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  GroupsInPasses<kRMax>(
      a, a.a8->nb, r0, r1,
      [&](int rm, const uint8_t* p, int64_t stride, int64_t i0, float* y, int64_t ldy, int64_t n) {
        GroupPass<Block>(rm, p, stride, *a.a8, i0, y, ldy, n);
      });
}

// q4_k superblock b of a 16-row group (pack.cc's layout) for RM activation
// rows (row indices i[r]) into *acc[r].
template <int RM>
inline void OneSuper(const uint8_t* p, const ActQ8K& act, const int64_t* i, int64_t b,
                     __m512* const* acc) {
  const int8_t* xq[RM];
  STET_UNROLL
  for (int r = 0; r < RM; ++r) xq[r] = act.qs + i[r] * act.k + b * kQKK;
  const __m512i mask = _mm512_set1_epi8(0x0f);
  __m512i isum[RM];
  STET_UNROLL
  for (int r = 0; r < RM; ++r) isum[r] = _mm512_setzero_si512();
  STET_UNROLL
  for (int jp = 0; jp < 4; ++jp) {  // sub-blocks 2jp (low nibbles) and 2jp + 1 (high)
    __m512i dlo[RM], dhi[RM];
    STET_UNROLL
    for (int r = 0; r < RM; ++r) dlo[r] = dhi[r] = _mm512_setzero_si512();
    STET_UNROLL
    for (int s = 0; s < 8; ++s) {
      const __m512i raw = _mm512_loadu_si512(p + (8 * jp + s) * 64);
      const __m512i lo = _mm512_and_si512(raw, mask);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask);
      STET_UNROLL
      for (int r = 0; r < RM; ++r) {
        dlo[r] =
            _mm512_dpbusd_epi32(dlo[r], lo, _mm512_set1_epi32(Load32(xq[r] + 64 * jp + 4 * s)));
        dhi[r] = _mm512_dpbusd_epi32(dhi[r], hi,
                                     _mm512_set1_epi32(Load32(xq[r] + 64 * jp + 32 + 4 * s)));
      }
    }
    const __m512i sc_lo =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2048 + 32 * jp)));
    const __m512i sc_hi = _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2048 + 32 * jp + 16)));
    STET_UNROLL
    for (int r = 0; r < RM; ++r) {
      isum[r] = _mm512_add_epi32(isum[r], _mm512_add_epi32(_mm512_mullo_epi32(dlo[r], sc_lo),
                                                           _mm512_mullo_epi32(dhi[r], sc_hi)));
    }
  }
  const uint8_t* dp = p + 2048 + 128 + 128;
  const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dp)));
  const __m512 dmin =
      _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dp + 32)));
  __m512i mins[4];
  STET_UNROLL
  for (int q = 0; q < 4; ++q) {
    mins[q] = _mm512_cvtepu8_epi16(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2048 + 128 + 32 * q)));
  }
  STET_UNROLL
  for (int r = 0; r < RM; ++r) {
    // msum = sum_j min_j * (sum of the activation's q over sub-block j), as int16 pairs.
    const int32_t* pr = act.sx2 + (i[r] * act.nsb + b) * 4;
    __m512i msum = _mm512_setzero_si512();
    STET_UNROLL
    for (int q = 0; q < 4; ++q) msum = _mm512_dpwssd_epi32(msum, mins[q], _mm512_set1_epi32(pr[q]));
    const __m512 dx = _mm512_set1_ps(act.d[i[r] * act.nsb + b]);
    *acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum[r]), *acc[r]);
    *acc[r] = _mm512_fmadd_ps(NegMul(dmin, dx), _mm512_cvtepi32_ps(msum), *acc[r]);
  }
}

// q6_k superblock b of a 16-row group (pack.cc's layout: sub-block j is words
// 3j..3j+2, their low 6 bits elements 16j + 4k.., their top 2 bits the pieces of
// elements 16j + 12..; int8 scales [j][row] at 3072, f16 d [row] at 3328) for RM
// activation rows: per sub-block dot_j by four vpdpbusd, then isum += sc_j *
// (dot_j - 32 * bsum_j) — exact int32 (|dot_j - 32 bsum_j| <= 16 * 32 * 128), so
// equal to ref's sum over elements in any order.
template <int RM>
inline void OneSuperQ6(const uint8_t* p, const ActQ8K& act, const int64_t* i, int64_t b,
                       __m512* const* acc) {
  const int8_t* xq[RM];
  const int16_t* bs[RM];
  __m512i isum[RM];
  STET_UNROLL
  for (int r = 0; r < RM; ++r) {
    xq[r] = act.qs + i[r] * act.k + b * kQKK;
    bs[r] = act.bsums + (i[r] * act.nsb + b) * 16;
    isum[r] = _mm512_setzero_si512();
  }
  const __m512i low6 = _mm512_set1_epi8(0x3f), bits01 = _mm512_set1_epi8(0x03),
                bits23 = _mm512_set1_epi8(0x0c), bits45 = _mm512_set1_epi8(0x30);
#pragma GCC unroll 4
  for (int j = 0; j < 16; ++j) {
    const uint8_t* wp = p + 3 * j * 64;
    const __m512i b0 = _mm512_loadu_si512(wp), b1 = _mm512_loadu_si512(wp + 64);
    const __m512i b2 = _mm512_loadu_si512(wp + 128);
    const __m512i q0 = _mm512_and_si512(b0, low6), q1 = _mm512_and_si512(b1, low6);
    const __m512i q2 = _mm512_and_si512(b2, low6);
    // The fourth quant: bits 6-7 of b0, b1, b2 as its bits 0-1, 2-3, 4-5.
    const __m512i t0 = _mm512_and_si512(_mm512_srli_epi16(b0, 6), bits01);
    const __m512i t1 = _mm512_and_si512(_mm512_srli_epi16(b1, 4), bits23);
    const __m512i t2 = _mm512_and_si512(_mm512_srli_epi16(b2, 2), bits45);
    const __m512i q3 = _mm512_ternarylogic_epi32(t0, t1, t2, 0xfe);  // t0 | t1 | t2
    const __m512i sc =
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 3072 + 16 * j)));
    STET_UNROLL
    for (int r = 0; r < RM; ++r) {
      const int8_t* x = xq[r] + 16 * j;
      __m512i dot =
          _mm512_dpbusd_epi32(_mm512_set1_epi32(-32 * bs[r][j]), q0, _mm512_set1_epi32(Load32(x)));
      dot = _mm512_dpbusd_epi32(dot, q1, _mm512_set1_epi32(Load32(x + 4)));
      dot = _mm512_dpbusd_epi32(dot, q2, _mm512_set1_epi32(Load32(x + 8)));
      dot = _mm512_dpbusd_epi32(dot, q3, _mm512_set1_epi32(Load32(x + 12)));
      isum[r] = _mm512_add_epi32(isum[r], _mm512_mullo_epi32(dot, sc));
    }
  }
  const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 3328)));
  STET_UNROLL
  for (int r = 0; r < RM; ++r) {
    const __m512 dx = _mm512_set1_ps(act.d[i[r] * act.nsb + b]);
    *acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum[r]), *acc[r]);
  }
}

// Rows i0 .. i0 + rm - 1 of one q4_k (kQ6: q6_k) group, one pass (rm <=
// kRMaxQK: the RM x 3 integer accumulators of OneSuper must stay in registers).
template <bool kQ6, Ahead kAhead, int RM = kRMaxQK>
void SuperPass(int rm, const uint8_t* p, int64_t stride, const ActQ8K& act, int64_t i0, float* y,
               int64_t ldy, int64_t n) {
  if constexpr (RM > 1) {
    if (rm < RM) return SuperPass<kQ6, kAhead, RM - 1>(rm, p, stride, act, i0, y, ldy, n);
  }
  __m512 acc[RM][kLanes];
  FillTile(acc, _mm512_setzero_ps());
  int64_t rows[RM];
  __m512* lane[RM];
  STET_UNROLL
  for (int r = 0; r < RM; ++r) rows[r] = i0 + r;
  for (int64_t b = 0; b < act.nsb; ++b) {
    if (i0 == 0) PrefetchSuper<kAhead>(p + b * stride, stride);
    STET_UNROLL
    for (int r = 0; r < RM; ++r) lane[r] = &acc[r][b % kLanes];
    if constexpr (kQ6) {
      OneSuperQ6<RM>(p + b * stride, act, rows, b, lane);
    } else {
      OneSuper<RM>(p + b * stride, act, rows, b, lane);
    }
  }
  STET_UNROLL
  for (int r = 0; r < RM; ++r) {
    _mm512_mask_storeu_ps(y + r * ldy, static_cast<__mmask16>((1u << n) - 1),
                          CombineLanes16(acc[r]));
  }
}

template <bool kQ6, Ahead kAhead>
void RowsQK(const MatMulArgs& a, int64_t r0, int64_t r1) {
  GroupsInPasses<kRMaxQK>(
      a, a.a8k->nsb, r0, r1,
      [&](int rm, const uint8_t* p, int64_t stride, int64_t i0, float* y, int64_t ldy, int64_t n) {
        SuperPass<kQ6, kAhead>(rm, p, stride, *a.a8k, i0, y, ldy, n);
      });
}

constexpr auto kKernels = Concat(
    Concat(KernelRowsOf<BlockQ8_0, BlockQ4_0, BlockQ4_1>(
               {"avx512.packed", Isa::kAvx512, kDecodeAndSmall, Packed::kNeeds, ActLayout::kQ8},
               STET_ROWS_OF(Rows)),
           KernelRows(
               {"avx512.packed", Isa::kAvx512, kDecodeAndSmall, Packed::kNeeds, ActLayout::kQ8K},
               {{DType::kQ4_K, RowsQK<false, Ahead::kL2Far>, kActSubSums},
                {DType::kQ6_K, RowsQK<true, Ahead::kL2Far>}})),
    KernelRows({"avx512.packed-l1", Isa::kAvx512, kDecodeAndSmall, Packed::kNeeds, ActLayout::kQ8K},
               {{DType::kQ4_K, RowsQK<false, Ahead::kL1Near>, kActSubSums},
                {DType::kQ6_K, RowsQK<true, Ahead::kL1Near>}}));

}  // namespace

std::span<const MatMulKernel> MatMulPackedKernels() { return kKernels; }

}  // namespace stet::kernels::avx512

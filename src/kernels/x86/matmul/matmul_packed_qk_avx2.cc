// AVX2 MatMul for q4_k and q6_k weights in the packed 16-row layout
// (kernels/pack.cc), for decode and prefill alike: one 32-byte load brings 4
// bytes of 8 rows (one half of a group), one maddubs with a broadcast 4-byte
// activation word does 32 exact multiply-adds, and each weight load serves RM
// activation rows. Per superblock the 8 rows' int32 sums land in one vector.
// Decode (m = 1) reads both halves of a group in one pass (each activation
// broadcast feeds two weight loads).
//  * q4_k: a sub-block's 8 maddubs partials are added in int16 (|sum| <=
//    8 * 2 * 15 * 127 = 30480), then madd with the row's 6-bit scale (both
//    int16 partials of a row times its scale: exact int32);
//    msum = sum_j min_j * sum qx_j by madd on (min_2q, min_2q+1) pairs.
//  * q6_k: per sub-block, three quants are a word's low 6 bits (one and) and
//    the fourth gathers the words' top 2 bits (pack.cc's layout); two maddubs
//    partials are added in int16 (<= 2 * 2 * 63 * 127 = 32004), then madd with
//    the row's int8 scale; the -32 offset is -32 * sum_j sc_j * sum qx_j (madd
//    on pairs).
// Numerics: per output, superblock b's exact isum (and q4_k's msum) go to
// logical lane b % 8 with the fmas of ref/matmul_qk.cc, then the fixed lane
// tree: equal to the scalar reference bit for bit (matmul_test.cc:
// Avx2PackedEqualsScalar).
#include <immintrin.h>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/matmul/packed_rows_avx2.h"

namespace stet::kernels::avx2 {

namespace {

// q4_k superblock (at p) of NH 8-row halves (byte offsets half[h] into each
// 64-byte word): isum and msum for RM activation rows (row i's quants at xq[i],
// its 4 sub-block sum pairs, ActQ8K::sx2, at sx2[i]), output k = h * RM + i.
// Decode reads both halves in one pass (NH = 2), sharing each activation broadcast.
template <int NH, int RM>
inline void SuperQ4K(const uint8_t* p, const int* half, const int8_t* const* xq,
                     const int32_t* const* sx2, __m256i* isum, __m256i* msum) {
  const __m256i mask = _mm256_set1_epi8(0x0f);
  STET_UNROLL
  for (int k = 0; k < NH * RM; ++k) isum[k] = msum[k] = _mm256_setzero_si256();
  STET_UNROLL
  for (int jp = 0; jp < 4; ++jp) {  // sub-blocks 2jp (low nibbles) and 2jp + 1 (high)
    __m256i lo16[NH * RM], hi16[NH * RM];
    STET_UNROLL
    for (int k = 0; k < NH * RM; ++k) lo16[k] = hi16[k] = _mm256_setzero_si256();
    STET_UNROLL
    for (int s = 0; s < 8; ++s) {
      __m256i xl[RM], xh[RM];
      STET_UNROLL
      for (int i = 0; i < RM; ++i) {
        xl[i] = Bcast32(xq[i] + 64 * jp + 4 * s);
        xh[i] = Bcast32(xq[i] + 64 * jp + 32 + 4 * s);
      }
      STET_UNROLL
      for (int h = 0; h < NH; ++h) {
        const __m256i raw =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + (8 * jp + s) * 64 + half[h]));
        const __m256i lo = _mm256_and_si256(raw, mask);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask);
        STET_UNROLL
        for (int i = 0; i < RM; ++i) {
          const int k = h * RM + i;
          lo16[k] = _mm256_add_epi16(lo16[k], _mm256_maddubs_epi16(lo, xl[i]));
          hi16[k] = _mm256_add_epi16(hi16[k], _mm256_maddubs_epi16(hi, xh[i]));
          KeepInRegister(lo16[k]);
          KeepInRegister(hi16[k]);
        }
      }
    }
    STET_UNROLL
    for (int h = 0; h < NH; ++h) {
      const int rows8 = half[h] / 4;  // 0 or 8: this half's first row within the group
      const __m256i sc_lo = RowPairsU8(p + 2048 + 16 * (2 * jp) + rows8);
      const __m256i sc_hi = RowPairsU8(p + 2048 + 16 * (2 * jp + 1) + rows8);
      STET_UNROLL
      for (int i = 0; i < RM; ++i) {
        const int k = h * RM + i;
        isum[k] = _mm256_add_epi32(isum[k], _mm256_add_epi32(_mm256_madd_epi16(lo16[k], sc_lo),
                                                             _mm256_madd_epi16(hi16[k], sc_hi)));
      }
    }
  }
  STET_UNROLL
  for (int q = 0; q < 4; ++q) {
    STET_UNROLL
    for (int h = 0; h < NH; ++h) {
      const __m256i mins = _mm256_cvtepu8_epi16(_mm_loadu_si128(
          reinterpret_cast<const __m128i*>(p + 2048 + 128 + 32 * q + 2 * (half[h] / 4))));
      STET_UNROLL
      for (int i = 0; i < RM; ++i) {
        msum[h * RM + i] = _mm256_add_epi32(msum[h * RM + i],
                                            _mm256_madd_epi16(mins, _mm256_set1_epi32(sx2[i][q])));
      }
    }
  }
}

// q6_k superblock (at p) of NH 8-row halves: isum = sum_e sc[e/16] (q_e - 32) qx_e
// for RM activation rows (row i's quants at xq[i], its 16 bsums at bs[i]),
// output k = h * RM + i. Sub-block j is 3 words (kernels/pack.cc): the low 6
// bits of word 3j + k hold elements 16j + 4k.., their top 2 bits the 2-bit
// pieces of elements 16j + 12.. (masked first, so 16-bit shifts move no bit
// across a byte).
template <int NH, int RM>
inline void SuperQ6K(const uint8_t* p, const int* half, const int8_t* const* xq,
                     const int16_t* const* bs, __m256i* isum) {
  const uint8_t* sc = p + 3072;  // int8 scales [j][row]
  const __m256i low6 = _mm256_set1_epi8(0x3f), top2 = _mm256_set1_epi8(static_cast<char>(0xc0));
  STET_UNROLL
  for (int k = 0; k < NH * RM; ++k) isum[k] = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int j = 0; j < 16; ++j) {
    __m256i x[RM][4];
    STET_UNROLL
    for (int i = 0; i < RM; ++i) {
      STET_UNROLL
      for (int w = 0; w < 4; ++w) x[i][w] = Bcast32(xq[i] + 16 * j + 4 * w);
    }
    STET_UNROLL
    for (int h = 0; h < NH; ++h) {
      const uint8_t* wp = p + 3 * j * 64 + half[h];
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp));
      const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 64));
      const __m256i b2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 128));
      const __m256i q0 = _mm256_and_si256(b0, low6), q1 = _mm256_and_si256(b1, low6);
      const __m256i q2 = _mm256_and_si256(b2, low6);
      const __m256i q3 =
          _mm256_or_si256(_mm256_or_si256(_mm256_srli_epi16(_mm256_and_si256(b0, top2), 6),
                                          _mm256_srli_epi16(_mm256_and_si256(b1, top2), 4)),
                          _mm256_srli_epi16(_mm256_and_si256(b2, top2), 2));
      const __m256i scl = RowPairsI8(sc + 16 * j + half[h] / 4);
      STET_UNROLL
      for (int i = 0; i < RM; ++i) {
        const int k = h * RM + i;
        // Two maddubs partials per int16: <= 2 * 2 * 63 * 127 = 32004.
        const __m256i s01 =
            _mm256_add_epi16(_mm256_maddubs_epi16(q0, x[i][0]), _mm256_maddubs_epi16(q1, x[i][1]));
        const __m256i s23 =
            _mm256_add_epi16(_mm256_maddubs_epi16(q2, x[i][2]), _mm256_maddubs_epi16(q3, x[i][3]));
        isum[k] = _mm256_add_epi32(
            isum[k], _mm256_add_epi32(_mm256_madd_epi16(s01, scl), _mm256_madd_epi16(s23, scl)));
        KeepInRegister(isum[k]);
      }
    }
  }
  // -32 * sum_j sc_j * bsum_j, on (sc_2k, sc_2k+1) pairs per row (|sum| <= 16 *
  // 128 * 2032: times 32 still an exact int32).
  STET_UNROLL
  for (int h = 0; h < NH; ++h) {
    const int rows8 = half[h] / 4;
    __m256i off[RM];
    STET_UNROLL
    for (int i = 0; i < RM; ++i) off[i] = _mm256_setzero_si256();
    STET_UNROLL
    for (int k = 0; k < 8; ++k) {
      const __m128i e =
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 16 * (2 * k) + rows8));
      const __m128i o =
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 16 * (2 * k + 1) + rows8));
      const __m256i pairs = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(e, o));
      STET_UNROLL
      for (int i = 0; i < RM; ++i) {
        // (bsum_2k, bsum_2k+1): two adjacent int16s, one little-endian int32.
        off[i] = _mm256_add_epi32(
            off[i], _mm256_madd_epi16(pairs, _mm256_set1_epi32(Load32(bs[i] + 2 * k))));
      }
    }
    STET_UNROLL
    for (int i = 0; i < RM; ++i) {
      isum[h * RM + i] = _mm256_sub_epi32(isum[h * RM + i], _mm256_slli_epi32(off[i], 5));
    }
  }
}

// Superblocks ahead of the one computed that the first pass prefetches (9-13
// KB: 3 measured on Zen 3, DRAM-cold decode 0.75-0.95x the time of no prefetch;
// 4 into L2 on Zen 4, 0.6x the time of 3 into L1 at two activation rows).
constexpr int64_t kPrefetchAhead = 4;

// The outputs of NH halves (packed group at p; NH = 1: the half at byte offset
// half0, NH = 2: both, 16 rows) for activation rows i0..i0+RM-1;
// n_out counts from the first output row.
template <bool kQ6, int NH, int RM>
void HalfTile(const uint8_t* p, int half0, int64_t stride, const ActQ8K& act, int64_t i0, float* y,
              int64_t ldy, int64_t n_out) {
  const int half[2] = {NH == 2 ? 0 : half0, 32};
  const int dofs = kQ6 ? 3328 : 2048 + 256;  // f16 d [row] (q4_k: then dmin [row])
  __m256 acc[NH * RM][kLanes];
  ZeroTile<NH, RM>(acc);
  for (int64_t b = 0; b < act.nsb; ++b) {
    const uint8_t* pb = p + b * stride;
    // The first pass over the group (first half, first activation rows)
    // streams it from memory; later passes find it cached.
    if (half[0] == 0 && i0 == 0) PrefetchLines(pb + kPrefetchAhead * stride, stride);
    const int8_t* xq[RM];
    const int16_t* bs[RM];
    const int32_t* sx2[RM];
    STET_UNROLL
    for (int i = 0; i < RM; ++i) {
      const int64_t sb = (i0 + i) * act.nsb + b;
      xq[i] = act.qs + (i0 + i) * act.k + b * kQKK;
      bs[i] = act.bsums + sb * 16;
      sx2[i] = kQ6 ? nullptr : act.sx2 + sb * 4;
    }
    __m256i isum[NH * RM], msum[NH * RM];
    if constexpr (kQ6) {
      SuperQ6K<NH, RM>(pb, half, xq, bs, isum);
    } else {
      SuperQ4K<NH, RM>(pb, half, xq, sx2, isum, msum);
    }
    STET_UNROLL
    for (int h = 0; h < NH; ++h) {
      const int rows8 = half[h] / 4;
      const __m256 d =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + dofs + 2 * rows8)));
      __m256 dmin = _mm256_setzero_ps();
      if constexpr (!kQ6) {
        dmin = _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + dofs + 32 + 2 * rows8)));
      }
      STET_UNROLL
      for (int i = 0; i < RM; ++i) {
        const int k = h * RM + i;
        const __m256 dx = _mm256_set1_ps(act.d[(i0 + i) * act.nsb + b]);
        __m256& lane = acc[k][b % kLanes];
        lane = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(isum[k]), lane);
        if constexpr (!kQ6) {
          lane = _mm256_fmadd_ps(NegMul(dmin, dx), _mm256_cvtepi32_ps(msum[k]), lane);
        }
      }
    }
  }
  StoreTile<NH, RM>(acc, y, ldy, n_out);
}

constexpr int kRM = 4;  // activation rows sharing each weight load (prefill)

template <bool kQ6>
struct Tiles {
  const ActQ8K& act;
  int64_t stride;
  template <int NH, int RM>
  void Tile(const uint8_t* p, int half0, int64_t i0, float* y, int64_t ldy, int64_t n_out) const {
    HalfTile<kQ6, NH, RM>(p, half0, stride, act, i0, y, ldy, n_out);
  }
};

template <bool kQ6>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  PackedRows<kRM>(Tiles<kQ6>{*a.a8k, PackedBlockBytes(a.w->type)}, a, a.a8k->nsb, r0, r1);
}

constexpr auto kKernels =
    KernelRows({"avx2.packed", Isa::kAvx2, kEveryClass, Packed::kNeeds, ActLayout::kQ8K},
               {{DType::kQ4_K, Rows<false>, kActSubSums}, {DType::kQ6_K, Rows<true>}});

}  // namespace

std::span<const MatMulKernel> MatMulPackedQKKernels() { return kKernels; }

}  // namespace stet::kernels::avx2

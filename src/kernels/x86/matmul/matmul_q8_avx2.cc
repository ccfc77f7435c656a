// AVX2 MatMul for q8_0/q4_0/q4_1/q5_0/q5_1/iq4_nl weights on 32-block int8
// activations, tiled RN weight rows x RM activation rows. Integer block dots use
// maddubs/madd (exact); 8 blocks' int32 sums are folded into one vector (block b ->
// lane b%8) by an hadd tree, converted, and fma'd with 8 scales. Numerics: equal to
// ref/matmul_q8.cc bit for bit (lane = fma(dw*dx, float(isum), lane), q4_1/q5_1 then
// fma(mw, s, lane); the tail group updates only real lanes); depends on w.cols only
// (matmul_test.cc).
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx2 {

namespace {

inline __m256i Ones16() { return _mm256_set1_epi16(1); }

// The first 4 bytes of each of 8 consecutive blocks (d, then m or the first
// quants). Scalar loads + inserts: on Zen 4 that beats vpgatherdd. The tail
// gathers with a mask, so blocks past `valid` are never read (they read as 0).
template <typename Block, bool kTail>
inline __m256i BlockHeads8(const Block* b, int valid) {
  constexpr int s = static_cast<int>(sizeof(Block));
  const auto* p = reinterpret_cast<const uint8_t*>(b);
  if constexpr (kTail) {
    const __m256i idx = _mm256_setr_epi32(0, s, 2 * s, 3 * s, 4 * s, 5 * s, 6 * s, 7 * s);
    return _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), reinterpret_cast<const int*>(p), idx,
                                       TailMask(valid), 1);
  } else {
    return _mm256_setr_epi32(Load32(p), Load32(p + s), Load32(p + 2 * s), Load32(p + 3 * s),
                             Load32(p + 4 * s), Load32(p + 5 * s), Load32(p + 6 * s),
                             Load32(p + 7 * s));
  }
}

// From 8 block heads: the low halves (d) as floats in lanes 0..7, and the high
// halves (q4_1's m) likewise.
inline void HeadHalves(__m256i heads, __m256* lo, __m256* hi) {
  const __m256i split = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1,
                                         4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  // 64-bit chunks now: d0-3, m0-3, d4-7, m4-7 -> reorder to d0-7, m0-7.
  const __m256i t = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(heads, split), 0xD8);
  *lo = _mm256_cvtph_ps(_mm256_castsi256_si128(t));
  if (hi != nullptr) *hi = _mm256_cvtph_ps(_mm256_extracti128_si256(t, 1));
}

// A q5_0/q5_1 block's quants (0..31) as bytes in element order.
inline __m256i Quants5(const uint8_t* qs, const uint8_t* qh) {
  return _mm256_or_si256(Nibbles32(qs), FifthBits32(qh));
}

struct KQ8_0 {
  using Block = BlockQ8_0;
  static constexpr bool kMin = false;
  static constexpr int kSubShift = 0;  // isum = sum q*x - (sum x << kSubShift), if > 0
  struct W {
    __m256i abs, sign;
  };
  static W Unpack(const Block& b) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    return {_mm256_sign_epi8(w, w), w};
  }
  // sum_i w_i x_i as 8 int32 partials: |w| * (x * sign w) keeps maddubs' first
  // operand unsigned; |w| <= 128 and |x| <= 127, so no int16 saturation.
  static __m256i Dot(const W& w, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w.abs, _mm256_sign_epi8(x, w.sign)), Ones16());
  }
};

// q4_0/q4_1/q5_0/q5_1: the unsigned quants (nibbles; q5's | the fifth bit) are
// maddubs' unsigned operand as they are; q4_0 / q5_0 then subtract 8 / 16 * sum x,
// q4_1 / q5_1 add m * s.
template <typename B>
struct KUnsigned {
  using Block = B;
  static constexpr bool kQ5 = std::is_same_v<B, BlockQ5_0> || std::is_same_v<B, BlockQ5_1>;
  static constexpr bool kMin = kBlockHasMin<B>;
  static constexpr int kSubShift = kMin ? 0 : kQ5 ? 4 : 3;  // isum = sum q*x - (sum x << it)
  struct W {
    __m256i q;
  };
  static W Unpack(const Block& b) {
    if constexpr (kQ5) {
      return {Quants5(b.qs, b.qh)};
    } else {
      return {Nibbles32(b.qs)};
    }
  }
  static __m256i Dot(const W& w, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w.q, x), Ones16());
  }
};
using KQ4_0 = KUnsigned<BlockQ4_0>;
using KQ4_1 = KUnsigned<BlockQ4_1>;
using KQ5_0 = KUnsigned<BlockQ5_0>;
using KQ5_1 = KUnsigned<BlockQ5_1>;

// iq4_nl: the nibbles index kIQ4NLValues (one pshufb); the signed weights then
// take q8_0's sign trick (|w| <= 127).
struct KIQ4_NL {
  using Block = BlockIQ4_NL;
  static constexpr bool kMin = false;
  static constexpr int kSubShift = 0;
  using W = KQ8_0::W;
  static W Unpack(const Block& b) {
    const __m256i table = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
    const __m256i w = _mm256_shuffle_epi8(table, Nibbles32(b.qs));
    return {_mm256_sign_epi8(w, w), w};
  }
  static __m256i Dot(const W& w, __m256i x) { return KQ8_0::Dot(w, x); }
};

// One group of 8 blocks for an RM x RN tile. wb[n] points at row n's first
// block of the group; the activation rows are act row i0 + i. kTail: only the
// first `valid` blocks exist; the others are neither read nor computed, and
// their lanes keep their accumulators (blend).
template <typename K, int RN, int RM, bool kTail>
inline void Group(const typename K::Block* const* wb, const ActQ8& act, int64_t i0, int64_t g,
                  __m256 (&acc)[RM][RN], int valid) {
  __m256i h4[2][RM][RN];
  STET_UNROLL
  for (int half = 0; half < 2; ++half) {
    if (kTail && 4 * half >= valid) {
      FillTile(h4[half], _mm256_setzero_si256());
      continue;
    }
    __m256i h2[2][RM][RN];
    STET_UNROLL
    for (int pair = 0; pair < 2; ++pair) {
      if (kTail && 4 * half + 2 * pair >= valid) {
        FillTile(h2[pair], _mm256_setzero_si256());
        continue;
      }
      __m256i v[2][RM][RN];
      STET_UNROLL
      for (int e = 0; e < 2; ++e) {
        const int blk = 4 * half + 2 * pair + e;
        if (kTail && blk >= valid) {
          FillTile(v[e], _mm256_setzero_si256());
          continue;
        }
        typename K::W wq[RN];
        STET_UNROLL
        for (int n = 0; n < RN; ++n) wq[n] = K::Unpack(wb[n][blk]);
        STET_UNROLL
        for (int i = 0; i < RM; ++i) {
          const int8_t* xq = act.qs + ((i0 + i) * act.nb_pad + g * 8 + blk) * kQK;
          const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
          STET_UNROLL
          for (int n = 0; n < RN; ++n) v[e][i][n] = K::Dot(wq[n], xv);
        }
      }
      STET_UNROLL
      for (int i = 0; i < RM; ++i) STET_UNROLL
      for (int n = 0; n < RN; ++n) h2[pair][i][n] = _mm256_hadd_epi32(v[0][i][n], v[1][i][n]);
    }
    STET_UNROLL
    for (int i = 0; i < RM; ++i) STET_UNROLL
    for (int n = 0; n < RN; ++n) h4[half][i][n] = _mm256_hadd_epi32(h2[0][i][n], h2[1][i][n]);
  }
  const __m256i valid_mask = kTail ? TailMask(valid) : _mm256_set1_epi32(-1);
  __m256 dw[RN], mw[RN];
  STET_UNROLL
  for (int n = 0; n < RN; ++n) {
    HeadHalves(BlockHeads8<typename K::Block, kTail>(wb[n], valid), &dw[n],
               K::kMin ? &mw[n] : nullptr);
  }
  STET_UNROLL
  for (int i = 0; i < RM; ++i) {
    const int64_t blk0 = (i0 + i) * act.nb_pad + g * 8;
    const __m256 dx = _mm256_loadu_ps(act.d + blk0);
    STET_UNROLL
    for (int n = 0; n < RN; ++n) {
      // Lanes 0..3 hold blocks 0..3 (from h4[0]), lanes 4..7 blocks 4..7.
      const __m256i lo = _mm256_permute2x128_si256(h4[0][i][n], h4[1][i][n], 0x20);
      const __m256i hi = _mm256_permute2x128_si256(h4[0][i][n], h4[1][i][n], 0x31);
      __m256i isum = _mm256_add_epi32(lo, hi);
      if constexpr (K::kSubShift > 0) {
        const __m256i qsum = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act.qsum + blk0));
        isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(qsum, K::kSubShift));
      }
      __m256 next = _mm256_fmadd_ps(_mm256_mul_ps(dw[n], dx), _mm256_cvtepi32_ps(isum), acc[i][n]);
      if constexpr (K::kMin) next = _mm256_fmadd_ps(mw[n], _mm256_loadu_ps(act.s + blk0), next);
      if constexpr (kTail) {
        acc[i][n] = _mm256_blendv_ps(acc[i][n], next, _mm256_castsi256_ps(valid_mask));
      } else {
        acc[i][n] = next;
      }
    }
  }
}

// The tail group runs once per tile; keeping it out of line keeps the main
// loop's register allocation clean.
template <typename K, int RN, int RM>
__attribute__((noinline)) void TailGroup(const typename K::Block* const* wb, const ActQ8& act,
                                         int64_t i0, int64_t g, __m256 (&acc)[RM][RN], int valid) {
  Group<K, RN, RM, true>(wb, act, i0, g, acc, valid);
}

template <typename K, int RN, int RM>
void Tile(const uint8_t* w, int64_t w_stride, const ActQ8& act, int64_t i0, float* y, int64_t ldy) {
  using Block = typename K::Block;
  __m256 acc[RM][RN];
  FillTile(acc, _mm256_setzero_ps());
  const int64_t n_full = act.nb / 8;
  const Block* wb[RN];
  STET_UNROLL
  for (int n = 0; n < RN; ++n) wb[n] = reinterpret_cast<const Block*>(w + n * w_stride);
  for (int64_t g = 0; g < n_full; ++g) {
    Group<K, RN, RM, false>(wb, act, i0, g, acc, 8);
    STET_UNROLL
    for (int n = 0; n < RN; ++n) wb[n] += 8;
  }
  const int rest = static_cast<int>(act.nb - 8 * n_full);
  if (rest > 0) TailGroup<K, RN, RM>(wb, act, i0, n_full, acc, rest);
  STET_UNROLL
  for (int i = 0; i < RM; ++i) STET_UNROLL
  for (int n = 0; n < RN; ++n) y[i * ldy + n] = CombineLanes8(acc[i][n]);
}

// Tile shapes: decode (m == 1) reads each activation block once for kDecodeRN
// weight rows; prefill reuses each unpacked weight block for kRM activation rows.
// Measured on Zen 4 (576x1536 and 1536x576 q4_1/q8_0): 2/2x2 beat 1, 4 and 1x4, 4x1.
// Measured on Zen 4 (576x1536 and 1536x576, q4_1/q8_0/q4_0): decode 4 rows per
// activation load beat 1 and 2; prefill 2x4 beat 2x2, 3x2, 1x4 and 4x1.
constexpr int kDecodeRN = 4;
constexpr int kRN = 2;
constexpr int kRM = 4;

template <typename K, int RN>
void RowTile(const MatMulArgs& a, const uint8_t* w, int64_t r) {
  const WeightView& wv = *a.w;
  int64_t i = 0;
  for (; i + kRM <= a.m; i += kRM) {
    Tile<K, RN, kRM>(w, wv.row_bytes, *a.a8, i, a.y + i * wv.rows + r, wv.rows);
  }
  for (; i < a.m; ++i) Tile<K, RN, 1>(w, wv.row_bytes, *a.a8, i, a.y + i * wv.rows + r, wv.rows);
}

template <typename K>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const WeightView& wv = *a.w;
  const auto* base = static_cast<const uint8_t*>(wv.data);
  int64_t r = r0;
  if (a.m == 1) {
    for (; r + kDecodeRN <= r1; r += kDecodeRN) {
      Tile<K, kDecodeRN, 1>(base + r * wv.row_bytes, wv.row_bytes, *a.a8, 0, a.y + r, wv.rows);
    }
  } else {
    for (; r + kRN <= r1; r += kRN) RowTile<K, kRN>(a, base + r * wv.row_bytes, r);
  }
  for (; r < r1; ++r) RowTile<K, 1>(a, base + r * wv.row_bytes, r);
}

constexpr auto kKernels = KernelRowsOf<KQ8_0, KQ4_0, KQ4_1, KQ5_0, KQ5_1, KIQ4_NL>(
    {"avx2.tiles", Isa::kAvx2, kEveryClass, Packed::kNo, ActLayout::kQ8}, [](auto k) {
      using K = typename decltype(k)::type;
      return TypeRows{K::Block::kType, Rows<K>};
    });

}  // namespace

std::span<const MatMulKernel> MatMulQ8Kernels() { return kKernels; }

}  // namespace stet::kernels::avx2

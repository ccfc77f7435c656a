// AVX-512 VNNI MatMul for q8_0/q4_0/q4_1/q5_0/q5_1/iq4_nl weights on 32-block int8
// activations, m >= 2. The activations are "vertical" (ActQ8V): one 16-lane vector holds 4
// q's of 16 activation rows, so one vpdpbusd with a broadcast 4-byte weight
// word does 64 exact multiply-adds, and block b's int32 dots for 16 rows land
// in one vector with no horizontal sums. vpdpbusd multiplies unsigned by signed
// bytes: q8_0 weights are signed, so there the activations are stored as
// q + 128 and 128 * sum(w) of the block is subtracted, exactly; q4 nibbles are
// unsigned and meet the raw activations (q4_0 subtracts 8 * sum q, exactly).
// q5_0/q5_1/iq4_nl blocks are unpacked to 32 integer weight bytes once per
// weight row and 256 activation rows: q5's are unsigned (q5_0 subtracts
// 16 * sum q), iq4_nl's levels are signed and meet biased activations as q8_0's.
//
// Numerics: per output, block b's exact isum goes to logical lane b % 8 as
// lane = fma(dw * dx, float(isum), lane) (q4_1 then lane = fma(mw, s, lane)),
// in increasing b, then the fixed lane tree: equal to ref/matmul_q8.cc bit for
// bit. The kernel walks one logical
// lane at a time (blocks l, l + 8, ...), which keeps every lane's own order;
// lanes are independent until the tree combines them.
#include <immintrin.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/avx512_util.h"

namespace stet::kernels::avx512 {

namespace {

// Weights met as signed bytes by biased (q + 128) activations.
template <typename B>
constexpr bool kSignedW = std::is_same_v<B, BlockQ8_0> || std::is_same_v<B, BlockIQ4_NL>;
// Weights unpacked to bytes by RowAux (the q4 nibbles are split in registers).
template <typename B>
constexpr bool kUnpacked =
    std::is_same_v<B, BlockQ5_0> || std::is_same_v<B, BlockQ5_1> || std::is_same_v<B, BlockIQ4_NL>;
// log2 of the offset of unsigned quants (q - 8, q - 16), or -1.
template <typename B>
constexpr int kOffsetShift = std::is_same_v<B, BlockQ4_0>   ? 3
                             : std::is_same_v<B, BlockQ5_0> ? 4
                                                            : -1;

// Per weight row and block: the scale as float, q4_1's/q5_1's m as float, and
// for the signed weights the correction 128 * sum(q).
struct BlockAux {
  float d, m;
  int32_t corr;
};

// Sum of 32 signed bytes, exact: sad of (q + 128) in four 64-bit partial sums.
inline int32_t SumBytes(__m256i q) {
  const __m256i s = _mm256_sad_epu8(_mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80))),
                                    _mm256_setzero_si256());
  __m128i t = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  t = _mm_add_epi64(t, _mm_unpackhi_epi64(t, t));
  return static_cast<int32_t>(_mm_cvtsi128_si64(t)) - 128 * kQK;
}

// The 32 integer weights of a q5_0/q5_1 (unsigned 0..31) or iq4_nl (signed
// level) block, in element order; returns their sum.
template <typename Block>
int32_t UnpackBlock(const Block& b, uint8_t* out) {
  const __m256i nib = avx2::Nibbles32(b.qs);
  __m256i w;
  if constexpr (std::is_same_v<Block, BlockIQ4_NL>) {
    const __m256i levels = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
    w = _mm256_shuffle_epi8(levels, nib);
  } else {
    w = _mm256_or_si256(nib, avx2::FifthBits32(b.qh));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), w);
  return std::is_same_v<Block, BlockIQ4_NL> ? SumBytes(w) : 0;
}

template <typename Block>
void RowAux(const Block* blocks, int64_t nb, BlockAux* aux, uint8_t* wq) {
  for (int64_t b = 0; b < nb; ++b) {
    aux[b].d = _cvtsh_ss(blocks[b].d);
    aux[b].m = 0.0f;
    aux[b].corr = 0;
    if constexpr (kBlockHasMin<Block>) aux[b].m = _cvtsh_ss(blocks[b].m);
    if constexpr (kUnpacked<Block>) aux[b].corr = 128 * UnpackBlock(blocks[b], wq + b * kQK);
    if constexpr (std::is_same_v<Block, BlockQ8_0>) {
      aux[b].corr =
          128 * SumBytes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[b].qs)));
    }
  }
}

// A q4 block's 16 bytes in every 128-bit lane: low nibbles (elements 0..15)
// and high nibbles (16..31), as unsigned bytes.
struct Nibbles {
  __m512i lo, hi;
};
inline Nibbles LoadNibbles(const uint8_t* qs) {
  const __m512i raw = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m512i mask = _mm512_set1_epi8(0x0f);
  return {_mm512_and_si512(raw, mask), _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask)};
}

// Outputs for RN weight rows (aux rows n * nb) and TG row groups g0.. (16 rows
// each): y[row * ldy + n].
template <typename Block, int RN, int TG>
void Tile(const Block* const* wrow, const BlockAux* aux, const uint8_t* wq, const ActQ8V& act,
          int64_t g0, bool pairs, float* y, int64_t ldy) {
  constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
  constexpr bool kBytes = kQ8 || kUnpacked<Block>;  // weights as bytes in memory
  const int64_t nb = act.nb;
  VerticalTile<TG, RN>(nb, g0, act.m, pairs, y, ldy, [&](int64_t b, __m512(&acc)[TG][RN]) {
    __m512i is[TG][RN];
    FillTile(is, _mm512_setzero_si512());
    const uint8_t* xq = act.qs + (g0 * nb + b) * 512;
    Nibbles nib[RN];
    [[maybe_unused]] const uint8_t* wb[RN];
    STET_UNROLL
    for (int n = 0; n < RN; ++n) {
      if constexpr (kQ8) wb[n] = reinterpret_cast<const uint8_t*>(wrow[n][b].qs);
      if constexpr (kUnpacked<Block>) wb[n] = wq + (n * nb + b) * kQK;
      if constexpr (!kBytes) nib[n] = LoadNibbles(wrow[n][b].qs);
    }
    VerticalDots<8, !kSignedW<Block>>(xq, nb * 512, is, [&](int n, int j) {
      if constexpr (kBytes) {
        return _mm512_set1_epi32(Load32(wb[n] + 4 * j));
      } else {  // elements 4j..4j+3: dword j % 4 of the low (j < 4) or high nibbles
        return _mm512_permutexvar_epi32(_mm512_set1_epi32(j % 4), j < 4 ? nib[n].lo : nib[n].hi);
      }
    });
    STET_UNROLL
    for (int g = 0; g < TG; ++g) {
      const int64_t gb = (g0 + g) * nb + b;
      const __m512 dx = _mm512_loadu_ps(act.d + gb * 16);
      __m512i q8sum;
      if constexpr (kOffsetShift<Block> >= 0) {
        q8sum = _mm512_slli_epi32(_mm512_loadu_si512(act.qsum + gb * 16), kOffsetShift<Block>);
      }
      STET_UNROLL
      for (int n = 0; n < RN; ++n) {
        const BlockAux& a = aux[n * nb + b];
        __m512i isum = is[g][n];
        if constexpr (kSignedW<Block>) isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(a.corr));
        if constexpr (kOffsetShift<Block> >= 0) isum = _mm512_sub_epi32(isum, q8sum);
        const __m512 s = _mm512_mul_ps(_mm512_set1_ps(a.d), dx);
        acc[g][n] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(isum), acc[g][n]);
        if constexpr (kBlockHasMin<Block>) {
          acc[g][n] =
              _mm512_fmadd_ps(_mm512_set1_ps(a.m), _mm512_loadu_ps(act.s + gb * 16), acc[g][n]);
        }
      }
    }
  });
}

// Measured on Zen 5 (576x1536 and 1536x576, m = 512): RN x TG = 4 x 2.
constexpr int kRN = 4;
constexpr int kTG = 2;
// Row groups per block: 256 activation rows stay in L2 while this thread's
// weight rows stream past them.
constexpr int64_t kGroupBlock = 16;

thread_local std::vector<BlockAux> tls_aux;
thread_local std::vector<uint8_t> tls_wq;  // unpacked weights, kUnpacked types

template <typename Block>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const ActQ8V& act = *a.a8v;
  const size_t aux = static_cast<size_t>(kRN * act.nb);
  if (tls_aux.size() < aux) tls_aux.resize(aux);
  if (kUnpacked<Block> && tls_wq.size() < aux * kQK) tls_wq.resize(aux * kQK);
  const Block* wrow[kRN];
  VerticalRows<kRN, kTG, kGroupBlock>(
      *a.w, act.groups, r0, r1,
      [&](int n, const uint8_t* row) {
        wrow[n] = reinterpret_cast<const Block*>(row);
        RowAux(wrow[n], act.nb, tls_aux.data() + n * act.nb, tls_wq.data() + n * act.nb * kQK);
      },
      [&](auto rn, auto tg, int64_t r, int64_t g) {
        Tile<Block, decltype(rn)::value, decltype(tg)::value>(
            wrow, tls_aux.data(), tls_wq.data(), act, g, a.sum_row_pairs, a.y + r, a.w->rows);
      });
}

}  // namespace

void VerticalizeQ8(const ActQ8& a8, ActQ8V* v, int64_t g0, int64_t g1) {
  VerticalWords<8>(g0, g1, v->nb, v->m, v->biased, v->qs,
                   [&](int64_t gb, int64_t b, int t, int64_t row, bool real) {
                     const int64_t src = row * a8.nb_pad + b;
                     v->d[gb * 16 + t] = real ? a8.d[src] : 0.0f;
                     if (v->qsum) v->qsum[gb * 16 + t] = real ? a8.qsum[src] : 0;
                     if (v->s) v->s[gb * 16 + t] = real ? a8.s[src] : 0.0f;
                     return a8.qs + src * kQK;
                   });
}

namespace {
// What the vertical activations carry for a block type (matmul_table.h, ActFlag).
template <typename B>
constexpr uint8_t kActFlags = (kSignedW<B> ? kActBiased : 0) |
                              (kOffsetShift<B> >= 0 ? kActQsum : 0) |
                              (kBlockHasMin<B> ? kActMinSum : 0);

constexpr auto kKernels =
    KernelRowsOf<BlockQ8_0, BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockIQ4_NL>(
        {"avx512.vertical", Isa::kAvx512, kPrefillOnly, Packed::kNo, ActLayout::kQ8V}, [](auto b) {
          using B = typename decltype(b)::type;
          return TypeRows{B::kType, Rows<B>, kActFlags<B>};
        });
}  // namespace

std::span<const MatMulKernel> MatMulQ8Kernels() { return kKernels; }

}  // namespace stet::kernels::avx512

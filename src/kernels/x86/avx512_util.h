// AVX-512 helpers shared by kernels/x86/*_avx512.cc: the canonical lane tree
// over 8 logical-lane vectors (16 outputs at once), the strided store of a
// vertical kernel's 16 rows; unaligned 4-byte loads are avx2_util.h's. Only
// include from files compiled with the AVX-512 flags; static, so no
// out-of-line copy can leak into another path.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx512 {

using avx2::FillTile;
using avx2::Load32;

// internal.h's CombineLanes, lane-wise over 16 outputs: l[i] holds logical
// lane i of each. s4[i] = l[i] + l[i+4]; s2[i] = s4[i] + s4[i+2]; s2[0] + s2[1].
static inline __m512 CombineLanes16(const __m512* l) {
  const __m512 s0 = _mm512_add_ps(l[0], l[4]), s1 = _mm512_add_ps(l[1], l[5]);
  const __m512 s2 = _mm512_add_ps(l[2], l[6]), s3 = _mm512_add_ps(l[3], l[7]);
  return _mm512_add_ps(_mm512_add_ps(s0, s2), _mm512_add_ps(s1, s3));
}

// The outputs of activation row row0 + t go to y + (row0 + t) * ldy, or with
// `pairs` (a refined call's rows: 2i x's, 2i + 1 its residual's) the sum of rows
// 2i and 2i + 1 goes to y + i * ldy — the add a separate pass would do (x's part
// + the residual's, one rounding), without writing and re-reading both halves.
// Row groups start at even rows and m is even with `pairs`.

// y[...] = r[t] (one output per row) for the rows t < m of a 16-row group.
static inline void StoreRows16(__m512 r, int64_t row0, int64_t m, bool pairs, float* y,
                               int64_t ldy) {
  alignas(64) float out[16];
  _mm512_store_ps(out, r);
  const int64_t rows = m - row0 < 16 ? m - row0 : 16;
  if (pairs) {
    for (int t = 0; t < rows; t += 2) y[(row0 + t) / 2 * ldy] = out[t] + out[t + 1];
  } else {
    for (int t = 0; t < rows; ++t) y[(row0 + t) * ldy] = out[t];
  }
}

// 128-bit lane k of v to base + k * step, for the lanes whose first source row
// (first + 4k) is < rows.
static inline void StoreLanes4(__m512 v, float* base, int64_t step, int first, int64_t rows) {
  if (first < rows) _mm_storeu_ps(base, _mm512_castps512_ps128(v));
  if (first + 4 < rows) _mm_storeu_ps(base + step, _mm512_extractf32x4_ps(v, 1));
  if (first + 8 < rows) _mm_storeu_ps(base + 2 * step, _mm512_extractf32x4_ps(v, 2));
  if (first + 12 < rows) _mm_storeu_ps(base + 3 * step, _mm512_extractf32x4_ps(v, 3));
}

// y[... + n] = r[n][t] for n < 4 and the rows t < m of a 16-row group: a 4 x 16
// transpose in registers, each row's four outputs one 16-byte store (one scalar
// store per output, read back from a spilled vector, was 12% of a q4_k prefill
// tile on a Zen 4: the reload waits for the vector store).
static inline void StoreRows16x4(const __m512* r, int64_t row0, int64_t m, bool pairs, float* y,
                                 int64_t ldy) {
  const __m512 a = _mm512_unpacklo_ps(r[0], r[1]), b = _mm512_unpackhi_ps(r[0], r[1]);
  const __m512 c = _mm512_unpacklo_ps(r[2], r[3]), d = _mm512_unpackhi_ps(r[2], r[3]);
  // Row 4k + q's outputs: 128-bit lane k of t4[q].
  const __m512 t4[4] = {
      _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(c))),
      _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(c))),
      _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(b), _mm512_castps_pd(d))),
      _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(b), _mm512_castps_pd(d)))};
  const int64_t rows = m - row0 < 16 ? m - row0 : 16;
  if (pairs) {  // rows 4k + 2h, 4k + 2h + 1 -> output row row0 / 2 + 2k + h
    for (int h = 0; h < 2; ++h) {
      StoreLanes4(_mm512_add_ps(t4[2 * h], t4[2 * h + 1]), y + (row0 / 2 + h) * ldy, 2 * ldy, 2 * h,
                  rows);
    }
  } else {
    for (int q = 0; q < 4; ++q) StoreLanes4(t4[q], y + (row0 + q) * ldy, 4 * ldy, q, rows);
  }
}

// The end of a vertical kernel's tile: lanes[l][g][n] holds logical lane l of
// the 16 outputs of row group g0 + g and weight row n; each gets the fixed lane
// tree and goes to column n of y (StoreRows16's rows, `pairs` as there).
template <int TG, int RN>
static inline void StoreLaneTrees(const float (&lanes)[8][TG][RN][16], int64_t g0, int64_t m,
                                  bool pairs, float* y, int64_t ldy) {
  for (int g = 0; g < TG; ++g) {
    __m512 r[RN];
    STET_UNROLL
    for (int n = 0; n < RN; ++n) {
      __m512 l8[8];
      STET_UNROLL
      for (int l = 0; l < 8; ++l) l8[l] = _mm512_load_ps(lanes[l][g][n]);
      r[n] = CombineLanes16(l8);
    }
    int n = 0;
    for (; n + 4 <= RN; n += 4) StoreRows16x4(r + n, 16 * (g0 + g), m, pairs, y + n, ldy);
    for (; n < RN; ++n) StoreRows16(r[n], 16 * (g0 + g), m, pairs, y + n, ldy);
  }
}

// dot[g][n] += kSteps steps of vpdpbusd over row group g's vertical
// activations (x + g * gstride + 64 s: 4 bytes of each of 16 rows) and weight
// row n's broadcast 4-byte word word(n, s). The weights are the unsigned
// operand when kWeightsUnsigned, else the (biased) activations are. Exact.
template <int kSteps, bool kWeightsUnsigned, int TG, int RN, typename WordFn>
static inline void VerticalDots(const void* x, int64_t gstride, __m512i (&dot)[TG][RN],
                                WordFn&& word) {
  const auto* xb = static_cast<const uint8_t*>(x);
  STET_UNROLL
  for (int s = 0; s < kSteps; ++s) {
    __m512i xv[TG];
    STET_UNROLL
    for (int g = 0; g < TG; ++g) xv[g] = _mm512_loadu_si512(xb + g * gstride + 64 * s);
    STET_UNROLL
    for (int n = 0; n < RN; ++n) {
      const __m512i w = word(n, s);
      STET_UNROLL
      for (int g = 0; g < TG; ++g) {
        dot[g][n] = kWeightsUnsigned ? _mm512_dpbusd_epi32(dot[g][n], w, xv[g])
                                     : _mm512_dpbusd_epi32(dot[g][n], xv[g], w);
      }
    }
  }
}

// A sub-block's share of a K-quant superblock: isum[g][n] += dot[g][n] *
// sc(n), sc(n) weight row n's integer scale (vpmulld; exact in int32).
template <int TG, int RN, typename ScaleFn>
static inline void AddScaledDots(__m512i (&isum)[TG][RN], const __m512i (&dot)[TG][RN],
                                 ScaleFn&& sc) {
  STET_UNROLL
  for (int n = 0; n < RN; ++n) {
    const __m512i scn = _mm512_set1_epi32(sc(n));
    STET_UNROLL
    for (int g = 0; g < TG; ++g) {
      isum[g][n] = _mm512_add_epi32(isum[g][n], _mm512_mullo_epi32(dot[g][n], scn));
    }
  }
}

// The vertical kernels' tile over nb blocks, for RN weight rows and TG row
// groups g0..: logical lane l takes blocks l, l + 8, ... in increasing order,
// block(b, acc) adding block b's terms to acc[g][n] (16 rows each), so every
// lane keeps its own order; then the fixed lane tree (StoreLaneTrees).
template <int TG, int RN, typename BlockFn>
static inline void VerticalTile(int64_t nb, int64_t g0, int64_t m, bool pairs, float* y,
                                int64_t ldy, BlockFn&& block) {
  alignas(64) float lanes[8][TG][RN][16];
  for (int l = 0; l < 8; ++l) {
    __m512 acc[TG][RN];
    FillTile(acc, _mm512_setzero_ps());
    for (int64_t b = l; b < nb; b += 8) block(b, acc);
    STET_UNROLL
    for (int g = 0; g < TG; ++g) STET_UNROLL
    for (int n = 0; n < RN; ++n) _mm512_store_ps(lanes[l][g][n], acc[g][n]);
  }
  StoreLaneTrees<TG, RN>(lanes, g0, m, pairs, y, ldy);
}

// The vertical kernels' loop nest (matmul_q8_avx512.cc, matmul_qk*_avx512.cc) over
// weight rows [r0, r1) of w and activation row groups [0, groups): per block of
// kGroupBlock groups (their activations stay in L2 while the weight rows stream
// past), weight rows kRN at a time and the rest one at a time. Each such row
// r + n first gets row(n, its bytes) (its unpacking, once per group block), then
// the groups go kTG at a time and the rest one at a time:
// tile(std::integral_constant<int, RN>, std::integral_constant<int, TG>, r, g).
// Which rows or groups go together never reaches a value.
template <int kRN, int kTG, int64_t kGroupBlock, typename RowFn, typename TileFn>
void VerticalRows(const WeightView& w, int64_t groups, int64_t r0, int64_t r1, RowFn&& row,
                  TileFn&& tile) {
  const auto sweep = [&](auto rn, int64_t r, int64_t gb, int64_t ge) {
    for (int n = 0; n < decltype(rn)::value; ++n) {
      row(n, static_cast<const uint8_t*>(w.data) + (r + n) * w.row_bytes);
    }
    int64_t g = gb;
    for (; g + kTG <= ge; g += kTG) tile(rn, std::integral_constant<int, kTG>{}, r, g);
    for (; g < ge; ++g) tile(rn, std::integral_constant<int, 1>{}, r, g);
  };
  for (int64_t gb = 0; gb < groups; gb += kGroupBlock) {
    const int64_t ge = gb + kGroupBlock < groups ? gb + kGroupBlock : groups;
    int64_t r = r0;
    for (; r + kRN <= r1; r += kRN) sweep(std::integral_constant<int, kRN>{}, r, gb, ge);
    for (; r < r1; ++r) sweep(std::integral_constant<int, 1>{}, r, gb, ge);
  }
}

// The vertical layouts' fill (VerticalizeQ8, VerticalizeQ8K) for 16-row groups
// [g0, g1) of nb blocks of kWords 4-byte words each: for row t of group g
// (row = 16 g + t; rows at or past m are padding) and block b, at gb = g * nb + b,
// rowfn(gb, b, t, row, real) writes the row's per-block values and returns its
// q's, whose words (zero for padding, ^ 0x80 per byte when biased: q + 128) go
// to qs + (gb * kWords + s) * 64 + 4 t.
template <int kWords, typename Q, typename RowFn>
static inline void VerticalWords(int64_t g0, int64_t g1, int64_t nb, int64_t m, bool biased, Q* qs,
                                 RowFn&& rowfn) {
  const uint32_t bias = biased ? 0x80808080u : 0u;
  for (int64_t g = g0; g < g1; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t gb = g * nb + b;
      auto* out = reinterpret_cast<uint8_t*>(qs + gb * kWords * 64);
      for (int t = 0; t < 16; ++t) {
        const int64_t row = 16 * g + t;
        const bool real = row < m;
        const int8_t* q = rowfn(gb, b, t, row, real);
        for (int s = 0; s < kWords; ++s) {
          const uint32_t word = (real ? static_cast<uint32_t>(Load32(q + 4 * s)) : 0u) ^ bias;
          std::memcpy(out + s * 64 + t * 4, &word, 4);
        }
      }
    }
  }
}

// -(a * b), as C++'s unary minus of the rounded product (sign flip, nan too).
static inline __m512 NegMul(__m512 a, __m512 b) {
  return _mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(_mm512_mul_ps(a, b)),
                       _mm512_set1_epi32(static_cast<int32_t>(0x80000000u))));
}

}  // namespace stet::kernels::avx512

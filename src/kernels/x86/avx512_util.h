// AVX-512 helpers shared by kernels/x86/*_avx512.cc: the canonical lane tree
// over 8 logical-lane vectors (16 outputs at once), the strided store of a
// vertical kernel's 16 rows; unaligned 4-byte loads are avx2_util.h's. Only
// include from files compiled with the AVX-512 flags; static, so no
// out-of-line copy can leak into another path.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx512 {

using avx2::Load32;

// internal.h's CombineLanes, lane-wise over 16 outputs: l[i] holds logical
// lane i of each. s4[i] = l[i] + l[i+4]; s2[i] = s4[i] + s4[i+2]; s2[0] + s2[1].
static inline __m512 CombineLanes16(const __m512* l) {
  const __m512 s0 = _mm512_add_ps(l[0], l[4]), s1 = _mm512_add_ps(l[1], l[5]);
  const __m512 s2 = _mm512_add_ps(l[2], l[6]), s3 = _mm512_add_ps(l[3], l[7]);
  return _mm512_add_ps(_mm512_add_ps(s0, s2), _mm512_add_ps(s1, s3));
}

// y[(row0 + t) * ldy] = r[t] for the rows t of a 16-row group that are < m.
static inline void StoreRows16(__m512 r, int64_t row0, int64_t m, float* y, int64_t ldy) {
  alignas(64) float out[16];
  _mm512_store_ps(out, r);
  for (int t = 0; t < 16 && row0 + t < m; ++t) y[(row0 + t) * ldy] = out[t];
}

// The end of a vertical kernel's tile: lanes[l][g][n] holds logical lane l of
// the 16 outputs of row group g0 + g and weight row n; each gets the fixed lane
// tree and goes to y[(16 (g0 + g) + t) * ldy + n] for the rows t < m.
template <int TG, int RN>
static inline void StoreLaneTrees(const float (&lanes)[8][TG][RN][16], int64_t g0, int64_t m,
                                  float* y, int64_t ldy) {
  for (int g = 0; g < TG; ++g) {
    for (int n = 0; n < RN; ++n) {
      __m512 l8[8];
      for (int l = 0; l < 8; ++l) l8[l] = _mm512_load_ps(lanes[l][g][n]);
      StoreRows16(CombineLanes16(l8), 16 * (g0 + g), m, y + n, ldy);
    }
  }
}

// The vertical kernels' loop nest (matmul_q8_avx512.cc, matmul_qk*_avx512.cc) over
// weight rows [r0, r1) and activation row groups [0, groups): per block of
// kGroupBlock groups (their activations stay in L2 while the weight rows stream
// past), weight rows kRN at a time and the rest one at a time:
// sweep(std::integral_constant<int, RN>, r, gb, ge) for RN rows from r over groups
// [gb, ge). Which rows or groups go together never reaches a value.
template <int kRN, int64_t kGroupBlock, typename Sweep>
void VerticalSweeps(int64_t groups, int64_t r0, int64_t r1, Sweep&& sweep) {
  for (int64_t gb = 0; gb < groups; gb += kGroupBlock) {
    const int64_t ge = gb + kGroupBlock < groups ? gb + kGroupBlock : groups;
    int64_t r = r0;
    for (; r + kRN <= r1; r += kRN) sweep(std::integral_constant<int, kRN>{}, r, gb, ge);
    for (; r < r1; ++r) sweep(std::integral_constant<int, 1>{}, r, gb, ge);
  }
}

// Row groups [gb, ge), kTG at a time and the rest one at a time:
// tile(std::integral_constant<int, TG>, g).
template <int kTG, typename TileFn>
void GroupTiles(int64_t gb, int64_t ge, TileFn&& tile) {
  int64_t g = gb;
  for (; g + kTG <= ge; g += kTG) tile(std::integral_constant<int, kTG>{}, g);
  for (; g < ge; ++g) tile(std::integral_constant<int, 1>{}, g);
}

// -(a * b), as C++'s unary minus of the rounded product (sign flip, nan too).
static inline __m512 NegMul(__m512 a, __m512 b) {
  return _mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(_mm512_mul_ps(a, b)),
                       _mm512_set1_epi32(static_cast<int32_t>(0x80000000u))));
}

}  // namespace stet::kernels::avx512

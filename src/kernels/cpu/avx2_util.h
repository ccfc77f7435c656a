// AVX2 helpers shared by kernels/cpu/*_avx2.cc: the canonical lane tree on a
// __m256, exact integer horizontal sums, tail masks. Only include from files
// compiled with -mavx2 -mfma -mf16c (or the AVX-512 flags). Bitwise twins of
// kernels/internal.h. Static, so an out-of-line copy built with AVX-512 flags
// can never be linked into the AVX2 path.
#pragma once

#include <immintrin.h>

#include <cstdint>

// Fully unrolls a loop over a small compile-time count (tile rows, lanes), so
// arrays of vectors indexed by it live in registers. GCC at -O2 would keep them
// in memory otherwise.
#define STET_UNROLL _Pragma("GCC unroll 16")

namespace stet::kernels::avx2 {

// The fixed lane tree of internal.h's CombineLanes, on a vector:
// s4[i] = l[i] + l[i+4]; s2[i] = s4[i] + s4[i+2]; s2[0] + s2[1].
static inline float CombineLanes8(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// Exact sum of 8 int32 (no overflow in any caller; integer addition is associative).
static inline int32_t HsumEpi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// All-ones in the first n (0..8) 32-bit lanes.
static inline __m256i TailMask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace stet::kernels::avx2

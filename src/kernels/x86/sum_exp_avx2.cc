// AVX2 SumExpShifted. Numerics: the exps 8 at a time with ExpF8 (lane for lane
// ExpF's bits, math_test.cc) of y = x - shift (the same one subtraction per
// element), then added into one float s one by one in index order — the
// serial sum of ref/sum_exp.cc. Only adds that cannot change s are left out:
// per chunk of 64 elements, an e below SumSkipBelow(s) (internal.h; s only
// grows, so the bound of any earlier s holds), and a vector whose every y is
// below SumSkipArgBelow is not even exp'ed. With a large vocabulary most exps
// are far below s's last bit, so most of the row costs a subtract and a
// compare and the serial adds are few. Chunk c + 1 is tested against the bound
// of s before chunk c's adds, so its exps overlap those adds; one loop per
// chunk over its kept lanes keeps mispredicted branches few. On a 262144-logit
// Gemma 3 row (bench/kernels/sampler_bench.cc, a shared Sapphire Rapids VM):
// 0.24-0.29 ms, against 0.41 ms for the same chunks without the skips, 0.72 ms
// for one branch per 8 lanes, 4 ms scalar. AVX-512 uses this path (no 16-lane
// ExpF twin yet). Equal to ref bit for bit (sum_exp_test.cc).
#include <immintrin.h>

#include "kernels/internal.h"
#include "numerics/math_avx2.h"

namespace stet::kernels::avx2 {

namespace {

constexpr int kChunk = 64;  // elements tested against one bound

inline unsigned MoveMask(__m256 m) { return static_cast<unsigned>(_mm256_movemask_ps(m)); }

// The vectors of x[0, 64) with a lane whose y is not below arg_below (NaN included).
inline unsigned VectorsToExp(const float* x, __m256 sh, __m256 arg_below) {
  unsigned need = 0;
  for (int v = 0; v < kChunk / 8; ++v) {
    const __m256 y = _mm256_sub_ps(_mm256_loadu_ps(x + 8 * v), sh);
    need |= (MoveMask(_mm256_cmp_ps(y, arg_below, _CMP_NLT_UQ)) != 0 ? 1u : 0u) << v;
  }
  return need;
}

// The exps of the `need` vectors of x[0, 64) into e; returns the lanes that may
// change the sum (not e < below: NaNs are kept, and every lane while below is 0).
inline uint64_t ExpChunk(const float* x, __m256 sh, __m256 below, unsigned need, float* e) {
  uint64_t keep = 0;
  while (need != 0) {
    const int v = __builtin_ctz(need);
    need &= need - 1;
    const __m256 ev = ExpF8(_mm256_sub_ps(_mm256_loadu_ps(x + 8 * v), sh));
    _mm256_store_ps(e + 8 * v, ev);
    keep |= static_cast<uint64_t>(MoveMask(_mm256_cmp_ps(ev, below, _CMP_NLT_UQ))) << (8 * v);
  }
  return keep;
}

// Tests chunk x[0, 64) against the bound of a sum s (see SumExpShifted): its
// e's into e, the lanes to add returned.
inline uint64_t PrepareChunk(const float* x, __m256 sh, float s, float* e) {
  const float below = SumSkipBelow(s);
  const unsigned need = VectorsToExp(x, sh, _mm256_set1_ps(SumSkipArgBelow(below)));
  return need == 0 ? 0 : ExpChunk(x, sh, _mm256_set1_ps(below), need, e);
}

}  // namespace

float SumExpShifted(const float* x, int64_t n, float shift) {
  const __m256 sh = _mm256_set1_ps(shift);
  float s = 0.0f;
  const int64_t chunks = n / kChunk;
  alignas(32) float e[2][kChunk];
  // Software pipeline: chunk c + 1 is tested against the bound of s as it was
  // before chunk c's adds (s only grows, so an older bound is as exact, it just
  // skips less), so its exps need not wait for those adds.
  uint64_t keep = chunks > 0 ? PrepareChunk(x, sh, s, e[0]) : 0;
  for (int64_t c = 0; c < chunks; ++c) {
    const uint64_t next =
        c + 1 < chunks ? PrepareChunk(x + (c + 1) * kChunk, sh, s, e[(c + 1) & 1]) : 0;
    const float* ec = e[c & 1];
    while (keep != 0) {
      s += ec[__builtin_ctzll(keep)];
      keep &= keep - 1;
    }
    keep = next;
  }
  for (int64_t i = chunks * kChunk; i < n; ++i) s += ExpF(x[i] - shift);
  return s;
}

}  // namespace stet::kernels::avx2

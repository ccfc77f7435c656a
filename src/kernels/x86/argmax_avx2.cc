// AVX2 Argmax, equal to ref/argmax.cc's serial strict-> loop (argmax_test.cc).
// That loop returns 0 when x[0] is NaN; otherwise the first index holding M,
// the largest non-NaN value (NaNs never compare greater; before M's first
// index every value is below M, after it none is above). Two passes: M by
// vector max ignoring NaNs (max order is free: max is exact), then the first
// index equal to M (== also matches a zero of the other sign, as the serial
// loop's > does not move past it).
#include <immintrin.h>

#include <cmath>

#include "kernels/internal.h"

namespace stet::kernels::avx2 {

namespace {

// The largest non-NaN x[i]; -inf if there is none.
float MaxIgnoringNan(const float* x, int64_t n) {
  // _mm256_max_ps(a, b) returns b when either is NaN: with the accumulator as b
  // (never NaN, starts at -inf), NaN inputs are skipped.
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  __m256 m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
    m2 = _mm256_max_ps(_mm256_loadu_ps(x + i + 16), m2);
    m3 = _mm256_max_ps(_mm256_loadu_ps(x + i + 24), m3);
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
  m0 = _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3));
  alignas(32) float l[8];
  _mm256_store_ps(l, m0);
  float m = -INFINITY;
  for (float v : l) m = v > m ? v : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

}  // namespace

int64_t Argmax(const float* x, int64_t n) {
  if (n <= 1 || std::isnan(x[0])) return 0;
  const float m = MaxIgnoringNan(x, n);
  const __m256 mv = _mm256_set1_ps(m);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const int eq = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), mv, _CMP_EQ_OQ));
    if (eq != 0) return i + __builtin_ctz(static_cast<unsigned>(eq));
  }
  for (; i < n; ++i) {
    if (x[i] == m) return i;
  }
  return 0;  // not reached: x[0] is not NaN, so some x[i] == m
}

}  // namespace stet::kernels::avx2

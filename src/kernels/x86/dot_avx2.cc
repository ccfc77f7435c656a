// AVX2 Dot. Numerics: one 8-lane accumulator, lane = fma(a_k, b_k, lane) in
// increasing k (the tail updates only its real lanes), fixed lane tree: equal
// to ref/dot.cc bit for bit (dot_test.cc). Latency-bound by design: splitting
// into more accumulators would change the order.
#include <immintrin.h>

#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx2 {

float Dot(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), acc);
  if (k < n) {
    const __m256i mask = TailMask(n - k);
    const __m256 next =
        _mm256_fmadd_ps(_mm256_maskload_ps(a + k, mask), _mm256_maskload_ps(b + k, mask), acc);
    acc = _mm256_blendv_ps(acc, next, _mm256_castsi256_ps(mask));
  }
  return CombineLanes8(acc);
}

}  // namespace stet::kernels::avx2

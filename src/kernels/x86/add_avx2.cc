// AVX2 Add. Numerics: elementwise a + b, one rounding; equal to ref/add.cc bit
// for bit (add_test.cc).
#include <immintrin.h>

#include "kernels/internal.h"

namespace stet::kernels::avx2 {

void Add(const float* a, const float* b, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace stet::kernels::avx2

// AVX2 GeGlu. Numerics: elementwise GeluTanhF8(gate) * up; GeluTanhF8 is
// lane-for-lane equal to GeluTanhF (math_avx2.h), the tail uses GeluTanhF:
// equal to ref/geglu.cc bit for bit (geglu_test.cc).
#include <immintrin.h>

#include "kernels/internal.h"
#include "numerics/math_avx2.h"

namespace stet::kernels::avx2 {

void GeGlu(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(GeluTanhF8(g), _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) out[i] = GeluTanhF(gate[i]) * up[i];
}

}  // namespace stet::kernels::avx2

// AVX2 SwiGlu. Numerics: elementwise SiluF8(gate) * up; SiluF8 is lane-for-lane
// equal to SiluF (math_avx2.h), the tail uses SiluF: equal to ref/swiglu.cc bit
// for bit (swiglu_test.cc).
#include <immintrin.h>

#include "kernels/internal.h"
#include "numerics/math_avx2.h"

namespace stet::kernels::avx2 {

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(SiluF8(g), _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) out[i] = SiluF(gate[i]) * up[i];
}

}  // namespace stet::kernels::avx2

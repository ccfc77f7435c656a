// AVX2 RmsNorm. Numerics: sum of squares is the canonical 8-lane sum (fma,
// tail updates only real lanes, fixed tree); scale = 1/sqrt(sum/n + eps) in
// scalar IEEE ops; y = (x*scale)*w. Equal to ref/rms_norm.cc bit for bit (rms_norm_test.cc).
#include <immintrin.h>

#include <cmath>

#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx2 {

void RmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* y) {
  for (int64_t r = 0; r < m; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    __m256 acc = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
      const __m256 v = _mm256_loadu_ps(xr + k);
      acc = _mm256_fmadd_ps(v, v, acc);
    }
    if (k < n) {
      const __m256i mask = TailMask(n - k);
      const __m256 v = _mm256_maskload_ps(xr + k, mask);
      acc = _mm256_blendv_ps(acc, _mm256_fmadd_ps(v, v, acc), _mm256_castsi256_ps(mask));
    }
    const float sum = CombineLanes8(acc);
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    const __m256 sv = _mm256_set1_ps(scale);
    k = 0;
    for (; k + 8 <= n; k += 8) {
      const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xr + k), sv);
      _mm256_storeu_ps(yr + k, _mm256_mul_ps(v, _mm256_loadu_ps(w + k)));
    }
    for (; k < n; ++k) yr[k] = (xr[k] * scale) * w[k];
  }
}

}  // namespace stet::kernels::avx2

// AVX2 Rope. Numerics: per pair x0' = x0*c - x1*s, x1' = x0*s + x1*c as separate
// mul and add/sub (no fma; addsub computes exactly these), tail in scalar with
// the same ops: equal to ref/rope.cc bit for bit (rope_test.cc).
#include <immintrin.h>

#include "kernels/internal.h"

namespace stet::kernels::avx2 {

namespace {

void RopeNormal(float* xh, int half, const float* cos, const float* sin) {
  const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  int i = 0;
  for (; i + 4 <= half; i += 4) {
    const __m256 xv = _mm256_loadu_ps(xh + 2 * i);
    const __m256 c = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(cos + i)), dup);
    const __m256 s = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(sin + i)), dup);
    const __m256 swapped = _mm256_permute_ps(xv, _MM_SHUFFLE(2, 3, 0, 1));
    // Even lanes: x0*c - x1*s; odd lanes: x1*c + x0*s.
    _mm256_storeu_ps(xh + 2 * i, _mm256_addsub_ps(_mm256_mul_ps(xv, c), _mm256_mul_ps(swapped, s)));
  }
  RopePairs(xh, i, half, RopeStyle::kNormal, cos, sin);
}

void RopeNeox(float* xh, int half, const float* cos, const float* sin) {
  int i = 0;
  for (; i + 8 <= half; i += 8) {
    const __m256 x0 = _mm256_loadu_ps(xh + i), x1 = _mm256_loadu_ps(xh + i + half);
    const __m256 c = _mm256_loadu_ps(cos + i), s = _mm256_loadu_ps(sin + i);
    _mm256_storeu_ps(xh + i, _mm256_sub_ps(_mm256_mul_ps(x0, c), _mm256_mul_ps(x1, s)));
    _mm256_storeu_ps(xh + i + half, _mm256_add_ps(_mm256_mul_ps(x0, s), _mm256_mul_ps(x1, c)));
  }
  RopePairs(xh, i, half, RopeStyle::kNeox, cos, sin);
}

}  // namespace

void Rope(float* x, int n_heads, int head_dim, int rot_dim, const float* cos, const float* sin,
          RopeStyle style) {
  for (int h = 0; h < n_heads; ++h) {
    float* xh = x + static_cast<int64_t>(h) * head_dim;
    if (style == RopeStyle::kNormal) {
      RopeNormal(xh, rot_dim / 2, cos, sin);
    } else {
      RopeNeox(xh, rot_dim / 2, cos, sin);
    }
  }
}

}  // namespace stet::kernels::avx2

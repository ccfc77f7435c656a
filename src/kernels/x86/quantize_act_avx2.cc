// AVX2 activation quantization, bitwise equal to ref/quantize_act.cc: the max
// is exact, d = amax/127 and 1/d are the same scalar IEEE divisions, x*id is one
// rounding, _mm256_round_ps(nearest) == nearbyint, and the clamp to [-127, 127]
// (nan -> -127) is the reference's. Row-local (rule R6); pinned by quantize_act_test.cc.
#include <immintrin.h>

#include <cstring>

#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx2 {

namespace {

inline __m256 Abs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

inline float HMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline float ScaleFromMax(float amax, float* id) {
  const float d = amax / 127.0f;
  *id = d != 0.0f ? 1.0f / d : 0.0f;
  return d;
}

// Quantizes 32 floats with inverse scale id into q; returns the q's of the
// first and second 16 as int32 lanes (each lane the sum of two q's) for exact
// sums. The values are clamped to [-127, 127] before the conversion, so the
// int32s are the bytes stored (packs never saturates).
inline void Quantize32(const float* x, __m256 id, int8_t* q, __m256i* lo, __m256i* hi) {
  __m256i v[4];
  STET_UNROLL
  for (int j = 0; j < 4; ++j) {
    const __m256 t = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * j), id);
    __m256 r = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // Clamp like the reference: max_ps returns its second operand for nan, so
    // nan -> -127; +-inf (id = inf when d is tiny) -> +-127.
    r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    v[j] = _mm256_cvtps_epi32(r);
  }
  const __m256i p16 =
      _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
  // packs works per 128-bit half; put the 4-byte groups back in element order.
  const __m256i p = _mm256_permutevar8x32_epi32(p16, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), p);
  *lo = _mm256_add_epi32(v[0], v[1]);
  *hi = _mm256_add_epi32(v[2], v[3]);
}

inline float MaxAbs(const float* x, int n) {
  __m256 m = _mm256_setzero_ps();
  // max_ps(a, m) returns m when a is nan: the reference's `a > amax ? a : amax`.
  for (int j = 0; j < n; j += 8) m = _mm256_max_ps(Abs(_mm256_loadu_ps(x + j)), m);
  return HMax(m);
}

}  // namespace

void QuantizeActQ8(const float* x, ActQ8* a) {
  FillActQ8(x, a, [](const float* xb, int8_t* qb, int32_t* qsum) {
    float id;
    const float d = ScaleFromMax(MaxAbs(xb, kQK), &id);
    __m256i lo, hi;
    Quantize32(xb, _mm256_set1_ps(id), qb, &lo, &hi);
    *qsum = HsumEpi32(_mm256_add_epi32(lo, hi));
    return d;
  });
}

void QuantizeActQ8K(const float* x, ActQ8K* a) {
  FillActQ8K(x, a, [](const float* xb, int8_t* q, int16_t* bsums) {
    float id;
    const float d = ScaleFromMax(MaxAbs(xb, kQKK), &id);
    const __m256 idv = _mm256_set1_ps(id);
    for (int g = 0; g < kQKK / 32; ++g) {
      __m256i lo, hi;
      Quantize32(xb + 32 * g, idv, q + 32 * g, &lo, &hi);
      bsums[2 * g] = static_cast<int16_t>(HsumEpi32(lo));
      bsums[2 * g + 1] = static_cast<int16_t>(HsumEpi32(hi));
    }
    return d;
  });
}

}  // namespace stet::kernels::avx2

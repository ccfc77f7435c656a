// AVX2+FMA twins of math.h, lane-for-lane bitwise equal to the scalar functions
// (same operations, same order, same roundings). Only include from code compiled
// with -mavx2 -mfma -mf16c (kernels/x86/*_avx2.cc).
#pragma once

#include <immintrin.h>

#include "numerics/math.h"

namespace stet {

inline __m256 ExpF8(__m256 x) {
  using namespace math_internal;
  const __m256 is_nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 too_big = _mm256_cmp_ps(x, _mm256_set1_ps(kExpMax), _CMP_GT_OQ);
  const __m256 too_small = _mm256_cmp_ps(x, _mm256_set1_ps(kExpMin), _CMP_LT_OQ);
  const __m256 xc =
      _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(kExpMax)), _mm256_set1_ps(kExpMin));
  const __m256 magic = _mm256_set1_ps(kRoundMagic);
  const __m256 t = _mm256_add_ps(_mm256_mul_ps(xc, _mm256_set1_ps(kLog2e)), magic);
  const __m256 n = _mm256_sub_ps(t, magic);
  __m256 r = _mm256_sub_ps(xc, _mm256_mul_ps(n, _mm256_set1_ps(kLn2Hi)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(kLn2Lo)));
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  const __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, r);
  p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvttps_epi32(n);
  // n1 = n / 2 truncating toward zero, as C++ integer division does.
  const __m256i sign = _mm256_srli_epi32(ni, 31);
  const __m256i n1 = _mm256_srai_epi32(_mm256_add_epi32(ni, sign), 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  __m256 res = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  res = _mm256_blendv_ps(res, _mm256_set1_ps(INFINITY), too_big);
  res = _mm256_blendv_ps(res, _mm256_setzero_ps(), too_small);
  res = _mm256_blendv_ps(res, x, is_nan);
  return res;
}

inline __m256 SiluF8(__m256 x) {
  const __m256 neg = _mm256_xor_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 res = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), ExpF8(neg)));
  const __m256 is_minus_inf = _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
  return _mm256_blendv_ps(res, _mm256_set1_ps(-0.0f), is_minus_inf);
}

// Lane-for-lane GeluTanhF: the same operations in the same order.
inline __m256 GeluTanhF8(__m256 x) {
  const __m256 x2 = _mm256_mul_ps(x, x);
  const __m256 x3 = _mm256_mul_ps(x2, x);
  const __m256 s = _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps(kGeluA), x3));
  const __m256 z = _mm256_mul_ps(_mm256_set1_ps(kGelu2C), s);
  const __m256 neg = _mm256_xor_ps(z, _mm256_set1_ps(-0.0f));
  const __m256 res = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), ExpF8(neg)));
  const __m256 is_minus_inf = _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
  return _mm256_blendv_ps(res, _mm256_set1_ps(-0.0f), is_minus_inf);
}

}  // namespace stet

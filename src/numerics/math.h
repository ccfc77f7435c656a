// stet's own transcendental functions (numerics rule R5): fixed polynomial
// steps, no libm, so every machine and every SIMD path gets the same bits.
// The AVX2 twins live in math_avx2.h and are bitwise equal (math_test.cc).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace stet {

namespace math_internal {
// exp: x = n*ln2 + r, |r| <= ln2/2; e^r by a degree-6 polynomial (Horner, explicit fma);
// 2^n by exponent bits. Round-to-nearest of x*log2(e) via the 1.5*2^23 trick (exact).
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;  // 9 significant bits: n*kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23
constexpr float kExpMax = 0x1.62e42ep+6f;   // 88.7228317: the largest x with finite e^x
constexpr float kExpMin = -0x1.5d589ep+6f;  // -87.3365402: the smallest x with e^x >= FLT_MIN;
                                            // below: 0 (no subnormal results)
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
}  // namespace math_internal

// e^x for float; max error 1.01 ulp measured on [kExpMin, kExpMax] (math_test bound 1.25);
// exp(-inf) = 0, exp(nan) = nan, x > kExpMax gives +inf. Results below FLT_MIN
// (x < kExpMin) are flushed to +0, never subnormal.
inline float ExpF(float x) {
  using namespace math_internal;
  if (x != x) return x;
  if (x > kExpMax) return INFINITY;
  if (x < kExpMin) return 0.0f;
  const float t = x * kLog2e + kRoundMagic;  // no fma: two roundings, same on every path
  const float n = t - kRoundMagic;
  float r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = kP0;
  p = std::fma(p, r, kP1);
  p = std::fma(p, r, kP2);
  p = std::fma(p, r, kP3);
  p = std::fma(p, r, kP4);
  p = std::fma(p, r, kP5);
  const float r2 = r * r;
  p = std::fma(p, r2, r);
  p = p + 1.0f;
  // 2^n, split in two factors so n = 128 (x near kExpMax) does not overflow the exponent.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni / 2, n2 = ni - n1;
  uint32_t b1 = static_cast<uint32_t>(n1 + 127) << 23, b2 = static_cast<uint32_t>(n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  return (p * s1) * s2;
}

// SiLU(x) = x / (1 + e^-x). Division is correctly rounded (IEEE), so allowed.
// Max error 2.25 ulp measured on [-88.72, inf) (bound 3). SiLU(-inf) is its limit -0 (the quotient
// would be -inf/inf = nan). For x < -88.72, where e^-x overflows, the result is -0 although the
// true value is as large as -4e-37.
inline float SiluF(float x) {
  if (x == -INFINITY) return -0.0f;
  return x / (1.0f + ExpF(-x));
}

// tanh for float (Gemma 2's soft-capping), from ExpF: sign(x) (1 - e) / (1 + e), e = e^(-2|x|).
// Fixed steps, no fma, no libm; absolute error below 2e-7 (math_test.cc): near 0, where 1 - e
// cancels, the relative error grows, the absolute one does not. TanhF(+-inf) = +-1, nan -> nan.
inline float TanhF(float x) {
  if (x != x) return x;
  const float a = std::fabs(x);
  const float e = ExpF(-2.0f * a);
  const float t = (1.0f - e) / (1.0f + e);
  return std::copysign(t, x);
}

// GELU, tanh approximation (Gemma's FFN): 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
// computed as x / (1 + e^(-2u)) (the same value: 0.5 (1 + tanh u) = sigmoid(2u)), which has no
// cancellation for negative x and no tanh. Fixed steps, no fma: x2 = x*x, x3 = x2*x,
// s = x + kGeluA*x3, z = kGelu2C*s (= 2u), then SiLU's quotient. GeluTanhF(-inf) = -0 (its
// limit); where x^3 overflows the value is the limit (x or -0). Bound in math_test.cc.
inline constexpr float kGeluA = 0.044715f;
inline constexpr float kGelu2C = 1.5957691216057308f;  // 2 * sqrt(2 / pi)
inline float GeluTanhF(float x) {
  if (x == -INFINITY) return -0.0f;
  const float x2 = x * x;
  const float x3 = x2 * x;
  const float s = x + kGeluA * x3;
  const float z = kGelu2C * s;
  return x / (1.0f + ExpF(-z));
}

// Natural log for float (used for log-softmax in the sampler): evaluated in double and
// rounded once, so <= 0.501 ulp. log(0) = -inf, log(x < 0) = nan, log(inf) = inf.
float LogF(float x);

// Double-precision versions for tables computed once (RoPE frequencies and
// angles); no libm. Measured max errors (bounds in math_test.cc):
//  ExpD   0.75 ulp; > 709.8 gives +inf, < -745.2 gives 0, subnormal results rounded once.
//  LogD   0.55 ulp; log(0) = -inf, log(x < 0) = nan.
//  PowD   0.56 ulp for RoPE's base^(-2i/d), 0.95 ulp for |exponent * log(base)| <= 700.
//         Domain base >= 0 (negative base: nan); pow(x, 0) = pow(1, y) = 1 as in C99.
//  SinCosD 0.75 ulp for |x| <= 2^28 (exact Cody-Waite reduction, no loss near multiples of
//         pi/2); nan for |x| > 2^28, inf and nan. sin(-0) = -0.
double ExpD(double x);
double LogD(double x);
double PowD(double base, double exponent);
void SinCosD(double x, double* sin_out, double* cos_out);

}  // namespace stet

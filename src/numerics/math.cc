// Out-of-line transcendental functions (numerics rule R5): LogF for the sampler and
// the double-precision ExpD/LogD/PowD/SinCosD that build RoPE tables. Every result is
// a fixed sequence of IEEE operations (+ - * /, std::fma) on literal constants, so it
// is the same on every machine; no libm. Accuracy is pinned by tests/numerics/math_test.cc.
#include "numerics/math.h"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "numerics/quadrant.h"

namespace stet {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// c[0] z^(N-1) + ... + c[N-1] by Horner's rule, one std::fma per step in this order.
template <size_t N>
double Horner(double z, const double (&c)[N]) {
  double p = c[0];
  for (size_t i = 1; i < N; ++i) p = std::fma(p, z, c[i]);
  return p;
}

// Error-free transformations: the pair (s, e) is exactly a + b, resp. a * b.
inline void TwoSum(double a, double b, double* s, double* e) {
  *s = a + b;
  const double bb = *s - a;
  *e = (a - (*s - bb)) + (b - bb);
}
inline void FastTwoSum(double a, double b, double* s, double* e) {  // needs |a| >= |b| or a == 0
  *s = a + b;
  *e = b - (*s - a);
}
inline void TwoProd(double a, double b, double* p, double* e) {
  *p = a * b;
  *e = std::fma(a, b, -*p);
}

// ln 2 = kLn2Hi + kLn2Lo to ~2^-148. kLn2Hi has 42 significant bits, so k * kLn2Hi is
// exact for |k| < 2^11 (every exponent a double can have).
constexpr double kLn2Hi = 0x1.62e42fefa38p-1;
constexpr double kLn2Lo = 0x1.ef35793c7673p-45;
constexpr double kLn2 = 0x1.62e42fefa39efp-1;
constexpr double kLog2e = 0x1.71547652b82fep+0;
constexpr double kRoundMagic = 0x1.8p+52;  // 1.5 * 2^52: x + it - it rounds x to an integer
constexpr double kSqrt2 = 0x1.6a09e667f3bcdp+0;

// Splits finite x > 0 into x = 2^k * m with m in [sqrt(1/2), sqrt(2)] (both exact).
inline double SplitExponent(double x, int* k) {
  uint64_t u = std::bit_cast<uint64_t>(x);
  int e = 0;
  if (u < 0x0010000000000000ull) {  // subnormal: scale into the normal range first
    u = std::bit_cast<uint64_t>(x * 0x1p54);
    e = -54;
  }
  e += static_cast<int>(u >> 52) - 1023;
  double m = std::bit_cast<double>((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);  // [1, 2)
  if (m > kSqrt2) {
    m *= 0.5;
    ++e;
  }
  *k = e;
  return m;
}

// log(x) as a double-double hi + lo for finite x > 0, accurate to ~2^-59 absolute
// (relative ~2^-62 or better when |log x| >= 1). log(m) = 2 atanh(s), s = (m-1)/(m+1),
// |s| <= 0.1716: 2s carried as a double-double, the series tail 2s^3(1/3 + s^2/5 + ...)
// in plain double (it is below 1% of 2s). Series truncated after s^23 (rel. error < 2^-60).
void LogDD(double x, double* hi, double* lo) {
  int k;
  const double m = SplitExponent(x, &k);
  const double f = m - 1.0;  // exact (Sterbenz)
  double u_hi, u_lo;
  FastTwoSum(2.0, f, &u_hi, &u_lo);  // 2 + f = 1 + m, exactly as a pair
  const double s_hi = f / u_hi;
  // f - s_hi * u_hi is exactly representable (remainder of a correctly rounded division).
  const double rem = std::fma(-s_hi, u_hi, f) - s_hi * u_lo;
  const double s_lo = rem / u_hi;
  const double z = s_hi * s_hi;
  const double p = Horner(z, {1.0 / 23.0, 1.0 / 21.0, 1.0 / 19.0, 1.0 / 17.0, 1.0 / 15.0,
                              1.0 / 13.0, 1.0 / 11.0, 1.0 / 9.0, 1.0 / 7.0, 1.0 / 5.0, 1.0 / 3.0});
  const double tail = (2.0 * s_hi) * z * p;
  const double kd = static_cast<double>(k);
  double h, e;
  FastTwoSum(kd * kLn2Hi, 2.0 * s_hi, &h, &e);  // |k ln2| >= 0.69 > |2s| unless k == 0
  const double l = e + (kd * kLn2Lo + (2.0 * s_lo + tail));
  FastTwoSum(h, l, hi, lo);
}

// e^(xh + xl) for a double-double argument with |xl| <= ulp(xh). x = n ln2 + r,
// |r| <= ln2/2 (Cody-Waite, exact first step), e^r by its Taylor series through r^14
// (truncation < 2^-57 relative), 1 + r summed error-free; 2^n applied in two exact factors
// so that subnormal results are rounded once and n = 1024 does not overflow early.
double ExpDD(double xh, double xl) {
  if (xh != xh) return xh;
  if (xh > 709.8) return kInf;  // e^709.8 > DBL_MAX
  if (xh < -745.2) return 0.0;  // e^-745.2 < half the smallest subnormal
  const double n = (xh * kLog2e + kRoundMagic) - kRoundMagic;
  const double a = xh - n * kLn2Hi;  // exact: n * kLn2Hi is exact and Sterbenz applies
  double r, r_err;
  TwoSum(a, -(n * kLn2Lo), &r, &r_err);
  const double r_lo = r_err + xl;
  // Q(r) = sum_{j>=2} r^(j-2) / j!, so e^r = 1 + r + r^2 Q(r).
  const double q =
      Horner(r, {1.0 / 87178291200.0, 1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0,
                 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0,
                 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5});  // 1/14! ... 1/2!
  // e^(r + r_lo) = e^r + r_lo e^r: r_lo may be as large as ulp(xh) (PowD), so it is
  // scaled by e^r, not just added.
  const double r2q = (r * r) * q;
  const double small = std::fma(r_lo, (1.0 + r) + r2q, r2q);
  double s, s_err;
  FastTwoSum(1.0, r, &s, &s_err);
  const double y = s + (s_err + small);
  const int64_t ni = static_cast<int64_t>(n);
  const int64_t n1 = ni / 2, n2 = ni - n1;
  const double f1 = std::bit_cast<double>(static_cast<uint64_t>(n1 + 1023) << 52);
  const double f2 = std::bit_cast<double>(static_cast<uint64_t>(n2 + 1023) << 52);
  return (y * f1) * f2;
}

// pi/2 = kPio2_1 + kPio2_2 + kPio2_3 + kPio2_4 to ~2^-200. The first two parts have 24
// significant bits, so n * part is exact for |n| < 2^29.
constexpr double kPio2_1 = 0x1.921fb4p+0;
constexpr double kPio2_2 = 0x1.4442dp-24;
constexpr double kPio2_3 = 0x1.8469898cc517p-48;
constexpr double kPio2_4 = 0x1.b839a252049c1p-104;
constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
constexpr double kSinCosMaxArg = 0x1p28;

// Taylor coefficients (exact quotients rounded once at compile time).
constexpr double kF3 = 6.0, kF5 = 120.0, kF7 = 5040.0, kF9 = 362880.0, kF11 = 39916800.0,
                 kF13 = 6227020800.0, kF15 = 1307674368000.0, kF17 = 355687428096000.0;
constexpr double kF4 = 24.0, kF6 = 720.0, kF8 = 40320.0, kF10 = 3628800.0, kF12 = 479001600.0,
                 kF14 = 87178291200.0, kF16 = 20922789888000.0, kF18 = 6402373705728000.0;

// sin and cos of yh + yl, |yh| <= pi/4 (+ a hair), |yl| <= ulp(yh). Series through
// y^17 (sin) and y^18 (cos): truncation < 2^-62 relative on this interval.
void SinCosKernel(double yh, double yl, double* s, double* c) {
  double z, z_lo;
  TwoProd(yh, yh, &z, &z_lo);
  const double ps = Horner(z, {1.0 / kF17, -1.0 / kF15, 1.0 / kF13, -1.0 / kF11, 1.0 / kF9,
                               -1.0 / kF7, 1.0 / kF5, -1.0 / kF3});
  // sin(yh + yl) = sin(yh) + yl cos(yh) + O(yl^2), cos(yh) ~ 1 - z/2 is plenty for yl.
  *s = yh + std::fma(yh * z, ps, yl * (1.0 - 0.5 * z));
  const double pc = Horner(z, {-1.0 / kF18, 1.0 / kF16, -1.0 / kF14, 1.0 / kF12, -1.0 / kF10,
                               1.0 / kF8, -1.0 / kF6, 1.0 / kF4});
  // cos = 1 - z/2 + z^2 pc - yl sin(yh): 1 - z/2 recovered with its rounding error.
  const double hz = 0.5 * z;
  const double w = 1.0 - hz;
  const double w_err = (1.0 - w) - hz;
  *c = w + (((w_err - 0.5 * z_lo) + (z * z) * pc) - yh * yl);
}

}  // namespace

float LogF(float x) {
  if (x != x) return x;
  if (x < 0.0f) return std::numeric_limits<float>::quiet_NaN();
  if (x == 0.0f) return -std::numeric_limits<float>::infinity();
  if (x == std::numeric_limits<float>::infinity()) return x;
  // Evaluated in double (relative error < 2^-50), then rounded once to float.
  int k;
  const double m = SplitExponent(static_cast<double>(x), &k);
  const double f = m - 1.0;
  const double s = f / (2.0 + f);  // 2 + f exact: m has 24 significant bits
  const double z = s * s;
  const double p = Horner(z, {1.0 / 13.0, 1.0 / 11.0, 1.0 / 9.0, 1.0 / 7.0, 1.0 / 5.0, 1.0 / 3.0});
  const double logm = std::fma(2.0 * s * z, p, 2.0 * s);
  return static_cast<float>(std::fma(static_cast<double>(k), kLn2, logm));
}

double ExpD(double x) { return ExpDD(x, 0.0); }

double LogD(double x) {
  if (x != x) return x;
  if (x < 0.0) return kNaN;
  if (x == 0.0) return -kInf;
  if (x == kInf) return x;
  double hi, lo;
  LogDD(x, &hi, &lo);
  return hi;
}

double PowD(double base, double exponent) {
  // C99 pow conventions where they apply to base >= 0; a negative base gives nan.
  if (exponent == 0.0 || base == 1.0) return 1.0;
  if (base != base || exponent != exponent) return kNaN;
  if (base < 0.0) return kNaN;
  if (base == 0.0) return exponent > 0.0 ? 0.0 : kInf;
  if (base == kInf) return exponent > 0.0 ? kInf : 0.0;
  double lh, ll;
  LogDD(base, &lh, &ll);
  // exponent * log(base) as a double-double, then e^(yh + yl).
  double yh, yl;
  TwoProd(exponent, lh, &yh, &yl);
  if (!(yh - yh == 0.0)) return ExpD(yh);  // +-inf (exponent = +-inf): no error term
  yl = std::fma(exponent, ll, yl);
  double h, l;
  FastTwoSum(yh, yl, &h, &l);
  return ExpDD(h, l);
}

void SinCosD(double x, double* sin_out, double* cos_out) {
  if (x == 0.0) {  // keeps the sign of zero in sin
    *sin_out = x;
    *cos_out = 1.0;
    return;
  }
  if (!(x - x == 0.0) || x > kSinCosMaxArg || x < -kSinCosMaxArg) {  // nan, inf, out of range
    *sin_out = kNaN;
    *cos_out = kNaN;
    return;
  }
  // Cody-Waite: x = n pi/2 + y. The first two subtractions are exact, the rest is carried
  // as a double-double, so y is correct to ~2^-150 absolute before the kernel.
  const double n = (x * kTwoOverPi + kRoundMagic) - kRoundMagic;
  const double a = x - n * kPio2_1;  // exact: n * kPio2_1 exact, Sterbenz
  double b, b_err;
  TwoSum(a, -(n * kPio2_2), &b, &b_err);  // n * kPio2_2 exact
  double p3, p3_err;
  TwoProd(n, kPio2_3, &p3, &p3_err);
  double c, c_err;
  TwoSum(b, -p3, &c, &c_err);
  const double lo = ((b_err + c_err) - p3_err) - n * kPio2_4;
  double yh, yl;
  TwoSum(c, lo, &yh, &yl);
  double s, co;
  SinCosKernel(yh, yl, &s, &co);
  SinCosOfQuadrant(static_cast<int64_t>(n), s, co, sin_out, cos_out);
}

}  // namespace stet

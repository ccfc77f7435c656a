// Pins math.h / math.cc / math_avx2.h: accuracy of every function against long double
// libm (allowed in tests only) as a max-ulp bound over dense sweeps, special values, and
// bitwise equality of the AVX2 twins ExpF8/SiluF8 with the scalar ExpF/SiluF.
// Measured maxima are printed; each EXPECT states the documented bound.
#include "numerics/math.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "numerics/half.h"

// The AVX2 twins are compiled for AVX2 here only; callers check CpuHasAvx2Fma() first.
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "numerics/math_avx2.h"
namespace stet {
namespace {
void ExpF8Array(const float* x, float* y, size_t n) {  // n % 8 == 0
  for (size_t i = 0; i < n; i += 8) _mm256_storeu_ps(y + i, ExpF8(_mm256_loadu_ps(x + i)));
}
void SiluF8Array(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; i += 8) _mm256_storeu_ps(y + i, SiluF8(_mm256_loadu_ps(x + i)));
}
}  // namespace
}  // namespace stet
#pragma GCC pop_options

namespace stet {
namespace {

constexpr float kFInf = std::numeric_limits<float>::infinity();
constexpr double kDInf = std::numeric_limits<double>::infinity();

// |got - ref| in units of the last place of the target format at ref (subnormal spacing
// below the normal range).
double UlpErr(long double got, long double ref, int mant_bits, int min_exp) {
  if (std::isnan(ref)) return std::isnan(got) ? 0.0 : 1e30;
  if (std::isinf(ref)) return got == ref ? 0.0 : 1e30;
  if (std::isinf(got) || std::isnan(got)) return 1e30;
  if (ref == 0) return got == 0 ? 0.0 : 1e30;
  int e;
  std::frexp(std::fabs(ref), &e);  // |ref| in [2^(e-1), 2^e)
  const int ue = std::max(e - 1, min_exp) - mant_bits;
  return static_cast<double>(std::fabs(got - ref) / std::ldexp(1.0L, ue));
}
double UlpF(float got, long double ref) { return UlpErr(got, ref, 23, -126); }
double UlpD(double got, long double ref) { return UlpErr(got, ref, 52, -1022); }

struct MaxErr {
  double max = 0;
  long double at = 0;
  void Add(double e, long double x) {
    if (e > max) {
      max = e;
      at = x;
    }
  }
};

void Report(const char* what, const MaxErr& m) {
  std::printf("[ measured ] %-34s max %.4f ulp (at %.17Lg)\n", what, m.max, m.at);
}

bool SameFloat(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || FloatBits(a) == FloatBits(b);
}

// ---------------------------------------------------------------- ExpF / SiluF

TEST(MathTest, ExpFAccuracy) {
  // Every 251st float bit pattern whose value has a normal float e^x (~8.5M inputs).
  MaxErr m;
  const float lo = math_internal::kExpMin, hi = math_internal::kExpMax;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 251) {
    const float x = BitsFloat(static_cast<uint32_t>(u));
    if (!(x >= lo && x <= hi)) continue;
    m.Add(UlpF(ExpF(x), std::exp(static_cast<long double>(x))), x);
  }
  Report("ExpF on [kExpMin, kExpMax]", m);
  EXPECT_LE(m.max, 1.25);  // measured 1.008 over every 7th float
}

TEST(MathTest, ExpFSpecialValues) {
  EXPECT_EQ(ExpF(0.0f), 1.0f);
  EXPECT_EQ(ExpF(-0.0f), 1.0f);
  EXPECT_EQ(ExpF(kFInf), kFInf);
  EXPECT_EQ(FloatBits(ExpF(-kFInf)), 0u);
  EXPECT_TRUE(std::isnan(ExpF(NAN)));
  // The top of the range is finite, the next float overflows; below kExpMin flushes to +0.
  const float top = math_internal::kExpMax;
  EXPECT_TRUE(std::isfinite(ExpF(top)));
  EXPECT_LE(UlpF(ExpF(top), std::exp(static_cast<long double>(top))), 1.25);
  EXPECT_EQ(ExpF(std::nextafter(top, kFInf)), kFInf);
  EXPECT_EQ(ExpF(100.0f), kFInf);
  EXPECT_GE(ExpF(math_internal::kExpMin), std::numeric_limits<float>::min());
  EXPECT_LT(std::exp(static_cast<long double>(std::nextafter(math_internal::kExpMin, -kFInf))),
            std::numeric_limits<float>::min());
  EXPECT_EQ(FloatBits(ExpF(std::nextafter(math_internal::kExpMin, -kFInf))), 0u);
  EXPECT_EQ(FloatBits(ExpF(-100.0f)), 0u);
}

TEST(MathTest, TanhFAbsoluteError) {
  // Every 251st float of either sign up to 1e30: |TanhF(x) - tanh(x)| < 2e-7.
  long double worst = 0;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 251) {
    const float x = BitsFloat(static_cast<uint32_t>(u));
    if (!(std::fabs(x) <= 1e30f)) continue;
    const long double err = std::fabs(TanhF(x) - std::tanh(static_cast<long double>(x)));
    worst = std::max(worst, err);
  }
  std::printf("[ math     ] TanhF max absolute error %.3Le\n", worst);
  EXPECT_LT(worst, 2e-7L);
  EXPECT_EQ(TanhF(kFInf), 1.0f);
  EXPECT_EQ(TanhF(-kFInf), -1.0f);
  EXPECT_EQ(FloatBits(TanhF(0.0f)), 0u);
  EXPECT_EQ(FloatBits(TanhF(-0.0f)), FloatBits(-0.0f));
  EXPECT_TRUE(std::isnan(TanhF(std::nanf(""))));
  EXPECT_EQ(TanhF(-3.0f), -TanhF(3.0f));  // odd by construction
}

TEST(MathTest, SiluFAccuracy) {
  // Down to -88.72 (below, e^-x overflows and SiLU returns -0; checked separately).
  MaxErr m;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 251) {
    const float x = BitsFloat(static_cast<uint32_t>(u));
    if (!(x >= -math_internal::kExpMax && x <= 1e30f)) continue;
    const long double xl = x;
    m.Add(UlpF(SiluF(x), xl / (1.0L + std::exp(-xl))), x);
  }
  Report("SiluF on [-88.72, 1e30]", m);
  EXPECT_LE(m.max, 3.0);  // measured 2.395 over every 7th float (ExpF's error, amplified)
  // Below: -0, while the true value is at most 4e-37 in magnitude.
  EXPECT_EQ(FloatBits(SiluF(-kFInf)), FloatBits(-0.0f));
  for (float x : {-88.73f, -89.0f, -100.0f, -1e10f}) {
    EXPECT_EQ(FloatBits(SiluF(x)), FloatBits(-0.0f)) << x;
    EXPECT_LT(std::fabs(x * std::exp(static_cast<long double>(x))), 4e-37L) << x;
  }
  EXPECT_EQ(SiluF(kFInf), kFInf);
  EXPECT_EQ(FloatBits(SiluF(0.0f)), 0u);
  EXPECT_EQ(FloatBits(SiluF(-0.0f)), FloatBits(-0.0f));
  EXPECT_TRUE(std::isnan(SiluF(NAN)));
}

// Inputs for the SIMD == scalar checks: a stride over all 2^32 patterns, every float
// within 1<<14 ulps of each edge (range ends, 0, +-1, inf), and NaNs with payloads.
std::vector<float> SimdInputs() {
  std::vector<float> v;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 257)
    v.push_back(BitsFloat(static_cast<uint32_t>(u)));
  const float edges[] = {math_internal::kExpMax,
                         math_internal::kExpMin,
                         -math_internal::kExpMax,
                         -math_internal::kExpMin,
                         0.0f,
                         1.0f,
                         -1.0f,
                         kFInf,
                         -kFInf,
                         std::numeric_limits<float>::max(),
                         std::numeric_limits<float>::min()};
  for (float e : edges) {
    for (int s : {1, -1}) {
      const int64_t c = FloatBits(e * s);
      for (int64_t d = -(1 << 14); d <= (1 << 14); ++d) {
        const int64_t u = c + d;
        if (u >= 0 && u <= 0xffffffffll) v.push_back(BitsFloat(static_cast<uint32_t>(u)));
      }
    }
  }
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fffffffu, 0xff812345u}) {
    v.push_back(BitsFloat(nan));
  }
  v.push_back(0.0f);
  v.push_back(-0.0f);
  while (v.size() % 8) v.push_back(0.0f);
  return v;
}

TEST(MathTest, ExpF8AndSiluF8BitwiseEqualScalar) {
  if (!CpuHasAvx2Fma()) GTEST_SKIP() << "CPU lacks AVX2+FMA";
  const std::vector<float> x = SimdInputs();
  std::vector<float> y(x.size());
  ExpF8Array(x.data(), y.data(), x.size());
  size_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!SameFloat(y[i], ExpF(x[i])) && bad++ < 5) {
      ADD_FAILURE() << "ExpF8 != ExpF at bits 0x" << std::hex << FloatBits(x[i]);
    }
  }
  SiluF8Array(x.data(), y.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (!SameFloat(y[i], SiluF(x[i])) && bad++ < 10) {
      ADD_FAILURE() << "SiluF8 != SiluF at bits 0x" << std::hex << FloatBits(x[i]);
    }
  }
  EXPECT_EQ(bad, 0u) << "of " << x.size() << " inputs";
  EXPECT_GT(x.size(), 17000000u);
}

// ---------------------------------------------------------------- LogF

TEST(MathTest, LogFAccuracy) {
  MaxErr m;
  auto check = [&](uint32_t u) {
    const float x = BitsFloat(u);
    m.Add(UlpF(LogF(x), std::log(static_cast<long double>(x))), x);
  };
  for (uint32_t u = 1; u < 0x7f800000u; u += 251) check(u);  // every 251st positive float
  for (int64_t d = -(1 << 20); d <= (1 << 20); ++d) check(static_cast<uint32_t>(0x3f800000 + d));
  for (uint32_t u = 1; u < 0x00800000u; u += 61) check(u);  // subnormal inputs
  Report("LogF on (0, inf)", m);
  EXPECT_LE(m.max, 0.501);  // rounded once from a double result: correctly rounded but ties
}

TEST(MathTest, LogFSpecialValues) {
  EXPECT_EQ(FloatBits(LogF(1.0f)), 0u);
  EXPECT_EQ(LogF(0.0f), -kFInf);
  EXPECT_EQ(LogF(-0.0f), -kFInf);
  EXPECT_EQ(LogF(kFInf), kFInf);
  EXPECT_TRUE(std::isnan(LogF(-1.0f)));
  EXPECT_TRUE(std::isnan(LogF(-kFInf)));
  EXPECT_TRUE(std::isnan(LogF(NAN)));
  EXPECT_TRUE(std::isnan(LogF(-std::numeric_limits<float>::denorm_min())));
  EXPECT_EQ(LogF(std::numeric_limits<float>::denorm_min()),
            static_cast<float>(-149 * std::log(2.0L)));
}

// ---------------------------------------------------------------- double functions

TEST(MathTest, ExpDAccuracy) {
  std::mt19937_64 rng(1);
  MaxErr m;
  auto check = [&](double x) { m.Add(UlpD(ExpD(x), std::exp(static_cast<long double>(x))), x); };
  std::uniform_real_distribution<double> wide(-745.0, 709.78), narrow(-1.0, 1.0);
  for (int i = 0; i < 1000000; ++i) check(wide(rng));
  for (int i = 0; i < 1000000; ++i) check(narrow(rng));
  for (int i = 0; i < 200000; ++i) check(std::ldexp(narrow(rng), -30));
  // Near n * ln2 / 2 (the reduction's edges) and the overflow/underflow ends.
  for (int n = -1075; n <= 1024; ++n) {
    const double c = n * 0.34657359027997264;
    for (double d : {-1e-12, 0.0, 1e-12}) check(c + d);
  }
  for (double x : {709.78, 709.782712893384, -708.39, -745.13, -740.0, -720.5}) check(x);
  Report("ExpD on [-745, 709.78]", m);
  EXPECT_LE(m.max, 1.0);  // measured 0.7498
  EXPECT_EQ(ExpD(0.0), 1.0);
  EXPECT_EQ(ExpD(710.0), kDInf);
  EXPECT_EQ(ExpD(kDInf), kDInf);
  EXPECT_EQ(ExpD(-kDInf), 0.0);
  EXPECT_EQ(ExpD(-746.0), 0.0);
  EXPECT_GT(ExpD(-745.13), 0.0);  // smallest subnormal
  EXPECT_TRUE(std::isnan(ExpD(NAN)));
}

TEST(MathTest, LogDAccuracy) {
  std::mt19937_64 rng(2);
  MaxErr m;
  auto check = [&](double x) { m.Add(UlpD(LogD(x), std::log(static_cast<long double>(x))), x); };
  std::uniform_int_distribution<uint64_t> bits(1, 0x7fefffffffffffffull);
  for (int i = 0; i < 2000000; ++i) {
    const uint64_t b = bits(rng);
    double x;
    std::memcpy(&x, &b, 8);
    check(x);
  }
  std::uniform_real_distribution<double> near1(0.5, 2.0);
  for (int i = 0; i < 1000000; ++i) check(near1(rng));
  for (int i = -1000; i <= 1000; ++i) check(1.0 + i * 0x1p-52);
  for (double x : {10000.0, 500000.0, 1e6, 0.7071067811865476, 1.4142135623730951, 4.9e-324})
    check(x);
  Report("LogD on (0, DBL_MAX]", m);
  EXPECT_LE(m.max, 0.6);  // measured 0.5415
  EXPECT_EQ(LogD(1.0), 0.0);
  EXPECT_EQ(LogD(0.0), -kDInf);
  EXPECT_EQ(LogD(kDInf), kDInf);
  EXPECT_TRUE(std::isnan(LogD(-1.0)));
  EXPECT_TRUE(std::isnan(LogD(NAN)));
}

TEST(MathTest, PowDAccuracy) {
  std::mt19937_64 rng(3);
  MaxErr rope, general;
  // RoPE: base^(-2i/d) for the bases and dimensions models use.
  for (double base : {10000.0, 500000.0, 1000000.0, 10000000.0, 1e4 * 8.0, 2.5}) {
    for (int d : {16, 32, 48, 64, 80, 96, 128, 256}) {
      for (int i = 0; i <= d / 2; ++i) {
        const double e = -(2.0 * i) / d;
        rope.Add(UlpD(PowD(base, e),
                      std::pow(static_cast<long double>(base), static_cast<long double>(e))),
                 base);
      }
    }
  }
  // General: |e * log(b)| up to ~700.
  std::uniform_real_distribution<double> lb(-20.0, 20.0), ue(-30.0, 30.0);
  for (int i = 0; i < 1000000; ++i) {
    const double b = std::exp(lb(rng)), e = ue(rng);
    const long double ref = std::pow(static_cast<long double>(b), static_cast<long double>(e));
    if (ref > 1e300L || ref < 1e-300L) continue;
    general.Add(UlpD(PowD(b, e), ref), b);
  }
  Report("PowD RoPE (base^(-2i/d))", rope);
  Report("PowD |e log b| <= 600", general);
  EXPECT_LE(rope.max, 0.6);     // measured 0.5527
  EXPECT_LE(general.max, 1.1);  // measured 0.9492
  EXPECT_EQ(PowD(2.0, 10.0), 1024.0);
  EXPECT_EQ(PowD(10000.0, 0.0), 1.0);
  EXPECT_EQ(PowD(1.0, NAN), 1.0);
  EXPECT_EQ(PowD(NAN, 0.0), 1.0);
  EXPECT_TRUE(std::isnan(PowD(NAN, 1.0)));
  EXPECT_TRUE(std::isnan(PowD(-2.0, 2.0)));
  EXPECT_EQ(PowD(0.0, 2.0), 0.0);
  EXPECT_EQ(PowD(0.0, -2.0), kDInf);
  EXPECT_EQ(PowD(kDInf, 0.5), kDInf);
  EXPECT_EQ(PowD(kDInf, -0.5), 0.0);
  EXPECT_EQ(PowD(2.0, kDInf), kDInf);
  EXPECT_EQ(PowD(0.5, kDInf), 0.0);
  EXPECT_EQ(PowD(2.0, -kDInf), 0.0);
  EXPECT_EQ(PowD(10.0, 400.0), kDInf);
  EXPECT_EQ(PowD(10.0, -400.0), 0.0);
}

TEST(MathTest, SinCosDAccuracy) {
  std::mt19937_64 rng(4);
  MaxErr ms, mc;
  auto check = [&](double x) {
    double s, c;
    SinCosD(x, &s, &c);
    const long double xl = x;
    ms.Add(UlpD(s, std::sin(xl)), x);
    mc.Add(UlpD(c, std::cos(xl)), x);
  };
  std::uniform_real_distribution<double> small(-4.0, 4.0), big(-1048576.0, 1048576.0),
      mag(-40.0, 28.0);
  for (int i = 0; i < 1000000; ++i) check(small(rng));
  for (int i = 0; i < 1000000; ++i) check(big(rng));
  for (int i = 0; i < 500000; ++i)
    check(std::ldexp(1.0 + small(rng) / 8, static_cast<int>(mag(rng))));
  // RoPE angles: position * base^(-2i/d), positions up to 131072.
  for (int64_t p = 0; p <= 131072; p += 61) {
    for (int i = 0; i < 64; i += 3)
      check(static_cast<double>(p) * PowD(500000.0, -(2.0 * i) / 128));
  }
  // Closest approaches to multiples of pi/2 among integers and near k * pi/2 doubles.
  for (int64_t k = 1; k < 400000; k += 7) {
    const double c = static_cast<double>(k * 1.5707963267948966L);
    check(c);
    check(std::nextafter(c, 0.0));
    check(std::nextafter(c, 1e300));
  }
  for (double x : {355.0, 103993.0, 104348.0, 208341.0, 312689.0, 833719.0, 1146408.0, 6381956.0,
                   1e-300, 4.9e-324, 0.7853981633974483, 2.356194490192345}) {
    check(x);
    check(-x);
  }
  Report("SinCosD sin, |x| <= 2^28", ms);
  Report("SinCosD cos, |x| <= 2^28", mc);
  EXPECT_LE(ms.max, 0.85);  // measured 0.7412
  EXPECT_LE(mc.max, 0.85);  // measured 0.7324
}

TEST(MathTest, SinCosDSpecialValues) {
  double s, c;
  SinCosD(0.0, &s, &c);
  EXPECT_EQ(s, 0.0);
  EXPECT_FALSE(std::signbit(s));
  EXPECT_EQ(c, 1.0);
  SinCosD(-0.0, &s, &c);
  EXPECT_TRUE(std::signbit(s) && s == 0.0);
  EXPECT_EQ(c, 1.0);
  for (double x : {kDInf, -kDInf, static_cast<double>(NAN), 0x1p28 * 1.5, -1e300}) {
    SinCosD(x, &s, &c);
    EXPECT_TRUE(std::isnan(s) && std::isnan(c)) << x;
  }
  SinCosD(0x1p28, &s, &c);  // the top of the range is still exact
  EXPECT_LE(UlpD(s, std::sin(0x1p28L)), 0.85);
  EXPECT_LE(UlpD(c, std::cos(0x1p28L)), 0.85);
  SinCosD(1e-200, &s, &c);
  EXPECT_EQ(s, 1e-200);
  EXPECT_EQ(c, 1.0);
}

}  // namespace
}  // namespace stet

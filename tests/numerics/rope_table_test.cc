// Pins rope_table.h: inverse frequencies against the closed-form formula in long double,
// the Llama 3 and YaRN scalings against the published (Hugging Face) formulas written out
// here independently, GGUF rope_freqs factors, and the float cos/sin tables against long
// double libm (allowed in tests): each entry is the correctly rounded float (<= 0.5 ulp +
// double-rounding slack) of the cos/sin of the table's double angle.
#include "numerics/rope_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "numerics/half.h"

namespace stet {
namespace {

using Kind = RopeScaling::Kind;

double UlpErrD(double got, long double ref) {
  int e;
  std::frexp(std::fabs(ref), &e);
  return static_cast<double>(std::fabs(got - ref) / std::ldexp(1.0L, std::max(e - 1, -1022) - 52));
}
double UlpErrF(float got, long double ref) {
  if (ref == 0) return got == 0 ? 0.0 : 1e30;
  int e;
  std::frexp(std::fabs(ref), &e);
  return static_cast<double>(std::fabs(got - ref) / std::ldexp(1.0L, std::max(e - 1, -126) - 23));
}

long double RefInvFreq(double base, int i, int dim) {
  return std::pow(static_cast<long double>(base), -2.0L * i / dim);
}

TEST(RopeTableTest, InvFreqsUnscaled) {
  double worst = 0;
  for (double base : {10000.0, 500000.0, 1000000.0, 1e7}) {
    for (int dim : {2, 32, 64, 80, 96, 128, 256}) {
      const std::vector<double> inv = RopeInvFreqs(dim, base, RopeScaling{});
      ASSERT_EQ(inv.size(), static_cast<size_t>(dim / 2));
      EXPECT_EQ(inv[0], 1.0);
      for (int i = 0; i < dim / 2; ++i)
        worst = std::max(worst, UlpErrD(inv[i], RefInvFreq(base, i, dim)));
    }
  }
  std::printf("[ measured ] inv freqs max %.4f ulp (double)\n", worst);
  EXPECT_LE(worst, 1.01);  // PowD's 0.5 ulp + the exponent correction's rounding
}

TEST(RopeTableTest, LinearDividesByFactor) {
  RopeScaling s;
  s.kind = Kind::kLinear;
  s.factor = 4.0;
  const std::vector<double> plain = RopeInvFreqs(128, 10000.0, RopeScaling{});
  const std::vector<double> inv = RopeInvFreqs(128, 10000.0, s);
  for (size_t i = 0; i < inv.size(); ++i) EXPECT_EQ(inv[i], plain[i] / 4.0);
}

// Llama 3.1 (transformers _compute_llama3_parameters): wavelength 2 pi / f; below
// orig/high_freq_factor unchanged, above orig/low_freq_factor divided by factor, between
// ((1 - s) / factor + s) * f with s = (orig / wavelength - low) / (high - low).
long double RefLlama3(long double f, long double factor, long double low, long double high,
                      long double orig) {
  const long double pi = 3.14159265358979323846264338327950288L;
  const long double wavelen = 2 * pi / f;
  if (wavelen < orig / high) return f;
  if (wavelen > orig / low) return f / factor;
  const long double s = (orig / wavelen - low) / (high - low);
  return (1 - s) * f / factor + s * f;
}

RopeScaling Llama31() {
  RopeScaling s;
  s.kind = Kind::kLlama3;
  s.factor = 8.0;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_position_embeddings = 8192.0;
  return s;
}

TEST(RopeTableTest, Llama3MatchesPublishedFormula) {
  const RopeScaling s = Llama31();
  const std::vector<double> inv = RopeInvFreqs(128, 500000.0, s);
  int n_kept = 0, n_divided = 0, n_blended = 0;
  double worst = 0;
  for (int i = 0; i < 64; ++i) {
    const long double f = RefInvFreq(500000.0, i, 128);
    const long double want = RefLlama3(f, 8, 1, 4, 8192);
    worst = std::max(worst, UlpErrD(inv[i], want));
    if (want == f)
      ++n_kept;
    else if (want == f / 8)
      ++n_divided;
    else
      ++n_blended;
  }
  std::printf("[ measured ] llama3 inv freqs max %.4f ulp (double)\n", worst);
  EXPECT_LE(worst, 2.0);
  // Hand check of the bands for Llama 3.1 8B: wavelength 2 pi 500000^(i/64) is < 2048 for
  // i <= 28, > 8192 for i >= 35, blended for 29..34.
  EXPECT_EQ(n_kept, 29);
  EXPECT_EQ(n_blended, 6);
  EXPECT_EQ(n_divided, 29);
  EXPECT_EQ(inv[0], 1.0);
  EXPECT_LE(UlpErrD(inv[63], RefInvFreq(500000.0, 63, 128) / 8), 1.0);
  // i = 32: wavelength 2 pi 500000^(1/2) = 4442.88..., s = (8192/4442.88 - 1)/3 = 0.28128...,
  // so the frequency is multiplied by (1 - s)/8 + s = 0.37112...
  const long double f32 = RefInvFreq(500000.0, 32, 128);
  EXPECT_NEAR(static_cast<double>(inv[32] / f32), 0.3711222795, 1e-9);
}

TEST(RopeTableTest, FreqFactorsDivide) {
  // GGUF converters store llama3 scaling as per-frequency factors f / f_scaled; using
  // them with kind = kNone gives the same frequencies as kLlama3 up to rounding.
  const RopeScaling s = Llama31();
  const std::vector<double> plain = RopeInvFreqs(128, 500000.0, RopeScaling{});
  const std::vector<double> scaled = RopeInvFreqs(128, 500000.0, s);
  std::vector<float> factors(64);
  for (int i = 0; i < 64; ++i) factors[i] = static_cast<float>(plain[i] / scaled[i]);
  const std::vector<double> via = RopeInvFreqs(128, 500000.0, RopeScaling{}, factors.data());
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(via[i], plain[i] / static_cast<double>(factors[i]));
    EXPECT_NEAR(via[i] / scaled[i], 1.0, 1e-7);  // float factors: 2^-24 relative
  }
}

TEST(RopeTableTest, YarnMatchesPublishedFormula) {
  // transformers _compute_yarn_parameters, truncate = True, written out in long double.
  RopeScaling s;
  s.kind = Kind::kYarn;
  s.factor = 4.0;
  s.original_max_position_embeddings = 32768.0;
  const int dim = 128;
  const double base = 1000000.0;
  const long double pi = 3.14159265358979323846264338327950288L;
  auto corr = [&](long double rot) {
    return dim * std::log(32768.0L / (rot * 2 * pi)) /
           (2 * std::log(static_cast<long double>(base)));
  };
  long double low = std::max(std::floor(corr(32)), 0.0L);
  long double high = std::min(std::ceil(corr(1)), static_cast<long double>(dim - 1));
  if (low == high) high += 0.001L;
  const std::vector<double> inv = RopeInvFreqs(dim, base, s);
  int n_extrap = 0, n_interp = 0;
  for (int i = 0; i < dim / 2; ++i) {
    const long double f = RefInvFreq(base, i, dim);
    const long double ramp = std::min(std::max((i - low) / (high - low), 0.0L), 1.0L);
    const long double extrap = 1 - ramp;
    const long double want = f / 4 * (1 - extrap) + f * extrap;
    EXPECT_LE(UlpErrD(inv[i], want), 2.0) << i;
    n_extrap += extrap == 1;
    n_interp += extrap == 0;
  }
  EXPECT_GT(n_extrap, 0);
  EXPECT_GT(n_interp, 0);
  EXPECT_NEAR(RopeAttentionFactor(s), 0.1 * std::log(4.0) + 1.0, 1e-15);
  s.attention_factor = 1.25;
  EXPECT_EQ(RopeAttentionFactor(s), 1.25);
  EXPECT_EQ(RopeAttentionFactor(Llama31()), 1.0);

  RopeTable table(dim, base, s, nullptr, 16);
  const RopeTable plain(dim, base, RopeScaling{}, nullptr, 16);
  EXPECT_EQ(table.attention_factor(), 1.25);
  EXPECT_EQ(table.Cos(0)[0], 1.25f);  // cos(0) * attention factor
}

TEST(RopeTableTest, TableIsCorrectlyRoundedCosSin) {
  for (double base : {10000.0, 500000.0}) {
    const int dim = 128;
    const int64_t cap = 4096;
    const RopeTable t(dim, base, RopeScaling{}, nullptr, cap);
    ASSERT_EQ(t.n_pairs(), 64);
    ASSERT_EQ(t.capacity(), cap);
    double worst = 0, worst_exact = 0;
    std::vector<float> c(64), s(64);
    auto check = [&](int64_t p, const float* cp, const float* sp) {
      for (int i = 0; i < 64; ++i) {
        const double angle = static_cast<double>(p) * t.inv_freqs()[i];  // the table's angle
        worst = std::max({worst, UlpErrF(cp[i], std::cos(static_cast<long double>(angle))),
                          UlpErrF(sp[i], std::sin(static_cast<long double>(angle)))});
        // Against the unrounded angle p * inv: also the angle's rounding, |angle| 2^-53.
        const long double exact = static_cast<long double>(p) * t.inv_freqs()[i];
        const long double slack = std::fabs(exact) * 0x1p-53L;
        for (auto [got, ref] : {std::pair<float, long double>{cp[i], std::cos(exact)},
                                std::pair<float, long double>{sp[i], std::sin(exact)}}) {
          int e;
          std::frexp(std::fabs(ref), &e);
          const long double ulp = std::ldexp(1.0L, std::max(e - 1, -126) - 23);
          worst_exact =
              std::max(worst_exact, static_cast<double>((std::fabs(got - ref) - slack) / ulp));
        }
      }
    };
    for (int64_t p = 0; p < cap; ++p) check(p, t.Cos(p), t.Sin(p));
    for (int64_t p : {4096, 8191, 65535, 131071, 131072, 1000000}) {
      t.Compute(p, c.data(), s.data());
      check(p, c.data(), s.data());
    }
    std::printf(
        "[ measured ] table base %g: max %.6f ulp (float) of cos/sin(angle), "
        "%.6f ulp beyond angle rounding\n",
        base, worst, worst_exact);
    EXPECT_LE(worst, 0.5001);
    EXPECT_LE(worst_exact, 0.5001);
    EXPECT_EQ(t.Cos(0)[0], 1.0f);
    EXPECT_EQ(FloatBits(t.Sin(0)[5]), 0u);
  }
}

TEST(RopeTableTest, CachedEqualsComputed) {
  const RopeTable t(64, 10000.0, Llama31(), nullptr, 300);
  std::vector<float> c(32), s(32);
  for (int64_t p = 0; p < 300; ++p) {
    t.Compute(p, c.data(), s.data());
    for (int i = 0; i < 32; ++i) {
      ASSERT_EQ(FloatBits(c[i]), FloatBits(t.Cos(p)[i]));
      ASSERT_EQ(FloatBits(s[i]), FloatBits(t.Sin(p)[i]));
    }
  }
}

TEST(RopeTableTest, ValidateRejectsBadParameters) {
  const RopeScaling none;
  EXPECT_TRUE(ValidateRope(128, 10000.0, none, nullptr, 8192).ok());
  EXPECT_TRUE(ValidateRope(128, 500000.0, Llama31(), nullptr, 131072).ok());
  EXPECT_FALSE(ValidateRope(127, 10000.0, none, nullptr, 10).ok());
  EXPECT_FALSE(ValidateRope(0, 10000.0, none, nullptr, 10).ok());
  EXPECT_FALSE(ValidateRope(128, 0.0, none, nullptr, 10).ok());
  EXPECT_FALSE(ValidateRope(128, -1.0, none, nullptr, 10).ok());
  EXPECT_FALSE(ValidateRope(128, NAN, none, nullptr, 10).ok());
  RopeScaling lin;
  lin.kind = Kind::kLinear;
  lin.factor = 0.0;
  EXPECT_FALSE(ValidateRope(128, 10000.0, lin, nullptr, 10).ok());
  RopeScaling l3 = Llama31();
  l3.high_freq_factor = 1.0;  // not above low_freq_factor
  EXPECT_FALSE(ValidateRope(128, 10000.0, l3, nullptr, 10).ok());
  std::vector<float> ff(64, 1.0f);
  EXPECT_TRUE(ValidateRope(128, 10000.0, none, ff.data(), 10).ok());
  ff[7] = 0.0f;
  EXPECT_FALSE(ValidateRope(128, 10000.0, none, ff.data(), 10).ok());
  ff[7] = NAN;
  EXPECT_FALSE(ValidateRope(128, 10000.0, none, ff.data(), 10).ok());
  // Angles past SinCosD's exact range (inv freq 1 at i = 0).
  EXPECT_FALSE(ValidateRope(128, 10000.0, none, nullptr, (int64_t{1} << 28) + 2).ok());
}

}  // namespace
}  // namespace stet

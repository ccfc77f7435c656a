// Statistics against textbook and independently computed values. Binomial
// references were computed exactly in Python with math.comb and fractions
// (sum(comb(n, i) for i <= k) / 2**n), not with this code.
#include "forensics/analysis/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace stet::forensics {
namespace {

TEST(Wilson, TextbookValues) {
  // 8/10 at 95%: [0.490, 0.943] (Wilson 1927; e.g. Newcombe 1998, Table I method 3).
  Interval w = WilsonInterval(8, 10);
  EXPECT_NEAR(w.lo, 0.490, 5e-4);
  EXPECT_NEAR(w.hi, 0.943, 5e-4);
  // Python, same formula in double: 0.49016247153664183, 0.9433178485456247.
  EXPECT_NEAR(w.lo, 0.49016247153664183, 1e-12);
  EXPECT_NEAR(w.hi, 0.9433178485456247, 1e-12);
}

TEST(Wilson, ZeroAndAllSuccesses) {
  Interval z = WilsonInterval(0, 10);  // [0, 0.2775]
  EXPECT_EQ(z.lo, 0.0);
  EXPECT_NEAR(z.hi, 0.2775327998628892, 1e-12);
  Interval a = WilsonInterval(10, 10);  // [0.7225, 1]
  EXPECT_NEAR(a.lo, 0.7224672001371107, 1e-12);
  EXPECT_EQ(a.hi, 1.0);
  Interval h = WilsonInterval(50, 100);  // symmetric around 1/2
  EXPECT_NEAR(h.lo, 0.4038315303659956, 1e-12);
  EXPECT_NEAR(h.lo + h.hi, 1.0, 1e-12);
}

TEST(Binomial, CdfAgainstExactFractions) {
  EXPECT_NEAR(BinomialCdf(2, 12, 0.5), 0.019287109375, 1e-13);
  EXPECT_NEAR(BinomialCdf(5, 20, 0.5), 0.020694732666015625, 1e-13);
  EXPECT_NEAR(BinomialCdf(40, 100, 0.5), 0.028443966820490395, 1e-12);
  EXPECT_NEAR(BinomialCdf(480, 1000, 0.5), 0.10872414660207047, 1e-10);
  // p != 1/2 (Python: sum(comb(n,i) p^i (1-p)^(n-i))).
  EXPECT_NEAR(BinomialCdf(3, 10, 0.3), 0.6496107183999996, 1e-12);
  EXPECT_NEAR(BinomialCdf(7, 25, 0.2), 0.890877204004971, 1e-12);
  EXPECT_EQ(BinomialCdf(-1, 5, 0.5), 0.0);
  EXPECT_EQ(BinomialCdf(5, 5, 0.5), 1.0);
}

TEST(SignTest, ExactTwoSided) {
  EXPECT_NEAR(SignTestPValue(2, 10), 0.03857421875, 1e-13);
  EXPECT_NEAR(SignTestPValue(10, 2), 0.03857421875, 1e-13);  // symmetric
  EXPECT_NEAR(SignTestPValue(15, 5), 0.04138946533203125, 1e-13);
  EXPECT_NEAR(SignTestPValue(0, 10), 0.001953125, 1e-15);
  EXPECT_NEAR(SignTestPValue(60, 40), 0.05688793364098079, 1e-12);
  EXPECT_EQ(SignTestPValue(3, 3), 1.0);  // capped at 1
  EXPECT_EQ(SignTestPValue(0, 0), 1.0);  // no discordant pairs: no evidence
  EXPECT_NEAR(McNemarExactPValue(1, 8), 0.0390625, 1e-15);
}

TEST(Quantile, Type7) {
  // numpy.quantile([1, 2, 3, 4], 0.25) = 1.75 (linear interpolation).
  EXPECT_DOUBLE_EQ(QuantileSorted({1, 2, 3, 4}, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(QuantileSorted({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(QuantileSorted({7}, 0.9), 7);
}

TEST(Bootstrap, SeededAndReproducible) {
  std::vector<double> v = {0, 0.2, 0.4, 1, 1, 0.8, 0.6, 0, 1, 0.4};
  const Interval a = BootstrapMeanCi(v, 2000, 42);
  const Interval b = BootstrapMeanCi(v, 2000, 42);
  const Interval c = BootstrapMeanCi(v, 2000, 43);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  EXPECT_TRUE(a.lo != c.lo || a.hi != c.hi);
  const double m = Mean(v);  // 0.54
  EXPECT_LT(a.lo, m);
  EXPECT_GT(a.hi, m);
  // The normal-theory interval is mean ± 1.96 * sd / sqrt(n) = 0.54 ± 0.24;
  // the percentile bootstrap should be close to it.
  EXPECT_NEAR(a.lo, 0.30, 0.06);
  EXPECT_NEAR(a.hi, 0.78, 0.06);
}

TEST(Bootstrap, ConstantDataGivesAPointInterval) {
  const Interval a = BootstrapMeanCi({0.5, 0.5, 0.5}, 500, 1);
  EXPECT_DOUBLE_EQ(a.lo, 0.5);
  EXPECT_DOUBLE_EQ(a.hi, 0.5);
}

TEST(Bootstrap, ResampleIndexIsUniformEnough) {
  std::vector<int> counts(7, 0);
  for (uint64_t i = 0; i < 70000; ++i) counts[ResampleIndex(9, i / 100, i % 100, 7)]++;
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);  // ~4 sigma
}

TEST(PairedBootstrap, ShiftIsRecovered) {
  std::vector<double> a = {0.1, 0.5, 0.3, 0.9, 0.2, 0.6, 0.4, 0.7};
  std::vector<double> b = a;
  for (double& x : b) x += 0.1;
  const Interval ci = PairedBootstrapCi(a, b, 1000, 7);
  EXPECT_NEAR(ci.lo, 0.1, 1e-12);  // every pair differs by exactly 0.1
  EXPECT_NEAR(ci.hi, 0.1, 1e-12);
}

TEST(Distances, TotalVariationAndKl) {
  const std::vector<double> p = {0.5, 0.5}, q = {0.9, 0.1};
  EXPECT_DOUBLE_EQ(TotalVariation(p, q), 0.4);
  // KL(p||q) = 0.5 ln(0.5/0.9) + 0.5 ln(0.5/0.1) = 0.5 ln(25/9) = 0.5108256237659907
  EXPECT_NEAR(KlDivergence(p, q), 0.5108256237659907, 1e-14);
  EXPECT_EQ(KlDivergence(p, p), 0.0);
  EXPECT_EQ(TotalVariation(p, p), 0.0);
  EXPECT_TRUE(std::isinf(KlDivergence({0.5, 0.5}, {1.0, 0.0})));
  EXPECT_EQ(KlDivergence({1.0, 0.0}, {0.5, 0.5}), std::log(2.0));
}

TEST(Distances, RenormalizedFromLogprobs) {
  const auto p = RenormalizedFromLogprobs({std::log(0.2), std::log(0.2)});
  EXPECT_DOUBLE_EQ(p[0], 0.5);
  EXPECT_DOUBLE_EQ(p[1], 0.5);
  const auto q = RenormalizedFromLogprobs({-1e300, 0.0});  // an "impossible" token
  EXPECT_EQ(q[0], 0.0);
  EXPECT_EQ(q[1], 1.0);
}

}  // namespace
}  // namespace stet::forensics

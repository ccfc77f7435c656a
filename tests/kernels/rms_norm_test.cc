// RmsNorm: AVX2 and NEON == scalar bit for bit (n = 1..300, m rows); row r of a batch
// equals the row alone (R1); y may alias x; within a derived bound of float64.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

// `isa` equals the scalar reference bit for bit for n = 1..300 (1 to 4 rows),
// and in place.
void ExpectEqualsScalarAndAliasing(Isa isa) {
  std::mt19937 rng(21);
  for (int64_t n = 1; n <= 300; ++n) {
    const int64_t m = 1 + n % 4;
    const auto x = testing::RandomActivations(rng, m * n);
    const auto w = testing::RandomFloats(rng, n, 0.5f, 1.5f);
    std::vector<float> ys(m * n), ya(m * n), yalias = x;
    RmsNorm(x.data(), w.data(), m, n, 1e-6f, ys.data(), Isa::kScalar);
    RmsNorm(x.data(), w.data(), m, n, 1e-6f, ya.data(), isa);
    ASSERT_TRUE(testing::SameBits(ys.data(), ya.data(), m * n)) << "n=" << n;
    RmsNorm(yalias.data(), w.data(), m, n, 1e-6f, yalias.data(), isa);
    ASSERT_TRUE(testing::SameBits(ys.data(), yalias.data(), m * n)) << "n=" << n;
  }
}

TEST(RmsNorm, Avx2EqualsScalarAndAliasing) {
  STET_REQUIRE_AVX2();
  ExpectEqualsScalarAndAliasing(Isa::kAvx2);
}

TEST(RmsNorm, NeonEqualsScalarAndAliasing) {
  STET_REQUIRE_NEON();
  ExpectEqualsScalarAndAliasing(Isa::kNeon);
}

TEST(RmsNorm, BatchInvariance) {
  std::mt19937 rng(22);
  const int64_t n = 203;
  const auto w = testing::RandomFloats(rng, n, 0.5f, 1.5f);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
    for (int64_t m = 1; m <= 17; ++m) {
      const auto x = testing::RandomActivations(rng, m * n);
      std::vector<float> y(m * n), one(n);
      RmsNorm(x.data(), w.data(), m, n, 1e-5f, y.data(), isa);
      for (int64_t r = 0; r < m; ++r) {
        RmsNorm(x.data() + r * n, w.data(), 1, n, 1e-5f, one.data(), isa);
        ASSERT_TRUE(testing::SameBits(one.data(), y.data() + r * n, n)) << "m=" << m << " r=" << r;
      }
    }
  }
}

// Relative error of y = x * w / sqrt(mean(x^2) + eps): the sum carries
// gamma(n/8 + 3); /n, +eps, sqrt, 1/ add 4 roundings (sqrt halves the first
// five); x*scale*w adds 2. So |y - y64| <= (gamma(n/8 + 3)/2 + gamma(7)) |y64|.
TEST(RmsNorm, AccuracyAgainstFloat64) {
  std::mt19937 rng(23);
  for (int64_t n : {1, 8, 13, 64, 576, 4099}) {
    const auto x = testing::RandomActivations(rng, n);
    const auto w = testing::RandomFloats(rng, n, -2.0f, 2.0f);
    const float eps = 1e-5f;
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double scale = 1.0 / std::sqrt(ss / n + eps);
    const double rel = testing::Gamma((n + 7) / 8 + 3) / 2 + testing::Gamma(7);
    for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
      if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
      std::vector<float> y(n);
      RmsNorm(x.data(), w.data(), 1, n, eps, y.data(), isa);
      for (int64_t k = 0; k < n; ++k) {
        const double exact = static_cast<double>(x[k]) * scale * w[k];
        EXPECT_LE(std::fabs(y[k] - exact), rel * std::fabs(exact)) << "n=" << n << " k=" << k;
      }
    }
  }
}

}  // namespace
}  // namespace stet::kernels

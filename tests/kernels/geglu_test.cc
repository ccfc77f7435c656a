// GeGlu (GELU-tanh gated FFN): AVX2 and NEON == scalar bit for bit (tails, aliasing,
// special values); special values take their limits; within a derived bound of
// float64 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) * u.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

std::vector<float> Specials() {
  const float inf = std::numeric_limits<float>::infinity();
  return {0.0f,   -0.0f,  1e-40f, -1e-40f, 1.0f,   -1.0f,        5.0f,    -5.0f,
          10.0f,  -10.0f, -10.5f, 20.0f,   -20.0f, 100.0f,       -100.0f, 3e12f,
          -3e12f, 3e38f,  -3e38f, inf,     -inf,   std::nanf("")};
}

TEST(GeGlu, Avx2EqualsScalar) {
  STET_REQUIRE_AVX2();
  testing::ExpectGatedEqualsScalar(GeGlu, Isa::kAvx2, 41, Specials());
}

TEST(GeGlu, NeonEqualsScalar) {
  STET_REQUIRE_NEON();
  testing::ExpectGatedEqualsScalar(GeGlu, Isa::kNeon, 41, Specials());
}

TEST(GeGlu, SpecialValuesTakeTheirLimits) {
  const float inf = std::numeric_limits<float>::infinity();
  const float g[] = {inf, -inf, -3e38f, 3e38f, 0.0f, std::nanf("")};
  const float u[] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  for (Isa isa : testing::AvailableIsas()) {
    float out[6];
    GeGlu(g, u, 6, out, isa);
    EXPECT_EQ(out[0], inf);
    EXPECT_EQ(out[1], 0.0f);
    EXPECT_TRUE(std::signbit(out[1]));
    EXPECT_EQ(out[2], 0.0f);
    EXPECT_EQ(out[3], 3e38f);
    EXPECT_EQ(out[4], 0.0f);
    EXPECT_TRUE(std::isnan(out[5]));
  }
}

// Error budget: z = 2u is x*x, *x, *a, +x (same signs: no cancellation), *c — five
// roundings plus the two rounded constants, so |dz| <= gamma(7) |z|; e^-z then has
// relative error <= gamma(7) |z| (argument) + 2.5u (ExpF, 1.25 ulp); 1 + e, the
// quotient and the product with up add three roundings. So |out - exact| <=
// (gamma(7) |z| + gamma(9)) |exact| to first order; the test allows 1.1 times that.
TEST(GeGlu, AccuracyAgainstFloat64) {
  std::mt19937 rng(42);
  const int64_t n = 8192;
  const auto g = testing::RandomFloats(rng, n, -10.0f, 10.0f);
  const auto u = testing::RandomFloats(rng, n, -3.0f, 3.0f);
  for (Isa isa : testing::AvailableIsas()) {
    if (isa == Isa::kAvx512) continue;  // no AVX-512 path: it runs the AVX2 one
    std::vector<float> out(n);
    GeGlu(g.data(), u.data(), n, out.data(), isa);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double x = g[i];
      const double inner = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
      // 0.5 x (1 + tanh(inner)) = x / (1 + e^(-2 inner)); the second form has no
      // cancellation for negative x, where 1 + tanh would lose every digit in double.
      const double exact = x / (1.0 + std::exp(-2.0 * inner)) * u[i];
      EXPECT_NEAR(exact, 0.5 * x * (1.0 + std::tanh(inner)) * u[i], 1e-13 * (1 + std::fabs(exact)));
      const double bound =
          1.1 * (testing::Gamma(7) * std::fabs(2 * inner) + testing::Gamma(9)) * std::fabs(exact);
      EXPECT_LE(std::fabs(out[i] - exact), bound) << "g=" << g[i] << " u=" << u[i];
      if (exact != 0) worst = std::max(worst, std::fabs(out[i] - exact) / std::fabs(exact));
    }
    std::printf("[ geglu    ] %s max relative error %.3g\n", IsaName(isa), worst);
  }
}

}  // namespace
}  // namespace stet::kernels

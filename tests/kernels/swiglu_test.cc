// SwiGlu: AVX2 and NEON == scalar bit for bit (incl. tails, aliasing and special values);
// within a derived bound of float64 silu(g) * u.
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
  return {0.0f,  -0.0f,  1e-40f, -1e-40f, 1.0f,  -1.0f,  20.0f, -20.0f, 88.0f,        -88.0f,
          88.8f, -88.8f, 100.0f, -100.0f, 3e38f, -3e38f, inf,   -inf,   std::nanf("")};
}

TEST(SwiGlu, Avx2EqualsScalar) {
  STET_REQUIRE_AVX2();
  testing::ExpectGatedEqualsScalar(SwiGlu, Isa::kAvx2, 31, Specials());
}

TEST(SwiGlu, NeonEqualsScalar) {
  STET_REQUIRE_NEON();
  testing::ExpectGatedEqualsScalar(SwiGlu, Isa::kNeon, 31, Specials());
}

// ExpF is within 2 ulp (4u relative); 1 + e, the division and the product add
// 3 roundings: |out - exact| <= gamma(7) |exact| for |g| below ExpF's overflow.
TEST(SwiGlu, AccuracyAgainstFloat64) {
  std::mt19937 rng(32);
  const int64_t n = 4096;
  const auto g = testing::RandomFloats(rng, n, -80.0f, 80.0f);
  const auto u = testing::RandomFloats(rng, n, -3.0f, 3.0f);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
    std::vector<float> out(n);
    SwiGlu(g.data(), u.data(), n, out.data(), isa);
    for (int64_t i = 0; i < n; ++i) {
      const double gd = g[i];
      const double exact = gd / (1.0 + std::exp(-gd)) * u[i];
      EXPECT_LE(std::fabs(out[i] - exact), testing::Gamma(7) * std::fabs(exact)) << "g=" << g[i];
    }
  }
}

}  // namespace
}  // namespace stet::kernels

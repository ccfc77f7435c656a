// Add: AVX2 and NEON == scalar bit for bit (tails, aliasing, specials); each result is
// the correctly rounded sum (within u |a + b| of float64).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

// `isa` equals the scalar reference bit for bit for n = 0..70 (every tail
// length), with inf, -0 and nan among the inputs, and in place on a.
void ExpectEqualsScalarAndAliasing(Isa isa) {
  std::mt19937 rng(41);
  for (int64_t n = 0; n <= 70; ++n) {
    auto a = testing::RandomFloats(rng, n, -1e3f, 1e3f);
    const auto b = testing::RandomFloats(rng, n, -1e3f, 1e3f);
    if (n > 2) {
      a[0] = INFINITY;
      a[1] = -0.0f;
      a[2] = std::nanf("");
    }
    std::vector<float> ys(n), ya(n), alias = a;
    Add(a.data(), b.data(), n, ys.data(), Isa::kScalar);
    Add(a.data(), b.data(), n, ya.data(), isa);
    ASSERT_TRUE(testing::SameBits(ys.data(), ya.data(), n)) << "n=" << n;
    Add(alias.data(), b.data(), n, alias.data(), isa);
    ASSERT_TRUE(testing::SameBits(ys.data(), alias.data(), n)) << "n=" << n;
  }
}

TEST(Add, Avx2EqualsScalarAndAliasing) {
  STET_REQUIRE_AVX2();
  ExpectEqualsScalarAndAliasing(Isa::kAvx2);
}

TEST(Add, NeonEqualsScalarAndAliasing) {
  STET_REQUIRE_NEON();
  ExpectEqualsScalarAndAliasing(Isa::kNeon);
}

TEST(Add, CorrectlyRounded) {
  std::mt19937 rng(42);
  const int64_t n = 1000;
  const auto a = testing::RandomFloats(rng, n, -1e3f, 1e3f);
  const auto b = testing::RandomFloats(rng, n, -1.0f, 1.0f);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
    std::vector<float> out(n);
    Add(a.data(), b.data(), n, out.data(), isa);
    for (int64_t i = 0; i < n; ++i) {
      const double exact = static_cast<double>(a[i]) + b[i];
      EXPECT_LE(std::fabs(out[i] - exact), testing::kU * std::fabs(exact));
    }
  }
}

}  // namespace
}  // namespace stet::kernels

// Rope, both styles (normal pairs (2i, 2i+1), neox pairs (i, i + rot/2)), rot_dim
// equal to or below head_dim: AVX2 and NEON == scalar bit for bit; dims past rot_dim are
// untouched; heads are independent of how many are rotated together; each pair
// is within gamma(2) (|x0 c| + |x1 s|) of float64.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

struct Table {
  std::vector<float> cos, sin;
};

Table RandomTable(std::mt19937& rng, int half) {
  Table t;
  std::uniform_real_distribution<double> angle(-100.0, 100.0);
  for (int i = 0; i < half; ++i) {
    const double a = angle(rng);
    t.cos.push_back(static_cast<float>(std::cos(a)));
    t.sin.push_back(static_cast<float>(std::sin(a)));
  }
  return t;
}

struct Shape {
  int head_dim, rot_dim;
};
const Shape kShapes[] = {{64, 64}, {128, 128}, {128, 64}, {80, 80}, {80, 32}, {64, 22},
                         {6, 6},   {6, 4},     {2, 2},    {96, 0},  {40, 34}, {18, 18}};

// `isa` equals the scalar reference bit for bit on every shape (rotated part
// and tail lengths) and head count, and neither touches the unrotated dims.
void ExpectEqualsScalarAndLeavesTheRestAlone(Isa isa, RopeStyle style) {
  std::mt19937 rng(51);
  for (const Shape& s : kShapes) {
    for (int n_heads : {1, 3, 5}) {
      const Table t = RandomTable(rng, s.rot_dim / 2);
      const auto x = testing::RandomFloats(rng, n_heads * s.head_dim, -4.0f, 4.0f);
      auto xs = x, xa = x;
      Rope(xs.data(), n_heads, s.head_dim, s.rot_dim, t.cos.data(), t.sin.data(), style,
           Isa::kScalar);
      Rope(xa.data(), n_heads, s.head_dim, s.rot_dim, t.cos.data(), t.sin.data(), style, isa);
      ASSERT_TRUE(testing::SameBits(xs.data(), xa.data(), xs.size()))
          << "head_dim=" << s.head_dim << " rot=" << s.rot_dim;
      for (int h = 0; h < n_heads; ++h) {
        for (int j = s.rot_dim; j < s.head_dim; ++j) {
          ASSERT_EQ(FloatBits(x[h * s.head_dim + j]), FloatBits(xs[h * s.head_dim + j]));
        }
      }
    }
  }
}

class RopeTest : public ::testing::TestWithParam<RopeStyle> {};

TEST_P(RopeTest, Avx2EqualsScalarAndLeavesTheRestAlone) {
  STET_REQUIRE_AVX2();
  ExpectEqualsScalarAndLeavesTheRestAlone(Isa::kAvx2, GetParam());
}

TEST_P(RopeTest, NeonEqualsScalarAndLeavesTheRestAlone) {
  STET_REQUIRE_NEON();
  ExpectEqualsScalarAndLeavesTheRestAlone(Isa::kNeon, GetParam());
}

TEST_P(RopeTest, HeadsAreIndependent) {
  std::mt19937 rng(52);
  const int head_dim = 64, rot = 48, n_heads = 7;
  const Table t = RandomTable(rng, rot / 2);
  const auto x = testing::RandomFloats(rng, n_heads * head_dim);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
    auto all = x;
    Rope(all.data(), n_heads, head_dim, rot, t.cos.data(), t.sin.data(), GetParam(), isa);
    for (int h = 0; h < n_heads; ++h) {
      std::vector<float> one(x.begin() + h * head_dim, x.begin() + (h + 1) * head_dim);
      Rope(one.data(), 1, head_dim, rot, t.cos.data(), t.sin.data(), GetParam(), isa);
      ASSERT_TRUE(testing::SameBits(one.data(), all.data() + h * head_dim, head_dim)) << h;
    }
  }
}

TEST_P(RopeTest, AccuracyAgainstFloat64) {
  std::mt19937 rng(53);
  const int head_dim = 128, rot = 96, half = rot / 2;
  const Table t = RandomTable(rng, half);
  const auto x = testing::RandomFloats(rng, head_dim, -4.0f, 4.0f);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
    auto y = x;
    Rope(y.data(), 1, head_dim, rot, t.cos.data(), t.sin.data(), GetParam(), isa);
    for (int i = 0; i < half; ++i) {
      const int i0 = GetParam() == RopeStyle::kNormal ? 2 * i : i;
      const int i1 = GetParam() == RopeStyle::kNormal ? 2 * i + 1 : i + half;
      const double x0 = x[i0], x1 = x[i1], c = t.cos[i], s = t.sin[i];
      const double b0 = testing::Gamma(2) * (std::fabs(x0 * c) + std::fabs(x1 * s));
      const double b1 = testing::Gamma(2) * (std::fabs(x0 * s) + std::fabs(x1 * c));
      EXPECT_LE(std::fabs(y[i0] - (x0 * c - x1 * s)), b0) << i;
      EXPECT_LE(std::fabs(y[i1] - (x0 * s + x1 * c)), b1) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Styles, RopeTest, ::testing::Values(RopeStyle::kNormal, RopeStyle::kNeox),
                         [](const ::testing::TestParamInfo<RopeStyle>& info) {
                           return info.param == RopeStyle::kNormal ? "Normal" : "Neox";
                         });

}  // namespace
}  // namespace stet::kernels

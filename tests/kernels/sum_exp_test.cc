// SumExpShifted: every path (AVX2, AVX-512 = AVX2, NEON) == the scalar serial
// sum bit for bit, for short rows, rows not a multiple of 8, and the 262144
// of a large vocabulary; values across exp's whole range (-inf, values that
// flush to 0, overflow to inf, NaN); orders that keep the sum small for long
// (where the SIMD paths cannot skip adds) and large early (where they skip
// most). The skip bound SumSkipBelow is exact and tight, and the pre-exp
// bound SumSkipArgBelow implies it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/internal.h"
#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

// Logit-like values: N(0, sigma) plus a few spikes, -inf and very negative entries.
std::vector<float> RandomRow(std::mt19937& rng, int64_t n, float sigma) {
  std::normal_distribution<float> g(0.0f, sigma);
  std::uniform_int_distribution<int> kind(0, 99);
  std::vector<float> x(n);
  for (auto& v : x) {
    const int k = kind(rng);
    v = k == 0 ? -INFINITY : k == 1 ? -1e30f : k == 2 ? g(rng) + 8 * sigma : g(rng);
  }
  return x;
}

float RowMax(const std::vector<float>& x) { return *std::max_element(x.begin(), x.end()); }

void ExpectAllPathsEqual(const std::vector<float>& x, float shift, const char* what) {
  const int64_t n = static_cast<int64_t>(x.size());
  const float want = SumExpShifted(x.data(), n, shift, Isa::kScalar);
  for (Isa isa : testing::AvailableIsas()) {
    const float got = SumExpShifted(x.data(), n, shift, isa);
    ASSERT_TRUE(testing::SameBits(&want, &got, 1))
        << what << " n=" << n << " shift=" << shift << " isa=" << IsaName(isa) << " want=" << want
        << " got=" << got;
  }
}

TEST(SumExpShifted, ReferenceIsTheSerialSum) {
  std::mt19937 rng(1);
  const auto x = RandomRow(rng, 1000, 3.0f);
  const float mx = RowMax(x);
  float s = 0.0f;
  for (float v : x) s += ExpF(v - mx);
  const float got = SumExpShifted(x.data(), 1000, mx, Isa::kScalar);
  EXPECT_TRUE(testing::SameBits(&s, &got, 1));
}

TEST(SumExpShifted, EveryPathEqualsScalarShortRows) {
  std::mt19937 rng(2);
  for (int64_t n = 0; n <= 300; ++n) {
    for (float sigma : {0.5f, 3.0f, 20.0f}) {
      const auto x = RandomRow(rng, n, sigma);
      ExpectAllPathsEqual(x, n > 0 ? RowMax(x) : 0.0f, "short");
      ExpectAllPathsEqual(x, -5.0f, "shift below max (exps overflow)");
    }
  }
}

TEST(SumExpShifted, EveryPathEqualsScalarVocabularyRows) {
  std::mt19937 rng(3);
  for (int64_t n : {262144, 262144 + 5, 151936, 32000 + 3}) {
    for (float sigma : {1.0f, 3.0f, 10.0f}) {
      auto x = RandomRow(rng, n, sigma);
      ExpectAllPathsEqual(x, RowMax(x), "random");
      // Ascending: the max comes last, so the sum stays small and few adds skip.
      std::sort(x.begin(), x.end());
      ExpectAllPathsEqual(x, RowMax(x), "ascending");
      // Descending: s reaches 1 at once and most later exps skip.
      std::reverse(x.begin(), x.end());
      ExpectAllPathsEqual(x, RowMax(x), "descending");
    }
  }
}

TEST(SumExpShifted, EdgeValues) {
  const int64_t n = 1000 + 3;
  // All equal (every e = 1: no add ever skips), all -inf (s = 0, no bound), ties.
  ExpectAllPathsEqual(std::vector<float>(n, 2.5f), 2.5f, "all equal");
  ExpectAllPathsEqual(std::vector<float>(n, -INFINITY), 0.0f, "all -inf");
  ExpectAllPathsEqual(std::vector<float>(n, -100.0f), 0.0f, "all flush to 0");
  std::mt19937 rng(4);
  auto x = RandomRow(rng, n, 3.0f);
  // Values just around exp's flush and overflow thresholds and the skip bounds.
  for (int64_t i = 0; i < n; i += 7) x[i] = RowMax(x) - 87.3365402f + 0.001f * (i % 5);
  ExpectAllPathsEqual(x, RowMax(x), "near flush");
  for (int64_t i = 3; i < n; i += 11) x[i] = RowMax(x) - 16.63553f + 0.0001f * (i % 13);
  ExpectAllPathsEqual(x, RowMax(x), "near the skip bound of s in [1, 2)");
  ExpectAllPathsEqual(x, RowMax(x) - 88.0f, "overflow to inf");
  x[n / 2] = NAN;
  ExpectAllPathsEqual(x, RowMax(x), "a NaN");
  ExpectAllPathsEqual(x, NAN, "NaN shift");
  ExpectAllPathsEqual(x, INFINITY, "inf shift");
}

// The bound: e < SumSkipBelow(s) leaves s unchanged; the bound itself can
// change s (a tie rounds s up when its last bit is odd), so it is tight.
TEST(SumExpShifted, SkipBoundIsExactAndTight) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> bits(0x00800000u, 0x7f7fffffu);
  int tight = 0;
  for (int i = 0; i < 200000; ++i) {
    uint32_t b = bits(rng);
    float s;
    std::memcpy(&s, &b, 4);
    const float t = SumSkipBelow(s);
    if (t == 0.0f) continue;
    ASSERT_EQ(s + std::nextafter(t, 0.0f), s) << s;
    ASSERT_EQ(s + t * 0.75f, s) << s;
    if (b & 1) {
      ASSERT_NE(s + t, s) << s;
      ++tight;
    }
  }
  EXPECT_GT(tight, 1000);
  EXPECT_EQ(SumSkipBelow(0.0f), 0.0f);
  EXPECT_EQ(SumSkipBelow(-1.0f), 0.0f);
  EXPECT_EQ(SumSkipBelow(INFINITY), 0.0f);
  EXPECT_EQ(SumSkipBelow(NAN), 0.0f);
  EXPECT_EQ(SumSkipBelow(1e-38f), 0.0f);  // the bound would be subnormal
  EXPECT_EQ(SumSkipBelow(1.0f), std::ldexp(1.0f, -24));
  EXPECT_EQ(SumSkipBelow(1.9f), std::ldexp(1.0f, -24));
  EXPECT_EQ(SumSkipBelow(2.0f), std::ldexp(1.0f, -23));
}

// The pre-exp test: every argument below SumSkipArgBelow(2^k) has an exp below 2^k.
TEST(SumExpShifted, ArgumentBoundImpliesTheSkipBound) {
  EXPECT_EQ(SumSkipArgBelow(0.0f), -INFINITY);
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> below_l(0.0f, 4.0f);
  for (int k = -126; k <= 103; ++k) {
    const float below = std::ldexp(1.0f, k);
    const float l = SumSkipArgBelow(below);
    ASSERT_EQ(SumSkipArgBelow(SumSkipBelow(std::ldexp(1.5f, k + 24))), l) << k;
    ASSERT_LT(ExpF(std::nextafter(l, -INFINITY)), below) << k;
    for (int i = 0; i < 2000; ++i) {
      const float y = l - below_l(rng);
      if (y < l) {
        ASSERT_LT(ExpF(y), below) << k << " y=" << y;
      }
    }
  }
}

}  // namespace
}  // namespace stet::kernels

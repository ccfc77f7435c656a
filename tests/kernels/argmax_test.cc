// Argmax: every path (AVX2, AVX-512 = AVX2, NEON) == the scalar strict-> loop
// (ties to the lower index, rule R7) for short rows, rows not a multiple of
// 8, vocabulary-size rows; ties, ±0, -inf, NaN anywhere (also at index 0 and
// everywhere). x[Argmax] is bitwise the std::max fold from x[0] (the sampler's max).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

void ExpectAllPathsEqual(const std::vector<float>& x, const char* what) {
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t want = Argmax(x.data(), n, Isa::kScalar);
  for (Isa isa : testing::AvailableIsas()) {
    ASSERT_EQ(Argmax(x.data(), n, isa), want) << what << " n=" << n << " isa=" << IsaName(isa);
  }
  if (n == 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  ASSERT_TRUE(testing::SameBits(&mx, &x[want], 1)) << what << " n=" << n;
}

// Values from a small set (many ties), with -inf, ±0 and optional NaNs.
std::vector<float> TieRow(std::mt19937& rng, int64_t n, bool nans) {
  std::uniform_int_distribution<int> v(-6, 3);
  std::vector<float> x(n);
  for (auto& f : x) {
    const int k = v(rng);
    f = k == -6 ? -INFINITY : k == -5 ? (nans ? NAN : -0.0f) : k == 0 ? 0.0f : 0.5f * k;
  }
  return x;
}

TEST(Argmax, ReferenceTiesToLowerIndex) {
  const std::vector<float> x = {1.0f, 3.0f, 3.0f, -2.0f, 3.0f};
  EXPECT_EQ(Argmax(x.data(), 5, Isa::kScalar), 1);
  EXPECT_EQ(Argmax(x.data(), 0, Isa::kScalar), 0);
}

TEST(Argmax, EveryPathEqualsScalarShortRows) {
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 3.0f);
  for (int64_t n = 0; n <= 300; ++n) {
    ExpectAllPathsEqual(TieRow(rng, n, false), "ties");
    ExpectAllPathsEqual(TieRow(rng, n, true), "ties and NaNs");
    std::vector<float> x(n);
    for (auto& f : x) f = g(rng);
    ExpectAllPathsEqual(x, "normal");
    // The max in every position, also the tail past the last full vector.
    for (int64_t p = 0; p < n; ++p) {
      std::vector<float> y = x;
      y[p] = 100.0f;
      ExpectAllPathsEqual(y, "max at p");
      y[n - 1] = 100.0f;
      ExpectAllPathsEqual(y, "tie at p and n-1");
    }
  }
}

TEST(Argmax, SpecialValues) {
  for (int64_t n : {1, 7, 8, 9, 33, 1000}) {
    ExpectAllPathsEqual(std::vector<float>(n, -INFINITY), "all -inf");
    ExpectAllPathsEqual(std::vector<float>(n, NAN), "all NaN");
    ExpectAllPathsEqual(std::vector<float>(n, 1.0f), "all equal");
    std::vector<float> z(n, -1.0f);
    for (int64_t i = 0; i < n; i += 3) z[i] = (i / 3) % 2 ? 0.0f : -0.0f;
    ExpectAllPathsEqual(z, "zero max, both signs");
    std::vector<float> y(n, -INFINITY);
    y[0] = NAN;
    if (n > 1) y[n - 1] = 5.0f;
    ExpectAllPathsEqual(y, "NaN at 0 is never beaten");
    y[0] = -INFINITY;
    for (int64_t i = 1; i < n; i += 2) y[i] = NAN;
    ExpectAllPathsEqual(y, "NaNs after index 0 never win");
    y.assign(n, NAN);
    y[0] = -INFINITY;
    ExpectAllPathsEqual(y, "-inf then NaNs");
  }
}

TEST(Argmax, EveryPathEqualsScalarVocabularyRows) {
  std::mt19937 rng(12);
  std::normal_distribution<float> g(0.0f, 3.0f);
  for (int64_t n : {262144, 262144 + 5, 151936 + 1}) {
    ExpectAllPathsEqual(TieRow(rng, n, false), "ties");
    ExpectAllPathsEqual(TieRow(rng, n, true), "ties and NaNs");
    std::vector<float> x(n);
    for (auto& f : x) f = g(rng);
    ExpectAllPathsEqual(x, "normal");
    x[n - 1] = 1000.0f;
    ExpectAllPathsEqual(x, "max last");
    x[n / 3] = 1000.0f;
    ExpectAllPathsEqual(x, "tie");
  }
}

}  // namespace
}  // namespace stet::kernels

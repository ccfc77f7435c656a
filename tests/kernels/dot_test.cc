// Dot: the canonical 8-lane sum, emulated independently here from its written
// definition; AVX2 and NEON == scalar bit for bit for n = 0..300 and misaligned inputs;
// within gamma(n/8 + 3) * sum|a_k b_k| of float64.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

float CanonicalDot(const float* a, const float* b, int64_t n) {
  float l[8] = {};
  for (int64_t k = 0; k < n; ++k) l[k % 8] = std::fma(a[k], b[k], l[k % 8]);
  const float s4[4] = {l[0] + l[4], l[1] + l[5], l[2] + l[6], l[3] + l[7]};
  const float s2[2] = {s4[0] + s4[2], s4[1] + s4[3]};
  return s2[0] + s2[1];
}

TEST(Dot, ScalarIsTheCanonicalOrder) {
  std::mt19937 rng(1);
  for (int64_t n = 0; n <= 300; ++n) {
    const auto a = testing::RandomFloats(rng, n), b = testing::RandomFloats(rng, n);
    EXPECT_EQ(FloatBits(CanonicalDot(a.data(), b.data(), n)),
              FloatBits(Dot(a.data(), b.data(), n, Isa::kScalar)))
        << "n=" << n;
  }
}

TEST(Dot, OrderIsObservable) {
  // Orders give different answers here, so the canonical one is really pinned.
  // Lanes: 1e8 (k=0) and -1e8 (k=8) share lane 0, 1 (k=1) sits in lane 1: the
  // 8-lane sum is 1, where a sequential sum would lose the 1 and give 0.
  std::vector<float> a(16, 0.0f), b(16, 1.0f);
  a[0] = 1e8f;
  a[1] = 1.0f;
  a[8] = -1e8f;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
    EXPECT_EQ(Dot(a.data(), b.data(), 16, isa), 1.0f);
  }
  // The tree adds lane 4 to lane 0 first: (1e8 + 1) + (-1e8) = 0, where
  // (1e8 + -1e8) + 1 would be 1.
  std::vector<float> c(8, 0.0f);
  c[0] = 1e8f;
  c[4] = 1.0f;
  c[2] = -1e8f;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
    EXPECT_EQ(Dot(c.data(), b.data(), 8, isa), 0.0f);
  }
}

// `isa` equals the scalar reference bit for bit for n = 0..300 at three
// alignments, and for a few long rows.
void ExpectEqualsScalar(Isa isa) {
  std::mt19937 rng(2);
  for (int64_t n = 0; n <= 300; ++n) {
    for (int off = 0; off < 3; ++off) {
      const auto a = testing::RandomFloats(rng, n + off, -3.0f, 3.0f);
      const auto b = testing::RandomFloats(rng, n + off, -3.0f, 3.0f);
      const float s = Dot(a.data() + off, b.data() + off, n, Isa::kScalar);
      const float v = Dot(a.data() + off, b.data() + off, n, isa);
      ASSERT_EQ(FloatBits(s), FloatBits(v)) << "n=" << n << " off=" << off;
    }
  }
  for (int64_t n : {1000, 4096, 10007}) {
    const auto a = testing::RandomFloats(rng, n), b = testing::RandomFloats(rng, n);
    EXPECT_EQ(FloatBits(Dot(a.data(), b.data(), n, Isa::kScalar)),
              FloatBits(Dot(a.data(), b.data(), n, isa)));
  }
}

TEST(Dot, Avx2EqualsScalar) {
  STET_REQUIRE_AVX2();
  ExpectEqualsScalar(Isa::kAvx2);
}

TEST(Dot, NeonEqualsScalar) {
  STET_REQUIRE_NEON();
  ExpectEqualsScalar(Isa::kNeon);
}

TEST(Dot, AccuracyAgainstFloat64) {
  std::mt19937 rng(3);
  for (int64_t n : {1, 7, 8, 9, 100, 1000, 4099}) {
    const auto a = testing::RandomFloats(rng, n), b = testing::RandomFloats(rng, n);
    double exact = 0, s = 0;
    for (int64_t k = 0; k < n; ++k) {
      exact += static_cast<double>(a[k]) * b[k];
      s += std::fabs(static_cast<double>(a[k]) * b[k]);
    }
    for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
      if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
      const double got = Dot(a.data(), b.data(), n, isa);
      EXPECT_LE(std::fabs(got - exact), testing::Gamma((n + 7) / 8 + 3) * s) << "n=" << n;
    }
  }
}

}  // namespace
}  // namespace stet::kernels

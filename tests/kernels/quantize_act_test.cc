// Activation quantization for integer dots (rule R6): hand-computed blocks
// (ties round to even, d = 0 for zero blocks, padding), AVX2 and NEON == scalar bit for
// bit also for huge, subnormal-only and nan blocks (|q| <= 127 always),
// row-locality, and |d*q - x| <= d/2 up to the rounding of x * (1/d).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/internal.h"

namespace stet::kernels {
namespace {

TEST(QuantizeActQ8, HandComputedBlock) {
  // amax = 127 -> d = 1, id = 1: q is x rounded half to even.
  std::vector<float> x(64, 0.0f);
  const float vals[] = {2.5f, 3.5f, -2.5f, 127.0f, 0.5f, 1.5f, -0.5f, -126.4f};
  const int8_t want[] = {2, 4, -2, 127, 0, 2, 0, -126};
  for (int i = 0; i < 8; ++i) x[i] = vals[i];
  std::vector<uint8_t> storage;
  ActQ8 a;
  PrepareActQ8(1, 64, &storage, &a);
  ref::QuantizeActQ8(x.data(), &a);
  EXPECT_EQ(a.nb, 2);
  EXPECT_EQ(a.nb_pad, 8);
  EXPECT_EQ(a.d[0], 1.0f);
  int sum = 0;
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(a.qs[i], want[i]) << i;
    sum += want[i];
  }
  EXPECT_EQ(a.qsum[0], sum);
  EXPECT_EQ(a.s[0], static_cast<float>(sum));
  // Block 1 is all zeros: d = 0, q = 0; blocks 2..7 are padding.
  EXPECT_EQ(a.d[1], 0.0f);
  for (int64_t b = 1; b < 8; ++b) {
    EXPECT_EQ(a.d[b], 0.0f);
    EXPECT_EQ(a.s[b], 0.0f);
    EXPECT_EQ(a.qsum[b], 0);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(a.qs[b * 32 + i], 0);
  }
}

TEST(QuantizeActQ8K, HandComputedSuperblock) {
  // amax = 254 -> d = 2, id = 0.5; bsums are the sums of each 16 q's.
  std::vector<float> x(256, 0.0f);
  x[0] = 254.0f;   // q 127
  x[1] = -5.0f;    // -2.5 -> -2
  x[16] = 7.0f;    // 3.5 -> 4
  x[255] = -1.0f;  // -0.5 -> -0
  std::vector<uint8_t> storage;
  ActQ8K a;
  PrepareActQ8K(1, 256, &storage, &a);
  ref::QuantizeActQ8K(x.data(), &a);
  EXPECT_EQ(a.d[0], 2.0f);
  EXPECT_EQ(a.qs[0], 127);
  EXPECT_EQ(a.qs[1], -2);
  EXPECT_EQ(a.qs[16], 4);
  EXPECT_EQ(a.qs[255], 0);
  EXPECT_EQ(a.bsums[0], 125);
  EXPECT_EQ(a.bsums[1], 4);
  for (int g = 2; g < 16; ++g) EXPECT_EQ(a.bsums[g], 0);
}

std::vector<float> TrickyRows(std::mt19937& rng, int64_t m, int64_t k) {
  auto x = testing::RandomActivations(rng, m * k);
  // Some blocks with huge, tiny and subnormal magnitudes, and exact ties.
  for (int64_t i = 0; i + 32 <= m * k; i += 32 * 5) x[i] *= 1e30f;
  for (int64_t i = 33; i < m * k; i += 32 * 7) x[i] = 1e-40f;
  for (int64_t i = 100; i < m * k; i += 32 * 11) x[i] = std::nanf("");
  for (int64_t i = 70; i + 32 < m * k; i += 32 * 3) {
    x[i] = 127.0f;
    x[i + 1] = 0.5f;
    x[i + 2] = -3.5f;
  }
  return x;
}

// A SIMD path's activation quantization against ref, bit for bit.
void Q8EqualsScalar(void (*simd)(const float*, ActQ8*)) {
  std::mt19937 rng(11);
  std::vector<uint8_t> s1, s2;
  for (int64_t k : {32, 64, 288, 576, 1536}) {
    for (int64_t m : {1, 3, 7}) {
      const auto x = TrickyRows(rng, m, k);
      ActQ8 a, b;
      PrepareActQ8(m, k, &s1, &a);
      PrepareActQ8(m, k, &s2, &b);
      ref::QuantizeActQ8(x.data(), &a);
      simd(x.data(), &b);
      const int64_t nblk = m * a.nb_pad;
      ASSERT_EQ(0, std::memcmp(a.qs, b.qs, nblk * 32)) << "k=" << k;
      ASSERT_TRUE(testing::SameBits(a.d, b.d, nblk));
      ASSERT_TRUE(testing::SameBits(a.s, b.s, nblk));
      ASSERT_EQ(0, std::memcmp(a.qsum, b.qsum, nblk * 4));
      for (int64_t i = 0; i < nblk * 32; ++i) ASSERT_GE(a.qs[i], -127);
    }
  }
}

void Q8KEqualsScalar(void (*simd)(const float*, ActQ8K*)) {
  std::mt19937 rng(12);
  std::vector<uint8_t> s1, s2;
  for (int64_t k : {256, 512, 2304}) {
    for (int64_t m : {1, 2, 5}) {
      const auto x = TrickyRows(rng, m, k);
      ActQ8K a, b;
      PrepareActQ8K(m, k, &s1, &a);
      PrepareActQ8K(m, k, &s2, &b);
      ref::QuantizeActQ8K(x.data(), &a);
      simd(x.data(), &b);
      ASSERT_EQ(0, std::memcmp(a.qs, b.qs, m * k));
      ASSERT_TRUE(testing::SameBits(a.d, b.d, m * a.nsb));
      ASSERT_EQ(0, std::memcmp(a.bsums, b.bsums, m * a.nsb * 16 * 2));
    }
  }
}

#if defined(__x86_64__)
TEST(QuantizeActQ8, Avx2EqualsScalar) {
  STET_REQUIRE_AVX2();
  Q8EqualsScalar(avx2::QuantizeActQ8);
}

TEST(QuantizeActQ8K, Avx2EqualsScalar) {
  STET_REQUIRE_AVX2();
  Q8KEqualsScalar(avx2::QuantizeActQ8K);
}
#endif

#if defined(__aarch64__)
TEST(QuantizeActQ8, NeonEqualsScalar) {
  STET_REQUIRE_NEON();
  Q8EqualsScalar(neon::QuantizeActQ8);
}

TEST(QuantizeActQ8K, NeonEqualsScalar) {
  STET_REQUIRE_NEON();
  Q8KEqualsScalar(neon::QuantizeActQ8K);
}
#endif

TEST(QuantizeActQ8, RowLocalAndWithinHalfAStep) {
  std::mt19937 rng(13);
  const int64_t m = 6, k = 320;
  const auto x = testing::RandomActivations(rng, m * k);
  std::vector<uint8_t> s_all, s_one;
  ActQ8 all;
  PrepareActQ8(m, k, &s_all, &all);
  ref::QuantizeActQ8(x.data(), &all);
  for (int64_t r = 0; r < m; ++r) {
    ActQ8 one;
    PrepareActQ8(1, k, &s_one, &one);
    ref::QuantizeActQ8(x.data() + r * k, &one);
    ASSERT_EQ(0, std::memcmp(one.qs, all.qs + r * all.nb_pad * 32, one.nb_pad * 32));
    ASSERT_TRUE(testing::SameBits(one.d, all.d + r * all.nb_pad, one.nb_pad));
    for (int64_t j = 0; j < k; ++j) {
      const double d = one.d[j / 32];
      const double err = std::fabs(d * one.qs[j] - x[r * k + j]);
      // |x*id - x/d| <= u*127 plus the rounding of id itself (another u*127).
      EXPECT_LE(err, d * (0.5 + 256 * testing::kU)) << "row " << r << " elem " << j;
    }
  }
}

}  // namespace
}  // namespace stet::kernels

// Refined activations' residual (numerics version 2): r = x - the int8
// activation the kernels quantize x to. Every ISA and any thread count give the
// scalar reference's bits (ref::ActResidual, its own scalar quantizer), and the
// residual is what the int8 activation misses: |r| <= d/2 up to one rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/internal.h"
#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

using testing::AvailableIsas;
using testing::SameBits;

std::vector<float> Rows(int64_t m, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(m * k);
  for (float& v : x) v = n(rng);
  for (int64_t i = 0; i < m * k; i += 97) x[i] *= 40.0f;  // outliers set some blocks' scale
  for (int64_t i = 0; i < 32 && i < k; ++i) x[i] = 0.0f;  // an all-zero block: d = 0, r = x
  return x;
}

TEST(ActResidual, EveryIsaAndPoolEqualsTheScalarReference) {
  ThreadPool pool(3);
  for (DType t : {DType::kQ8_0, DType::kQ4_1, DType::kQ4_K, DType::kIQ4_XS}) {
    const int block = ActQuantBlock(t);
    for (int64_t m : {1, 2, 5, 17}) {
      const int64_t k = 512;
      const std::vector<float> x = Rows(m, k, static_cast<uint32_t>(m * 31 + block));
      std::vector<float> want(m * k);
      ref::ActResidual(x.data(), m, k, block, want.data());
      for (Isa isa : AvailableIsas()) {
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          std::vector<float> got(m * k, -1.0f);
          ActResidual(t, x.data(), m, k, got.data(), p, isa);
          ASSERT_TRUE(SameBits(want.data(), got.data(), m * k))
              << DTypeName(t) << " m=" << m << " " << IsaName(isa) << (p ? " pool" : "");
        }
      }
    }
  }
}

TEST(ActResidual, IsWhatTheInt8ActivationMisses) {
  const int64_t k = 256;
  const std::vector<float> x = Rows(1, k, 7);
  std::vector<float> r(k);
  ActResidual(DType::kQ8_0, x.data(), 1, k, r.data(), nullptr, Isa::kScalar);
  for (int64_t b = 0; b < k / 32; ++b) {
    float amax = 0;
    for (int e = 0; e < 32; ++e) amax = std::max(amax, std::fabs(x[b * 32 + e]));
    const float d = amax / 127.0f;
    for (int e = 0; e < 32; ++e) {
      const int64_t i = b * 32 + e;
      if (d == 0.0f) {
        EXPECT_EQ(r[i], x[i]);
      } else {
        EXPECT_LE(std::fabs(r[i]), 0.5f * d * (1.0f + 1e-5f)) << i;
      }
    }
  }
  EXPECT_DEATH(ActResidual(DType::kF16, x.data(), 1, k, r.data(), nullptr, Isa::kScalar), "");
}

}  // namespace
}  // namespace stet::kernels

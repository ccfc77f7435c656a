// StoreRow (KV cache writes, rule R3): f32 is a copy; f16 AVX2 (F16C) and NEON (FCVTN) ==
// scalar F32ToF16 bit for bit over a sweep of ~1M bit patterns plus every
// special class (nan, inf, overflow edge, subnormals, ties), and values that
// are exactly representable in f16 survive the round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

std::vector<float> SweepValues() {
  std::vector<float> v;
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 4093)
    v.push_back(BitsFloat(static_cast<uint32_t>(bits)));
  const float specials[] = {0.0f,
                            -0.0f,
                            INFINITY,
                            -INFINITY,
                            std::nanf(""),
                            -std::nanf(""),
                            65504.0f,
                            65519.99f,
                            65520.0f,
                            -65520.0f,
                            65536.0f,
                            1e-8f,
                            5.960464477539063e-8f,
                            2.98023223876953125e-8f,
                            2.9802326e-8f,
                            6.103515625e-5f,
                            6.1035e-5f,
                            1.0009765625f,
                            1.00048828125f,
                            1.00146484375f,
                            1e-45f,
                            3.4e38f};
  for (float s : specials) v.push_back(s);
  return v;
}

TEST(StoreRow, F32IsACopy) {
  std::mt19937 rng(61);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
    const auto x = testing::RandomFloats(rng, 37);
    std::vector<float> out(37);
    StoreRow(x.data(), 37, DType::kF32, out.data(), isa);
    EXPECT_TRUE(testing::SameBits(x.data(), out.data(), 37));
  }
}

// `isa`'s f16 conversion equals the scalar one bit for bit on the sweep, and
// on every tail length 0..20 at an odd offset without writing past the row.
void ExpectF16EqualsScalar(Isa isa) {
  const auto v = SweepValues();
  const int64_t n = static_cast<int64_t>(v.size());
  std::vector<uint16_t> s(n), a(n);
  StoreRow(v.data(), n, DType::kF16, s.data(), Isa::kScalar);
  StoreRow(v.data(), n, DType::kF16, a.data(), isa);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(s[i], a[i]) << "input bits 0x" << std::hex << FloatBits(v[i]);
  }
  for (int64_t len = 0; len <= 20; ++len) {
    std::vector<uint16_t> s2(len + 1, 0xabcd), a2(len + 1, 0xabcd);
    StoreRow(v.data() + 3, len, DType::kF16, s2.data(), Isa::kScalar);
    StoreRow(v.data() + 3, len, DType::kF16, a2.data(), isa);
    ASSERT_EQ(s2, a2) << len;
    ASSERT_EQ(a2[len], 0xabcd) << "wrote past the row";
  }
}

TEST(StoreRow, F16Avx2EqualsScalar) {
  STET_REQUIRE_AVX2();
  ExpectF16EqualsScalar(Isa::kAvx2);
}

TEST(StoreRow, F16NeonEqualsScalar) {
  STET_REQUIRE_NEON();
  ExpectF16EqualsScalar(Isa::kNeon);
}

TEST(StoreRow, F16RoundTripsRepresentableValues) {
  std::mt19937 rng(62);
  std::uniform_int_distribution<int> bits(0, 0x7bff);
  std::vector<float> x(1000);
  for (auto& f : x) f = F16ToF32(static_cast<uint16_t>(bits(rng) | (rng() & 1 ? 0x8000 : 0)));
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
    std::vector<uint16_t> h(x.size());
    StoreRow(x.data(), static_cast<int64_t>(x.size()), DType::kF16, h.data(), isa);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(FloatBits(F16ToF32(h[i])), FloatBits(x[i]));
  }
}

}  // namespace
}  // namespace stet::kernels

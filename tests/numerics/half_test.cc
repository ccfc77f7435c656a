// Pins half.h: f16 widening is exact and narrowing rounds to nearest even, bit-equal to
// the F16C instructions (exhaustive over all f16 patterns and over every float in the
// range where f16 rounding happens), and to an
// independent table-based reference on any CPU; bf16 rounds to nearest even.
// NaN payloads are not compared, only NaN-ness.
#include "numerics/half.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/cpu_features.h"

namespace stet {
namespace {

bool IsNanBits32(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }
bool IsNanBits16(uint16_t h) { return (h & 0x7fff) > 0x7c00; }

__attribute__((target("f16c"))) float HwF16ToF32(uint16_t h) { return _cvtsh_ss(h); }

// Mismatches of F32ToF16 against VCVTPS2PH (round to nearest even) over
// [begin, end) float bit patterns; NaN results only need to be NaN on both sides.
__attribute__((target("avx,f16c"))) uint64_t CountF32ToF16Mismatches(uint64_t begin, uint64_t end,
                                                                     uint32_t* first_bad) {
  uint64_t bad = 0;
  alignas(32) uint32_t in[8];
  alignas(16) uint16_t hw[8];
  for (uint64_t u = begin; u < end; u += 8) {
    for (int k = 0; k < 8; ++k) in[k] = static_cast<uint32_t>(u + k);
    const __m256 v = _mm256_load_ps(reinterpret_cast<const float*>(in));
    _mm_store_si128(reinterpret_cast<__m128i*>(hw), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    for (int k = 0; k < 8; ++k) {
      const uint16_t sw = F32ToF16(BitsFloat(in[k]));
      const bool ok = IsNanBits32(in[k]) ? (IsNanBits16(sw) && IsNanBits16(hw[k])) : sw == hw[k];
      if (!ok) {
        if (bad == 0) *first_bad = in[k];
        ++bad;
      }
    }
  }
  return bad;
}

TEST(HalfTest, F16ToF32ExhaustiveVsF16c) {
  if (!CpuHasAvx2Fma()) GTEST_SKIP() << "CPU lacks F16C";
  int nans = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float sw = F16ToF32(static_cast<uint16_t>(h));
    const float hw = HwF16ToF32(static_cast<uint16_t>(h));
    if (IsNanBits16(static_cast<uint16_t>(h))) {
      EXPECT_TRUE(std::isnan(sw) && std::isnan(hw)) << std::hex << h;
      ++nans;
    } else {
      ASSERT_EQ(FloatBits(sw), FloatBits(hw)) << "f16 bits 0x" << std::hex << h;
    }
  }
  EXPECT_EQ(nans, 2 * 1023);
}

TEST(HalfTest, F16ToF32MatchesFormula) {
  // Independent of F16C: value = (-1)^s * 2^(e-15) * (1 + m/1024), subnormals 2^-24 * m.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint32_t s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) {
      EXPECT_EQ(std::isnan(F16ToF32(static_cast<uint16_t>(h))), m != 0);
      continue;
    }
    const double mag = e == 0 ? std::ldexp(static_cast<double>(m), -24)
                              : std::ldexp(1.0 + m / 1024.0, static_cast<int>(e) - 15);
    const float want = static_cast<float>(s ? -mag : mag);
    ASSERT_EQ(FloatBits(F16ToF32(static_cast<uint16_t>(h))), FloatBits(want)) << std::hex << h;
  }
}

TEST(HalfTest, F32ToF16VsF16c) {
  if (!CpuHasAvx2Fma()) GTEST_SKIP() << "CPU lacks F16C";
  // Exhaustive where rounding decisions happen: |x| in [2^-26, 2^17) (below: +-0, above:
  // +-inf), both signs, 721M floats; every 61st pattern elsewhere (inf, nan, denormals).
  uint32_t first_bad = 0;
  uint64_t bad = 0;
  for (uint64_t sign : {uint64_t{0}, uint64_t{0x80000000}}) {
    bad += CountF32ToF16Mismatches(sign | (uint64_t{101} << 23), sign | (uint64_t{144} << 23),
                                   &first_bad);
  }
  EXPECT_EQ(bad, 0u) << "first mismatch at float bits 0x" << std::hex << first_bad;
  for (uint64_t u = 0; u + 8 <= (uint64_t{1} << 32); u += 61 * 8) {
    bad += CountF32ToF16Mismatches(u, u + 8, &first_bad);
  }
  EXPECT_EQ(bad, 0u) << "first mismatch at float bits 0x" << std::hex << first_bad;
}

// Nearest f16 with ties to even, by search over the sorted positive f16 values (any CPU).
uint16_t RefF32ToF16(float x, const std::vector<double>& pos_values) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(x));
  if (std::isnan(x)) return 0x7e00;
  // 65520 = 65504 + half an ulp: ties go to the even neighbour, which is "65536" = inf.
  if (a >= 65520.0) return sign | 0x7c00;
  const auto it = std::upper_bound(pos_values.begin(), pos_values.end(), a);
  const uint16_t hi = static_cast<uint16_t>(it - pos_values.begin());  // first value > a
  const uint16_t lo = hi - 1;                                          // value <= a
  const double dlo = a - pos_values[lo], dhi = pos_values[hi] - a;
  uint16_t r = dlo < dhi ? lo : (dhi < dlo ? hi : ((lo & 1) ? hi : lo));
  return sign | r;
}

TEST(HalfTest, F32ToF16VsReferenceSampled) {
  std::vector<double> pos_values;  // bits 0 .. 0x7bff, plus 65536 as a sentinel
  for (uint32_t h = 0; h < 0x7c00; ++h) pos_values.push_back(F16ToF32(static_cast<uint16_t>(h)));
  pos_values.push_back(65536.0);
  uint64_t checked = 0;
  auto check = [&](uint32_t u) {
    const float x = BitsFloat(u);
    const uint16_t got = F32ToF16(x), want = RefF32ToF16(x, pos_values);
    if (std::isnan(x)) {
      ASSERT_TRUE(IsNanBits16(got)) << std::hex << u;
    } else {
      ASSERT_EQ(got, want) << "float bits 0x" << std::hex << u;
    }
    ++checked;
  };
  // Every float whose exponent is near the f16 range at a stride, plus every float
  // within 64 ulps of each f16 value and of each midpoint between neighbours.
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 251) check(static_cast<uint32_t>(u));
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float v = F16ToF32(static_cast<uint16_t>(h));
    const double next = h + 1 < 0x7c00 ? F16ToF32(static_cast<uint16_t>(h + 1)) : 65536.0;
    const float mid = static_cast<float>((v + next) / 2);  // exact: 11 bits
    for (float c : {v, mid}) {
      for (int d = -64; d <= 64; ++d) {
        const int64_t u = static_cast<int64_t>(FloatBits(c)) + d;
        if (u < 0) continue;
        check(static_cast<uint32_t>(u));
        check(static_cast<uint32_t>(u) | 0x80000000u);
      }
    }
  }
  EXPECT_GT(checked, 20000000u);
}

TEST(HalfTest, F32ToF16Boundaries) {
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(65519.996f), 0x7bff);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);  // tie to even rounds up into inf
  EXPECT_EQ(F32ToF16(-65520.0f), 0xfc00);
  EXPECT_EQ(F32ToF16(INFINITY), 0x7c00);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: 0
  EXPECT_EQ(F32ToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(F32ToF16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 * 2^-24: tie to even 2
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(F32ToF16(std::nextafter(std::ldexp(1.0f, -14), 0.0f)), 0x0400);  // rounds up
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie: even
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie: even (up)
  EXPECT_TRUE(IsNanBits16(F32ToF16(NAN)));
  EXPECT_TRUE(IsNanBits16(F32ToF16(BitsFloat(0x7f800001u))));  // smallest-payload sNaN
}

// Nearest bf16 with ties to even, from the two truncation neighbours (exact in double).
uint16_t RefF32ToBF16(uint32_t u) {
  const uint16_t lo = static_cast<uint16_t>(u >> 16);
  if ((u & 0xffff) == 0) return lo;
  const double x = std::fabs(static_cast<double>(BitsFloat(u)));
  const double vlo = std::fabs(static_cast<double>(BF16ToF32(lo)));
  const uint16_t hi = lo + 1;  // same sign, next magnitude (0x7f80 = inf counts as 2^128)
  const double vhi = (hi & 0x7fff) == 0x7f80 ? std::ldexp(1.0, 128)
                                             : std::fabs(static_cast<double>(BF16ToF32(hi)));
  const double dlo = x - vlo, dhi = vhi - x;
  return dlo < dhi ? lo : (dhi < dlo ? hi : ((lo & 1) ? hi : lo));
}

TEST(HalfTest, BF16RoundTripAndRounding) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = BF16ToF32(static_cast<uint16_t>(h));
    EXPECT_EQ(FloatBits(f), h << 16);
    if ((h & 0x7fff) > 0x7f80) {
      EXPECT_TRUE((F32ToBF16(f) & 0x7fff) > 0x7f80) << std::hex << h;  // stays nan
      continue;
    }
    ASSERT_EQ(F32ToBF16(f), h) << std::hex << h;
    if ((h & 0x7fff) >= 0x7f80) continue;  // no ties above inf
    // The exact tie rounds to even; one ulp (of float) either side goes to the nearer.
    const uint32_t tie = (h << 16) | 0x8000;
    const uint16_t up = static_cast<uint16_t>(h + 1);
    EXPECT_EQ(F32ToBF16(BitsFloat(tie)), (h & 1) ? up : h) << std::hex << h;
    EXPECT_EQ(F32ToBF16(BitsFloat(tie - 1)), h) << std::hex << h;
    EXPECT_EQ(F32ToBF16(BitsFloat(tie + 1)), up) << std::hex << h;
  }
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 97) {
    const uint32_t b = static_cast<uint32_t>(u);
    if (IsNanBits32(b)) {
      ASSERT_TRUE((F32ToBF16(BitsFloat(b)) & 0x7fff) > 0x7f80) << std::hex << b;
    } else {
      ASSERT_EQ(F32ToBF16(BitsFloat(b)), RefF32ToBF16(b)) << "float bits 0x" << std::hex << b;
    }
  }
  EXPECT_EQ(F32ToBF16(BitsFloat(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_EQ(F32ToBF16(BitsFloat(0xff7f8000u)), 0xff80);  // tie at the top: even = -inf
  EXPECT_EQ(F32ToBF16(BitsFloat(0x7f7f7fffu)), 0x7f7f);
}

}  // namespace
}  // namespace stet

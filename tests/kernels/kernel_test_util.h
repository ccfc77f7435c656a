// Helpers for the kernel tests: seeded random inputs, random but well-formed
// weight rows of every supported type, bit-exact comparison, the ISA list, and
// the rounding-error constant gamma(n) = n*u / (1 - n*u) that the accuracy
// bounds are built from (u = 2^-24, the unit roundoff of float).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "numerics/dequant.h"
#include "numerics/dtype.h"
#include "numerics/half.h"

namespace stet::kernels::testing {

constexpr double kU = 1.0 / 16777216.0;  // 2^-24

inline double Gamma(double n) { return n * kU / (1.0 - n * kU); }

// Skips the rest of a test (not the whole suite) on CPUs without AVX2.
#define STET_REQUIRE_AVX2()                                                  \
  do {                                                                       \
    if (!::stet::CpuHasAvx2Fma()) GTEST_SKIP() << "CPU lacks AVX2+FMA+F16C"; \
  } while (0)

#define STET_REQUIRE_AVX512()                                                         \
  do {                                                                                \
    if (!::stet::CpuHasAvx512()) GTEST_SKIP() << "CPU lacks AVX-512 F/BW/DQ/VL/VNNI"; \
  } while (0)

#define STET_REQUIRE_NEON()                                                         \
  do {                                                                              \
    if (!::stet::CpuHasNeon()) GTEST_SKIP() << "not an aarch64 CPU (no NEON path)"; \
  } while (0)

// Every kernel path this CPU can run, the scalar reference first.
inline std::vector<Isa> AvailableIsas() {
  std::vector<Isa> out{Isa::kScalar};
  if (::stet::CpuHasAvx2Fma()) out.push_back(Isa::kAvx2);
  if (::stet::CpuHasAvx512()) out.push_back(Isa::kAvx512);
  if (::stet::CpuHasNeon()) out.push_back(Isa::kNeon);
  return out;
}

inline bool SameBits(const float* a, const float* b, int64_t n) {
  return n == 0 || std::memcmp(a, b, static_cast<size_t>(n) * sizeof(float)) == 0;
}

// Index of the first differing float, or -1.
inline int64_t FirstDiff(const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (FloatBits(a[i]) != FloatBits(b[i])) return i;
  }
  return -1;
}

inline std::vector<float> RandomFloats(std::mt19937& rng, int64_t n, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

// A gated FFN kernel (SwiGlu, GeGlu): out[i] = act(gate[i]) * up[i].
using GatedKernel = void (*)(const float* gate, const float* up, int64_t n, float* out, Isa isa);

// `isa` equals the scalar reference bit for bit for n = 0..100 (every tail
// length), gates in [-12, 12] with every third one replaced by a special value
// (cycling through `specials`), and with the output aliasing either input.
inline void ExpectGatedEqualsScalar(GatedKernel f, Isa isa, uint32_t seed,
                                    const std::vector<float>& specials) {
  std::mt19937 rng(seed);
  for (int64_t n = 0; n <= 100; ++n) {
    auto g = RandomFloats(rng, n, -12.0f, 12.0f);
    const auto u = RandomFloats(rng, n, -3.0f, 3.0f);
    for (int64_t i = 0; i < n; i += 3) g[i] = specials[(i / 3) % specials.size()];
    std::vector<float> ys(n), ya(n), alias_g = g, alias_u = u;
    f(g.data(), u.data(), n, ys.data(), Isa::kScalar);
    f(g.data(), u.data(), n, ya.data(), isa);
    ASSERT_TRUE(SameBits(ys.data(), ya.data(), n)) << IsaName(isa) << " n=" << n;
    f(alias_g.data(), u.data(), n, alias_g.data(), isa);
    f(g.data(), alias_u.data(), n, alias_u.data(), isa);
    ASSERT_TRUE(SameBits(ys.data(), alias_g.data(), n)) << IsaName(isa) << " n=" << n;
    ASSERT_TRUE(SameBits(ys.data(), alias_u.data(), n)) << IsaName(isa) << " n=" << n;
  }
}

// Activations with a realistic spread: per-32 scale varies over 2^-6..2^6, some
// blocks are all zero (d = 0 path) and a few entries are exact ties for q8.
inline std::vector<float> RandomActivations(std::mt19937& rng, int64_t n) {
  std::vector<float> v = RandomFloats(rng, n);
  std::uniform_int_distribution<int> e(-6, 6), pick(0, 15);
  for (int64_t b = 0; b < n; b += 32) {
    const int choice = pick(rng);
    const float s = std::ldexp(1.0f, e(rng));
    for (int64_t i = b; i < std::min(n, b + 32); ++i) v[i] = choice == 0 ? 0.0f : v[i] * s;
  }
  return v;
}

inline uint16_t RandomHalf(std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  return F32ToF16(dist(rng));
}

inline void PutHalf(uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); }

// One row of `type` with n elements: random quants (full range), random scales
// bytes, and f16 super-scales small enough that nothing overflows.
inline std::vector<uint8_t> RandomWeightRow(std::mt19937& rng, DType type, int64_t n) {
  const int64_t bytes = RowBytes(type, n);
  std::vector<uint8_t> row(static_cast<size_t>(bytes));
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : row) b = static_cast<uint8_t>(byte(rng));
  switch (type) {
    case DType::kF32: {
      auto f = RandomFloats(rng, n);
      std::memcpy(row.data(), f.data(), static_cast<size_t>(bytes));
      break;
    }
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) PutHalf(row.data() + 2 * i, RandomHalf(rng, -1.0f, 1.0f));
      break;
    case DType::kBF16: {
      auto f = RandomFloats(rng, n);
      for (int64_t i = 0; i < n; ++i) PutHalf(row.data() + 2 * i, F32ToBF16(f[i]));
      break;
    }
    case DType::kQ8_0:
      for (int64_t b = 0; b < n / kQK; ++b)
        PutHalf(row.data() + b * sizeof(BlockQ8_0), RandomHalf(rng, -0.02f, 0.02f));
      break;
    case DType::kQ4_0:
      for (int64_t b = 0; b < n / kQK; ++b)
        PutHalf(row.data() + b * sizeof(BlockQ4_0), RandomHalf(rng, -0.2f, 0.2f));
      break;
    case DType::kQ4_1:
      for (int64_t b = 0; b < n / kQK; ++b) {
        uint8_t* p = row.data() + b * sizeof(BlockQ4_1);
        PutHalf(p + offsetof(BlockQ4_1, d), RandomHalf(rng, 0.0f, 0.2f));
        PutHalf(p + offsetof(BlockQ4_1, m), RandomHalf(rng, -1.6f, 0.0f));
      }
      break;
    case DType::kQ5_0:
      for (int64_t b = 0; b < n / kQK; ++b)
        PutHalf(row.data() + b * sizeof(BlockQ5_0), RandomHalf(rng, -0.1f, 0.1f));
      break;
    case DType::kQ5_1:
      for (int64_t b = 0; b < n / kQK; ++b) {
        uint8_t* p = row.data() + b * sizeof(BlockQ5_1);
        PutHalf(p + offsetof(BlockQ5_1, d), RandomHalf(rng, 0.0f, 0.1f));
        PutHalf(p + offsetof(BlockQ5_1, m), RandomHalf(rng, -1.6f, 0.0f));
      }
      break;
    case DType::kIQ4_NL:
      for (int64_t b = 0; b < n / kQK; ++b)
        PutHalf(row.data() + b * sizeof(BlockIQ4_NL), RandomHalf(rng, -0.01f, 0.01f));
      break;
    case DType::kQ2_K:
      for (int64_t b = 0; b < n / kQKK; ++b) {
        uint8_t* p = row.data() + b * sizeof(BlockQ2_K);
        PutHalf(p + offsetof(BlockQ2_K, d), RandomHalf(rng, 0.0f, 0.03f));
        PutHalf(p + offsetof(BlockQ2_K, dmin), RandomHalf(rng, 0.0f, 0.03f));
      }
      break;
    case DType::kQ3_K:
      for (int64_t b = 0; b < n / kQKK; ++b)
        PutHalf(row.data() + b * sizeof(BlockQ3_K) + offsetof(BlockQ3_K, d),
                RandomHalf(rng, -0.01f, 0.01f));
      break;
    case DType::kIQ4_XS:
      for (int64_t b = 0; b < n / kQKK; ++b)
        PutHalf(row.data() + b * sizeof(BlockIQ4_XS), RandomHalf(rng, -0.0003f, 0.0003f));
      break;
    case DType::kQ4_K:
      for (int64_t b = 0; b < n / kQKK; ++b) {
        uint8_t* p = row.data() + b * sizeof(BlockQ4_K);
        PutHalf(p + offsetof(BlockQ4_K, d), RandomHalf(rng, 0.0f, 0.004f));
        PutHalf(p + offsetof(BlockQ4_K, dmin), RandomHalf(rng, 0.0f, 0.004f));
      }
      break;
    case DType::kQ5_K:
      for (int64_t b = 0; b < n / kQKK; ++b) {
        uint8_t* p = row.data() + b * sizeof(BlockQ5_K);
        PutHalf(p + offsetof(BlockQ5_K, d), RandomHalf(rng, 0.0f, 0.002f));
        PutHalf(p + offsetof(BlockQ5_K, dmin), RandomHalf(rng, 0.0f, 0.004f));
      }
      break;
    case DType::kQ6_K:
      for (int64_t b = 0; b < n / kQKK; ++b) {
        uint8_t* p = row.data() + b * sizeof(BlockQ6_K);
        PutHalf(p + offsetof(BlockQ6_K, d), RandomHalf(rng, -0.0005f, 0.0005f));
      }
      break;
    default:
      ADD_FAILURE() << "RandomWeightRow: unsupported type";
  }
  return row;
}

// Byte offsets of the f16 scale fields (d, and m or dmin) inside one block of `type`.
inline std::vector<size_t> ScaleOffsets(DType type) {
  switch (type) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS:
      return {0};
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K:
      return {0, 2};
    case DType::kQ2_K:
      return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case DType::kQ3_K:
      return {offsetof(BlockQ3_K, d)};
    case DType::kQ6_K:
      return {offsetof(BlockQ6_K, d)};
    default:
      return {};
  }
}

// rows x n weights of `type`, rows contiguous.
inline std::vector<uint8_t> RandomWeights(std::mt19937& rng, DType type, int64_t rows, int64_t n) {
  std::vector<uint8_t> all;
  for (int64_t r = 0; r < rows; ++r) {
    auto row = RandomWeightRow(rng, type, n);
    all.insert(all.end(), row.begin(), row.end());
  }
  return all;
}

// The row with every quant zeroed: dequantizing it yields each element's
// additive "min" part (q4_1/q5_1: m; q2_k/q4_k/q5_k: -dmin*m_j), zero for the other types.
inline std::vector<uint8_t> ZeroQuants(DType type, const uint8_t* row, int64_t n) {
  std::vector<uint8_t> out(row, row + RowBytes(type, n));
  if (type == DType::kQ4_1) {
    for (int64_t b = 0; b < n / kQK; ++b)
      std::memset(out.data() + b * sizeof(BlockQ4_1) + offsetof(BlockQ4_1, qs), 0, kQK / 2);
  } else if (type == DType::kQ5_1) {
    for (int64_t b = 0; b < n / kQK; ++b) {
      uint8_t* p = out.data() + b * sizeof(BlockQ5_1);
      std::memset(p + offsetof(BlockQ5_1, qs), 0, kQK / 2);
      std::memset(p + offsetof(BlockQ5_1, qh), 0, 4);
    }
  } else if (type == DType::kQ2_K) {
    for (int64_t b = 0; b < n / kQKK; ++b)
      std::memset(out.data() + b * sizeof(BlockQ2_K) + offsetof(BlockQ2_K, qs), 0, kQKK / 4);
  } else if (type == DType::kQ4_K) {
    for (int64_t b = 0; b < n / kQKK; ++b)
      std::memset(out.data() + b * sizeof(BlockQ4_K) + offsetof(BlockQ4_K, qs), 0, kQKK / 2);
  } else if (type == DType::kQ5_K) {
    for (int64_t b = 0; b < n / kQKK; ++b) {
      uint8_t* p = out.data() + b * sizeof(BlockQ5_K);
      std::memset(p + offsetof(BlockQ5_K, qs), 0, kQKK / 2);
      std::memset(p + offsetof(BlockQ5_K, qh), 0, kQKK / 8);
    }
  } else {
    return {};
  }
  return out;
}

inline std::vector<float> Dequantize(DType type, const uint8_t* row, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  const Status st = DequantizeRow(type, row, n, out.data());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

}  // namespace stet::kernels::testing

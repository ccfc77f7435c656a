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
#include "numerics/quantize.h"

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

inline void PutHalf(uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); }

inline bool IsF16Field(const DTypeTraits& tr, int64_t byte) {
  for (int16_t off : tr.f16_fields) {
    if (off >= 0 && (byte == off || byte == off + 1)) return true;
  }
  return false;
}

// One row of `type` with n elements, for any computable type (its row of the type
// table says how): the f16 scale fields of a row quantized from uniform(-1, 1)
// floats (magnitudes that never overflow), each sign flipped at random, and every
// other byte random — full-range quants, packed sub-scales and high bits. Float
// types: the floats, rounded to the type.
inline std::vector<uint8_t> RandomWeightRow(std::mt19937& rng, DType type, int64_t n) {
  const DTypeTraits tr = *GetDTypeTraits(static_cast<uint32_t>(type));
  std::vector<uint8_t> row(static_cast<size_t>(RowBytes(type, n)));
  const auto f = RandomFloats(rng, n);
  const Status st = QuantizeRow(type, f.data(), n, row.data());
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (tr.block_elems == 1) return row;
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t b = 0; b < n / tr.block_elems; ++b) {
    uint8_t* blk = row.data() + b * tr.block_bytes;
    for (int64_t i = 0; i < tr.block_bytes; ++i) {
      if (!IsF16Field(tr, i)) blk[i] = static_cast<uint8_t>(byte(rng));
    }
    for (int16_t off : tr.f16_fields) {
      if (off >= 0 && (byte(rng) & 1) != 0) blk[off + 1] ^= 0x80;
    }
  }
  return row;
}

// Byte offsets of the f16 scale fields (d, and m or dmin) inside one block of `type`.
inline std::vector<size_t> ScaleOffsets(DType type) {
  std::vector<size_t> out;
  const DTypeTraits tr = *GetDTypeTraits(static_cast<uint32_t>(type));
  for (int16_t off : tr.f16_fields) {
    if (off >= 0) out.push_back(static_cast<size_t>(off));
  }
  return out;
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

// The row with every block's scale d (its first f16 field) zeroed: dequantizing it
// yields each element's additive "min" part (q4_1/q5_1: m; q2_k/q4_k/q5_k:
// -dmin*m_j), zero for the types without one. Empty for float types.
inline std::vector<uint8_t> ZeroQuants(DType type, const uint8_t* row, int64_t n) {
  const DTypeTraits tr = *GetDTypeTraits(static_cast<uint32_t>(type));
  if (tr.f16_fields[0] < 0) return {};
  std::vector<uint8_t> out(row, row + RowBytes(type, n));
  for (int64_t b = 0; b < n / tr.block_elems; ++b) {
    PutHalf(out.data() + b * tr.block_bytes + tr.f16_fields[0], 0);
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

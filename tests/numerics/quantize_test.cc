// Pins quantize.h: q8_0/q4_0/q4_1/q5_0/q5_1 equal ggml's quantize_row_*_ref (re-derived
// here with libm, as in ggml), every type round-trips through DequantizeRow within its
// format's error bound, the K-quant and iq4 packing decodes the same through an
// independent ggml-layout decoder written here, and bad input is refused with a Status.
// (iq4_nl's least-squares search is checked against llama.cpp's own quantizer by the
// arch goldens, tests/golden/arch/llama-iq4_nl.json.)
#include "numerics/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "numerics/dequant.h"
#include "numerics/dtype.h"
#include "numerics/half.h"

namespace stet {
namespace {

constexpr float kF16Rel = 1.0f / 2048;  // f16 rounding: relative 2^-11

// Rows that exercise each format: gaussian, heavy tails, one-signed, constant, zero,
// tiny (f16-subnormal scales), a single outlier.
std::vector<std::vector<float>> TestRows(int64_t n) {
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<std::vector<float>> rows;
  auto add = [&](auto f) {
    std::vector<float> r(n);
    for (int64_t i = 0; i < n; ++i) r[i] = f(i);
    rows.push_back(r);
  };
  add([&](int64_t) { return g(rng); });
  add([&](int64_t) { return 0.02f * g(rng); });
  add([&](int64_t) {
    const float v = g(rng);
    return v * v * v * 10.0f;
  });
  add([&](int64_t) { return std::fabs(g(rng)) + 3.0f; });
  add([&](int64_t) { return -std::fabs(g(rng)) - 0.5f; });
  add([&](int64_t) { return 0.75f; });
  add([&](int64_t) { return 0.0f; });
  add([&](int64_t) { return 1e-6f * g(rng); });
  add([&](int64_t i) { return i % 97 == 5 ? 300.0f : 0.01f * g(rng); });
  add([&](int64_t i) { return static_cast<float>(i % 7) - 3.0f; });
  return rows;
}

std::vector<float> RoundTrip(DType t, const std::vector<float>& x, std::vector<uint8_t>* bytes) {
  bytes->assign(RowBytes(t, static_cast<int64_t>(x.size())), 0xAB);
  const Status st = QuantizeRow(t, x.data(), static_cast<int64_t>(x.size()), bytes->data());
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<float> y(x.size());
  const Status ds = DequantizeRow(t, bytes->data(), static_cast<int64_t>(x.size()), y.data());
  EXPECT_TRUE(ds.ok()) << ds.ToString();
  return y;
}

TEST(QuantizeTest, PlainTypes) {
  for (const auto& x : TestRows(512)) {
    std::vector<uint8_t> b;
    const std::vector<float> f32 = RoundTrip(DType::kF32, x, &b);
    const std::vector<float> f16 = RoundTrip(DType::kF16, x, &b);
    const std::vector<float> bf16 = RoundTrip(DType::kBF16, x, &b);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(FloatBits(f32[i]), FloatBits(x[i]));
      EXPECT_LE(std::fabs(f16[i] - x[i]), std::fabs(x[i]) * kF16Rel + 0x1p-25f);  // 0.5 ulp
      EXPECT_LE(std::fabs(bf16[i] - x[i]), std::fabs(x[i]) * (1.0f / 256));
      EXPECT_EQ(f16[i], F16ToF32(F32ToF16(x[i])));
    }
  }
}

// ggml's reference quantizers, re-derived (with libm's roundf / fabsf as ggml uses them).
void GgmlQ8_0(const float* x, BlockQ8_0* y) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127, id = d ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  for (int j = 0; j < 32; ++j) y->qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
}
void GgmlQ4_0(const float* x, BlockQ4_0* y) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8, id = d ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  for (int j = 0; j < 16; ++j) {
    const uint8_t a = std::min<int>(15, static_cast<int8_t>(x[j] * id + 8.5f));
    const uint8_t b = std::min<int>(15, static_cast<int8_t>(x[16 + j] * id + 8.5f));
    y->qs[j] = static_cast<uint8_t>(a | (b << 4));
  }
}
void GgmlQ4_1(const float* x, BlockQ4_1* y) {
  float min = 3.4e38f, max = -3.4e38f;
  for (int j = 0; j < 32; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const float d = (max - min) / 15, id = d ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  y->m = F32ToF16(min);
  for (int j = 0; j < 16; ++j) {
    const uint8_t a = std::min<int>(15, static_cast<int8_t>((x[j] - min) * id + 0.5f));
    const uint8_t b = std::min<int>(15, static_cast<int8_t>((x[16 + j] - min) * id + 0.5f));
    y->qs[j] = static_cast<uint8_t>(a | (b << 4));
  }
}

template <typename Block>
void GgmlQ5(const float* x, float min, float id, float offset, bool clamp, Block* y) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    int a = static_cast<int8_t>((x[j] - min) * id + offset);
    int b = static_cast<int8_t>((x[16 + j] - min) * id + offset);
    if (clamp) a = std::min(31, a), b = std::min(31, b);
    y->qs[j] = static_cast<uint8_t>((a & 0xF) | ((b & 0xF) << 4));
    qh |= static_cast<uint32_t>((a >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((b >> 4) & 1) << (16 + j);
  }
  std::memcpy(y->qh, &qh, 4);
}
void GgmlQ5_0(const float* x, BlockQ5_0* y) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -16, id = d ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  GgmlQ5(x, 0.0f, id, 16.5f, true, y);
}
void GgmlQ5_1(const float* x, BlockQ5_1* y) {
  float min = 3.4e38f, max = -3.4e38f;
  for (int j = 0; j < 32; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const float d = (max - min) / 31, id = d ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  y->m = F32ToF16(min);
  GgmlQ5(x, min, id, 0.5f, false, y);
}

template <typename Block>
void ExpectSameAsGgml(DType t, void (*ggml)(const float*, Block*)) {
  for (const auto& x : TestRows(1024)) {
    std::vector<Block> ours(x.size() / 32), ref(x.size() / 32);
    ASSERT_TRUE(QuantizeRow(t, x.data(), static_cast<int64_t>(x.size()), ours.data()).ok());
    for (size_t i = 0; i < ref.size(); ++i) ggml(&x[32 * i], &ref[i]);
    ASSERT_EQ(std::memcmp(ours.data(), ref.data(), ours.size() * sizeof(Block)), 0) << DTypeName(t);
  }
}

TEST(QuantizeTest, SimpleTypesEqualGgmlReference) {
  ExpectSameAsGgml<BlockQ8_0>(DType::kQ8_0, GgmlQ8_0);
  ExpectSameAsGgml<BlockQ4_0>(DType::kQ4_0, GgmlQ4_0);
  ExpectSameAsGgml<BlockQ4_1>(DType::kQ4_1, GgmlQ4_1);
  ExpectSameAsGgml<BlockQ5_0>(DType::kQ5_0, GgmlQ5_0);
  ExpectSameAsGgml<BlockQ5_1>(DType::kQ5_1, GgmlQ5_1);
}

// Absolute rounding error of a value stored as f16: 2^-11 relative, or half the
// subnormal spacing 2^-25 (tiny scales underflow, as in ggml).
float F16Err(float v) { return std::max(std::fabs(v) * kF16Rel, 0x1p-25f); }

TEST(QuantizeTest, SimpleTypesRoundTripBounds) {
  for (const auto& x : TestRows(1024)) {
    std::vector<uint8_t> b;
    // q8_0: x' = q d16, d = amax/127, |q| <= 127: |x - x'| <= d/2 + 127 |d - d16|.
    std::vector<float> y = RoundTrip(DType::kQ8_0, x, &b);
    auto* q8 = reinterpret_cast<const BlockQ8_0*>(b.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const float d = F16ToF32(q8[i / 32].d);
      const float bound = 0.5f * d + 127.5f * F16Err(d);
      EXPECT_LE(std::fabs(y[i] - x[i]), bound * 1.001f) << i;
    }
    // q4_0: x' = (q - 8) d16, |d| = amax/8, |q - 8| <= 8; q = 16 clips to 15 (|d| off).
    y = RoundTrip(DType::kQ4_0, x, &b);
    auto* q4 = reinterpret_cast<const BlockQ4_0*>(b.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const float d = std::fabs(F16ToF32(q4[i / 32].d));
      const float bound = d + 9.0f * F16Err(d);
      EXPECT_LE(std::fabs(y[i] - x[i]), bound * 1.001f) << i;
    }
    // q4_1: x' = q d16 + m16, d = (max - min)/15, m = min, q <= 15.
    y = RoundTrip(DType::kQ4_1, x, &b);
    auto* q41 = reinterpret_cast<const BlockQ4_1*>(b.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const float d = F16ToF32(q41[i / 32].d), m = F16ToF32(q41[i / 32].m);
      const float bound = 0.5f * d + 15.5f * F16Err(d) + F16Err(m) + std::fabs(x[i]) * 0x1p-22f;
      EXPECT_LE(std::fabs(y[i] - x[i]), bound * 1.001f) << i;
    }
    // q5_0: as q4_0 with |q - 16| <= 16; q = 32 clips to 31.
    y = RoundTrip(DType::kQ5_0, x, &b);
    auto* q50 = reinterpret_cast<const BlockQ5_0*>(b.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const float d = std::fabs(F16ToF32(q50[i / 32].d));
      EXPECT_LE(std::fabs(y[i] - x[i]), (d + 17.0f * F16Err(d)) * 1.001f) << i;
    }
    // q5_1: as q4_1 with q <= 31.
    y = RoundTrip(DType::kQ5_1, x, &b);
    auto* q51 = reinterpret_cast<const BlockQ5_1*>(b.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const float d = F16ToF32(q51[i / 32].d), m = F16ToF32(q51[i / 32].m);
      const float bound = 0.5f * d + 31.5f * F16Err(d) + F16Err(m) + std::fabs(x[i]) * 0x1p-22f;
      EXPECT_LE(std::fabs(y[i] - x[i]), bound * 1.001f) << i;
    }
  }
}

// ggml's K-quant layouts, decoded independently of dequant.cc.
void ScaleMinK4(const uint8_t* q, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}
// Per element: quant level, the sub-block's effective scale d*sc and offset dmin*m.
struct Decoded {
  std::vector<int> q;
  std::vector<float> scale, offset, value;
};
Decoded DecodeK(DType t, const uint8_t* bytes, int64_t n) {
  Decoded out;
  for (int64_t blk = 0; blk < n / kQKK; ++blk) {
    for (int e = 0; e < kQKK; ++e) {
      int q = 0;
      float scale = 0, offset = 0;
      if (t == DType::kQ6_K) {
        auto* b = reinterpret_cast<const BlockQ6_K*>(bytes) + blk;
        const int h = e / 128, r = e % 128, l = r % 32, quarter = r / 32;
        const uint8_t ql = b->ql[64 * h + l + 32 * (quarter & 1)];
        const int low = quarter < 2 ? (ql & 0xF) : (ql >> 4);
        const int high = (b->qh[32 * h + l] >> (2 * quarter)) & 3;
        q = (low | (high << 4)) - 32;
        scale = F16ToF32(b->d) * static_cast<float>(b->scales[e / 16]);
      } else {
        const bool q5 = t == DType::kQ5_K;
        const uint8_t* sc_bytes = q5 ? reinterpret_cast<const BlockQ5_K*>(bytes)[blk].scales
                                     : reinterpret_cast<const BlockQ4_K*>(bytes)[blk].scales;
        const uint8_t* qs = q5 ? reinterpret_cast<const BlockQ5_K*>(bytes)[blk].qs
                               : reinterpret_cast<const BlockQ4_K*>(bytes)[blk].qs;
        const uint16_t d = q5 ? reinterpret_cast<const BlockQ5_K*>(bytes)[blk].d
                              : reinterpret_cast<const BlockQ4_K*>(bytes)[blk].d;
        const uint16_t dmin = q5 ? reinterpret_cast<const BlockQ5_K*>(bytes)[blk].dmin
                                 : reinterpret_cast<const BlockQ4_K*>(bytes)[blk].dmin;
        const int chunk = e / 64, l = e % 32, second = (e % 64) / 32, sub = e / 32;
        const uint8_t byte = qs[32 * chunk + l];
        q = second ? (byte >> 4) : (byte & 0xF);
        if (q5) {
          const uint8_t qh = reinterpret_cast<const BlockQ5_K*>(bytes)[blk].qh[l];
          if (qh & (1u << (2 * chunk + second))) q += 16;
        }
        int sc, m;
        ScaleMinK4(sc_bytes, sub, &sc, &m);
        scale = F16ToF32(d) * static_cast<float>(sc);
        offset = F16ToF32(dmin) * static_cast<float>(m);
      }
      out.q.push_back(q);
      out.scale.push_back(scale);
      out.offset.push_back(offset);
      out.value.push_back(scale * static_cast<float>(q) - offset);  // ggml's expression order
    }
  }
  return out;
}

TEST(QuantizeTest, KQuantsRoundTripBounds) {
  for (DType t : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    const int levels = t == DType::kQ4_K ? 15 : (t == DType::kQ5_K ? 31 : 31);
    const int sub = t == DType::kQ6_K ? 16 : 32;
    double worst_ratio = 0;
    for (const auto& x : TestRows(1024)) {
      std::vector<uint8_t> b;
      const std::vector<float> y = RoundTrip(t, x, &b);
      const Decoded dec = DecodeK(t, b.data(), static_cast<int64_t>(x.size()));
      for (size_t s0 = 0; s0 < x.size(); s0 += sub) {
        // The sub-block's range and the super-block's f16 scales, for the closed-form bound.
        float lo = 0, hi = x[s0], amax = 0;
        for (int l = 0; l < sub; ++l) {
          lo = std::min(lo, x[s0 + l]);
          hi = std::max(hi, x[s0 + l]);
          amax = std::max(amax, std::fabs(x[s0 + l]));
        }
        const size_t blk = s0 / kQKK;
        float d16, dmin16 = 0;
        if (t == DType::kQ6_K) {
          d16 = F16ToF32(reinterpret_cast<const BlockQ6_K*>(b.data())[blk].d);
        } else if (t == DType::kQ5_K) {
          d16 = F16ToF32(reinterpret_cast<const BlockQ5_K*>(b.data())[blk].d);
          dmin16 = F16ToF32(reinterpret_cast<const BlockQ5_K*>(b.data())[blk].dmin);
        } else {
          d16 = F16ToF32(reinterpret_cast<const BlockQ4_K*>(b.data())[blk].d);
          dmin16 = F16ToF32(reinterpret_cast<const BlockQ4_K*>(b.data())[blk].dmin);
        }
        const float closed =
            t == DType::kQ6_K ? (amax / 31 + d16) / 2 : ((hi - lo) / levels + d16 + dmin16) / 2;
        for (int l = 0; l < sub; ++l) {
          const size_t i = s0 + l;
          // The packing decodes the same through the independent decoder.
          ASSERT_EQ(FloatBits(dec.value[i]), FloatBits(y[i])) << DTypeName(t) << " element " << i;
          const float err = std::fabs(y[i] - x[i]);
          // Rounding to the nearest level, never clipped: half the effective step, plus
          // float rounding in the dequant expression.
          const float tol = (std::fabs(x[i]) + dec.offset[i]) * 0x1p-22f + 1e-30f;
          EXPECT_LE(err, 0.5f * dec.scale[i] * 1.0001f + tol) << DTypeName(t) << " element " << i;
          EXPECT_LE(err, closed * 1.0001f + tol) << DTypeName(t) << " element " << i;
          if (closed > 0) worst_ratio = std::max(worst_ratio, static_cast<double>(err / closed));
        }
      }
    }
    std::printf("[ measured ] %s: max error / closed-form bound = %.4f\n", DTypeName(t),
                worst_ratio);
  }
}

// q2_k / q3_k / iq4_xs decoded independently of dequant.cc: per element the level, the
// sub-block's effective scale and offset, and the value in ggml's expression order.
Decoded DecodeLowBitK(DType t, const uint8_t* bytes, int64_t n) {
  Decoded out;
  for (int64_t blk = 0; blk < n / kQKK; ++blk) {
    for (int e = 0; e < kQKK; ++e) {
      const int h = e / 128, g = (e % 128) / 32, l = e % 32, j = e / 16;
      int q = 0;
      float scale = 0, offset = 0;
      if (t == DType::kQ2_K) {
        auto* b = reinterpret_cast<const BlockQ2_K*>(bytes) + blk;
        q = (b->qs[32 * h + l] >> (2 * g)) & 3;
        scale = F16ToF32(b->d) * static_cast<float>(b->scales[j] & 0xF);
        offset = F16ToF32(b->dmin) * static_cast<float>(b->scales[j] >> 4);
      } else if (t == DType::kQ3_K) {
        auto* b = reinterpret_cast<const BlockQ3_K*>(bytes) + blk;
        q = ((b->qs[32 * h + l] >> (2 * g)) & 3) | (((b->hmask[l] >> (4 * h + g)) & 1) << 2);
        q -= 4;
        // 6-bit scale j: low nibble from byte j % 8 (high nibble for j >= 8), top two
        // bits from byte 8 + j % 4 at bit 2 * (j / 4).
        const int low = (b->scales[j % 8] >> (4 * (j / 8))) & 0xF;
        const int top = (b->scales[8 + j % 4] >> (2 * (j / 4))) & 3;
        scale = F16ToF32(b->d) * static_cast<float>((low | (top << 4)) - 32);
      } else {
        auto* b = reinterpret_cast<const BlockIQ4_XS*>(bytes) + blk;
        const int sub = e / 32, r = e % 32;
        const uint8_t byte = b->qs[16 * sub + r % 16];
        q = kIQ4NLValues[r < 16 ? (byte & 0xF) : (byte >> 4)];
        const int ls = ((b->scales_l[sub / 2] >> (4 * (sub % 2))) & 0xF) |
                       (((b->scales_h >> (2 * sub)) & 3) << 4);
        scale = F16ToF32(b->d) * static_cast<float>(ls - 32);
      }
      out.q.push_back(q);
      out.scale.push_back(scale);
      out.offset.push_back(offset);
      out.value.push_back(scale * static_cast<float>(q) - offset);
    }
  }
  return out;
}

TEST(QuantizeTest, LowBitKQuantsRoundTripBounds) {
  for (DType t : {DType::kQ2_K, DType::kQ3_K, DType::kIQ4_XS}) {
    const int sub = t == DType::kIQ4_XS ? 32 : 16;
    double worst_ratio = 0;
    for (const auto& x : TestRows(1024)) {
      std::vector<uint8_t> b;
      const std::vector<float> y = RoundTrip(t, x, &b);
      const Decoded dec = DecodeLowBitK(t, b.data(), static_cast<int64_t>(x.size()));
      for (size_t s0 = 0; s0 < x.size(); s0 += sub) {
        float lo = 0, hi = x[s0], amax = 0;
        for (int l = 0; l < sub; ++l) {
          lo = std::min(lo, x[s0 + l]);
          hi = std::max(hi, x[s0 + l]);
          amax = std::max(amax, std::fabs(x[s0 + l]));
        }
        const size_t blk = s0 / kQKK;
        float closed;
        if (t == DType::kQ2_K) {
          auto* q2 = reinterpret_cast<const BlockQ2_K*>(b.data()) + blk;
          closed = ((hi - lo) / 3 + F16ToF32(q2->d) + F16ToF32(q2->dmin)) / 2;
        } else if (t == DType::kQ3_K) {
          closed = (amax / 3 + F16ToF32(reinterpret_cast<const BlockQ3_K*>(b.data())[blk].d)) / 2;
        } else {
          closed =
              14 * (amax / 127 + F16ToF32(reinterpret_cast<const BlockIQ4_XS*>(b.data())[blk].d));
        }
        for (int l = 0; l < sub; ++l) {
          const size_t i = s0 + l;
          ASSERT_EQ(FloatBits(dec.value[i]), FloatBits(y[i])) << DTypeName(t) << " element " << i;
          const float err = std::fabs(y[i] - x[i]);
          const float tol = (std::fabs(x[i]) + dec.offset[i]) * 0x1p-22f + 1e-30f;
          // q2_k/q3_k: half a step, never clipped; iq4_xs: half the widest level gap (24)
          // or the distance from 113 to 127 at the top.
          const float step_bound = t == DType::kIQ4_XS ? 14.0f * std::fabs(dec.scale[i])
                                                       : 0.5f * std::fabs(dec.scale[i]);
          EXPECT_LE(err, step_bound * 1.0001f + tol) << DTypeName(t) << " element " << i;
          EXPECT_LE(err, closed * 1.0001f + tol) << DTypeName(t) << " element " << i;
          if (closed > 0) worst_ratio = std::max(worst_ratio, static_cast<double>(err / closed));
        }
      }
    }
    std::printf("[ measured ] %s: max error / closed-form bound = %.4f\n", DTypeName(t),
                worst_ratio);
  }
}

// iq4_nl (ggml's least-squares scale search): values are d16 * level, the levels
// decode through the same independent table, and the error stays within the coarsest
// level gap of the block's range (plus the f16 rounding of d, times the largest level).
TEST(QuantizeTest, IQ4_NLRoundTrip) {
  for (const auto& x : TestRows(1024)) {
    std::vector<uint8_t> b;
    const std::vector<float> y = RoundTrip(DType::kIQ4_NL, x, &b);
    auto* q = reinterpret_cast<const BlockIQ4_NL*>(b.data());
    for (size_t s0 = 0; s0 < x.size(); s0 += 32) {
      float amax = 0;
      for (int l = 0; l < 32; ++l) amax = std::max(amax, std::fabs(x[s0 + l]));
      const float d = F16ToF32(q[s0 / 32].d);
      for (int l = 0; l < 32; ++l) {
        const uint8_t byte = q[s0 / 32].qs[l % 16];
        const int level = kIQ4NLValues[l < 16 ? (byte & 0xF) : (byte >> 4)];
        ASSERT_EQ(FloatBits(d * static_cast<float>(level)), FloatBits(y[s0 + l]));
        EXPECT_LE(std::fabs(y[s0 + l] - x[s0 + l]), amax * (24.0f / 127) + 127.5f * F16Err(d))
            << s0 + l;
      }
    }
  }
}

TEST(QuantizeTest, KQuantsAreSmallAndCentred) {
  // Gaussian rows: RMS error close to step / sqrt(12) and tiny bias, i.e. real rounding.
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(kQKK * 64);
  for (float& v : x) v = g(rng);
  for (auto [t, max_rms] :
       {std::pair{DType::kQ4_K, 0.12}, std::pair{DType::kQ5_K, 0.06}, std::pair{DType::kQ6_K, 0.03},
        std::pair{DType::kQ4_0, 0.12}, std::pair{DType::kQ8_0, 0.01}, std::pair{DType::kQ5_0, 0.06},
        std::pair{DType::kQ5_1, 0.06}, std::pair{DType::kIQ4_NL, 0.12},
        std::pair{DType::kQ2_K, 0.5}, std::pair{DType::kQ3_K, 0.25},
        std::pair{DType::kIQ4_XS, 0.15}}) {
    std::vector<uint8_t> b;
    const std::vector<float> y = RoundTrip(t, x, &b);
    double se = 0, bias = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      se += (y[i] - x[i]) * static_cast<double>(y[i] - x[i]);
      bias += y[i] - x[i];
    }
    const double rms = std::sqrt(se / x.size());
    std::printf("[ measured ] %s gaussian rms error %.5f, mean %.6f\n", DTypeName(t), rms,
                bias / x.size());
    EXPECT_LT(rms, max_rms) << DTypeName(t);
    EXPECT_LT(std::fabs(bias / x.size()), max_rms / 10) << DTypeName(t);
  }
}

TEST(QuantizeTest, RefusesBadInput) {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> out(4096);
  EXPECT_EQ(QuantizeRow(DType::kQ4_K, x.data(), 100, out.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(QuantizeRow(DType::kQ8_0, x.data(), 33, out.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(QuantizeRow(DType::kQ8_K, x.data(), 256, out.data()).code(),
            StatusCode::kUnimplemented);
  EXPECT_EQ(QuantizeRow(static_cast<DType>(99), x.data(), 32, out.data()).code(),
            StatusCode::kUnimplemented);
  x[3] = NAN;
  for (DType t : QuantizedDTypes()) {
    EXPECT_EQ(QuantizeRow(t, x.data(), 256, out.data()).code(), StatusCode::kInvalidArgument)
        << DTypeName(t);
  }
  x[3] = 1e30f;  // scales overflow f16
  for (DType t : QuantizedDTypes()) {
    EXPECT_EQ(QuantizeRow(t, x.data(), 256, out.data()).code(), StatusCode::kInvalidArgument)
        << DTypeName(t);
  }
  EXPECT_TRUE(QuantizeRow(DType::kF16, x.data(), 256, out.data()).ok());  // -> inf, by design
  EXPECT_TRUE(QuantizeRow(DType::kQ4_K, x.data(), 0, out.data()).ok());
}

// A row of -0.0 (all negative zeros) is a valid input of every type: its scale
// is a zero, not an overflow, and it dequantizes to zeros.
TEST(QuantizeTest, NegativeZeroRowsQuantize) {
  const std::vector<float> x(256, -0.0f);
  std::vector<uint8_t> out(4096);
  std::vector<float> back(256, 1.0f);
  for (DType t : QuantizedDTypes()) {
    ASSERT_TRUE(QuantizeRow(t, x.data(), 256, out.data()).ok()) << DTypeName(t);
    ASSERT_TRUE(DequantizeRow(t, out.data(), 256, back.data()).ok()) << DTypeName(t);
    for (float v : back) ASSERT_EQ(v, 0.0f) << DTypeName(t);
  }
}

}  // namespace
}  // namespace stet

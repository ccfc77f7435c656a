// DequantizeRow: hand-built blocks of every supported type, expected values
// computed here from the documented ggml formulas (all chosen values are small
// dyadic numbers, so the float results are exact and compared exactly), a few
// literal spot values worked out by hand, and the errors for bad inputs.
#include "numerics/dequant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "numerics/half.h"

namespace stet {
namespace {

uint16_t H(float f) {
  const uint16_t h = F32ToF16(f);
  EXPECT_EQ(F16ToF32(h), f) << "test value not exact in f16";
  return h;
}

std::vector<float> Deq(DType t, const void* src, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), -999.0f);
  const Status st = DequantizeRow(t, src, n, out.data());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST(Dequant, F32F16Bf16) {
  const float f[3] = {1.5f, -0.0f, 3e-39f};
  auto out = Deq(DType::kF32, f, 3);
  EXPECT_EQ(0, std::memcmp(out.data(), f, sizeof(f)));
  const uint16_t h[4] = {0x3c00, 0xc000, 0x0001, 0x7c00};  // 1, -2, 2^-24, inf
  out = Deq(DType::kF16, h, 4);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_EQ(out[2], std::ldexp(1.0f, -24));
  EXPECT_EQ(out[3], INFINITY);
  const uint16_t b[2] = {0x3f80, 0xc040};  // 1, -3
  out = Deq(DType::kBF16, b, 2);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -3.0f);
}

TEST(Dequant, Q8_0) {
  BlockQ8_0 b[2];
  b[0].d = H(0.5f);
  b[1].d = H(-0.125f);
  for (int i = 0; i < 32; ++i) {
    b[0].qs[i] = static_cast<int8_t>(i - 16);
    b[1].qs[i] = static_cast<int8_t>(i == 0 ? -128 : 127 - i);
  }
  const auto y = Deq(DType::kQ8_0, b, 64);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(y[i], (i - 16) * 0.5f) << i;
    EXPECT_EQ(y[32 + i], (i == 0 ? -128 : 127 - i) * -0.125f) << i;
  }
  EXPECT_EQ(y[32], 16.0f);  // -128 * -0.125
}

TEST(Dequant, Q4_0) {
  BlockQ4_0 b;
  b.d = H(0.25f);
  for (int i = 0; i < 16; ++i) b.qs[i] = static_cast<uint8_t>(i | ((15 - i) << 4));
  const auto y = Deq(DType::kQ4_0, &b, 32);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(y[i], (i - 8) * 0.25f) << i;            // low nibble: element i
    EXPECT_EQ(y[16 + i], (15 - i - 8) * 0.25f) << i;  // high nibble: element i + 16
  }
  EXPECT_EQ(y[0], -2.0f);
  EXPECT_EQ(y[16], 1.75f);
}

TEST(Dequant, Q4_1) {
  BlockQ4_1 b;
  b.d = H(0.5f);
  b.m = H(-1.0f);
  for (int i = 0; i < 16; ++i) b.qs[i] = static_cast<uint8_t>(((i * 7) & 15) | (i << 4));
  const auto y = Deq(DType::kQ4_1, &b, 32);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(y[i], ((i * 7) & 15) * 0.5f - 1.0f) << i;
    EXPECT_EQ(y[16 + i], i * 0.5f - 1.0f) << i;
  }
}

// Packs eight 6-bit scales and mins the way the format documents: bytes 0..3
// low 6 bits of scales 0..3, bytes 4..7 of mins 0..3; bytes 8..11 hold scale
// j+4's low nibble (low) and min j+4's (high); the top two bits of scales/mins
// 4..7 go to bits 6..7 of bytes 0..3 / 4..7.
void PackScaleMin(const int sc[8], const int mn[8], uint8_t out[12]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
}

const int kSc[8] = {1, 2, 63, 17, 33, 45, 60, 5};
const int kMn[8] = {0, 3, 63, 20, 40, 12, 7, 1};

TEST(Dequant, ScaleMinK4Unpacking) {
  uint8_t packed[12];
  PackScaleMin(kSc, kMn, packed);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    UnpackScaleMinK4(packed, j, &sc, &mn);
    EXPECT_EQ(sc, kSc[j]) << j;
    EXPECT_EQ(mn, kMn[j]) << j;
  }
  // Literal bytes, worked by hand: 0xC1 -> scale 0 = 1, top bits 3 -> scale 4 =
  // (0x21 & 15) | 3 << 4 = 49; 0x85 -> min 0 = 5, min 4 = (0x21 >> 4) | 2 << 4 = 34.
  const uint8_t lit[12] = {0xC1, 2, 3, 4, 0x85, 6, 7, 8, 0x21, 0x43, 0x65, 0x87};
  uint8_t sc, mn;
  UnpackScaleMinK4(lit, 0, &sc, &mn);
  EXPECT_EQ(sc, 1);
  EXPECT_EQ(mn, 5);
  UnpackScaleMinK4(lit, 4, &sc, &mn);
  EXPECT_EQ(sc, 49);
  EXPECT_EQ(mn, 34);
  UnpackScaleMinK4(lit, 7, &sc, &mn);
  EXPECT_EQ(sc, 7);
  EXPECT_EQ(mn, 8);
}

// q4_k: element 64c + l (l < 32) is the low nibble of qs[32c + l], sub-block
// 2c; element 64c + 32 + l the high nibble, sub-block 2c + 1.
// value = d * scale_j * q - dmin * min_j.
TEST(Dequant, Q4_K) {
  BlockQ4_K b;
  b.d = H(0.5f);
  b.dmin = H(0.25f);
  PackScaleMin(kSc, kMn, b.scales);
  for (int i = 0; i < 128; ++i)
    b.qs[i] = static_cast<uint8_t>((i % 16) | ((15 - (i * 3) % 16) << 4));
  const auto y = Deq(DType::kQ4_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, l = e % 64;
    const uint8_t byte = b.qs[32 * c + l % 32];
    const int q = l < 32 ? (byte & 15) : (byte >> 4);
    const int j = e / 32;
    EXPECT_EQ(y[e], 0.5 * kSc[j] * q - 0.25 * kMn[j]) << e;
  }
  // By hand: element 0: q = 0, scale 1, min 0 -> 0; element 32: high nibble of
  // qs[0] = 15, scale 2, min 3 -> 0.5*2*15 - 0.75 = 14.25; element 65: low nibble of
  // qs[33] = 1, scale 63, min 63 -> 31.5 - 15.75 = 15.75.
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[32], 14.25f);
  EXPECT_EQ(y[65], 15.75f);
}

// q5_k: q4_k plus a fifth bit: qh[l] bit j is the high bit of sub-block j's
// element l (element 32j + l).
TEST(Dequant, Q5_K) {
  BlockQ5_K b;
  b.d = H(0.25f);
  b.dmin = H(0.5f);
  PackScaleMin(kSc, kMn, b.scales);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(((i * 5) % 16) | ((i % 16) << 4));
  for (int l = 0; l < 32; ++l) b.qh[l] = static_cast<uint8_t>((l * 37 + 11) & 0xff);
  const auto y = Deq(DType::kQ5_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, l = e % 64, j = e / 32;
    const uint8_t byte = b.qs[32 * c + l % 32];
    const int q = (l < 32 ? (byte & 15) : (byte >> 4)) | (((b.qh[e % 32] >> j) & 1) << 4);
    EXPECT_EQ(y[e], 0.25 * kSc[j] * q - 0.5 * kMn[j]) << e;
  }
  // By hand: element 0: low nibble 0, qh[0] = 11 = 0b1011 bit 0 -> q = 16, scale
  // 1, min 0: 0.25 * 16 = 4. Element 32: high nibble of qs[0] = 0, bit 1 of 11 ->
  // q = 16, scale 2, min 3: 8 - 1.5 = 6.5. Element 64: low nibble of qs[32] = 0,
  // bit 2 of 11 = 0 -> q = 0, min 63: -31.5.
  EXPECT_EQ(y[0], 4.0f);
  EXPECT_EQ(y[32], 6.5f);
  EXPECT_EQ(y[64], -31.5f);
}

// q6_k: element 128h + 32g + l: low nibble from ql[64h + l + 32(g&1)] (low
// nibble for g < 2, high for g >= 2), top bits from qh[32h + l] bits 2g..2g+1,
// scale scales[e/16]; value = d * scale * (q - 32).
TEST(Dequant, Q6_K) {
  BlockQ6_K b;
  b.d = H(0.125f);
  const int8_t sc[16] = {-128, 127, 1, -1, 5, -7, 9, 100, -100, 3, 0, 2, -3, 64, -64, 11};
  std::memcpy(b.scales, sc, 16);
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>((i * 13 + 7) & 0xff);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>((i * 101 + 3) & 0xff);
  const auto y = Deq(DType::kQ6_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    const uint8_t lb = b.ql[64 * h + l + 32 * (g & 1)];
    const int low = g < 2 ? (lb & 15) : (lb >> 4);
    const int q = low | (((b.qh[32 * h + l] >> (2 * g)) & 3) << 4);
    EXPECT_EQ(y[e], 0.125 * sc[e / 16] * (q - 32)) << e;
  }
  // By hand, a second block: ql[0] = 0x21, ql[32] = 0, qh[0] = 0b11100100, d = 1.
  BlockQ6_K c;
  std::memset(&c, 0, sizeof(c));
  c.d = H(1.0f);
  c.ql[0] = 0x21;
  c.qh[0] = 0xE4;
  c.scales[0] = 2;
  c.scales[2] = -1;
  c.scales[4] = 3;
  c.scales[6] = 5;
  const auto z = Deq(DType::kQ6_K, &c, 256);
  EXPECT_EQ(z[0], 2.0f * (1 - 32));     // low nibble 1, bits 00
  EXPECT_EQ(z[32], -1.0f * (16 - 32));  // ql[32] low 0, bits 01
  EXPECT_EQ(z[64], 3.0f * (34 - 32));   // high nibble 2, bits 10
  EXPECT_EQ(z[96], 5.0f * (48 - 32));   // ql[32] high 0, bits 11
}

// The six newer layouts, one hand-built block each, values worked out by hand from
// ggml's formats (tests/numerics/test_dequant_oracle.py checks every bit pattern
// against gguf-py).
TEST(Dequant, Q5_0Q5_1IQ4_NLSpotValues) {
  BlockQ5_0 a{};
  a.d = H(0.5f);
  a.qs[0] = 0x3A;  // element 0: nibble 10, element 16: nibble 3
  a.qh[0] = 0x01;  // fifth bit of element 0 only
  auto y = Deq(DType::kQ5_0, &a, 32);
  EXPECT_EQ(y[0], 0.5f * (26 - 16));
  EXPECT_EQ(y[16], 0.5f * (3 - 16));
  EXPECT_EQ(y[1], 0.5f * (0 - 16));
  BlockQ5_1 b{};
  b.d = H(0.25f);
  b.m = H(-1.0f);
  b.qs[0] = 0x3A;
  b.qh[2] = 0x01;  // fifth bit of element 16
  y = Deq(DType::kQ5_1, &b, 32);
  EXPECT_EQ(y[0], 0.25f * 10 - 1.0f);
  EXPECT_EQ(y[16], 0.25f * 19 - 1.0f);
  BlockIQ4_NL c{};
  c.d = H(2.0f);
  c.qs[0] = 0xF0;
  y = Deq(DType::kIQ4_NL, &c, 32);
  EXPECT_EQ(y[0], 2.0f * -127);
  EXPECT_EQ(y[16], 2.0f * 113);
  EXPECT_EQ(y[1], 2.0f * -127);
}

TEST(Dequant, Q2_KQ3_KIQ4_XSSpotValues) {
  BlockQ2_K a{};
  a.d = H(1.0f);
  a.dmin = H(0.5f);
  a.scales[0] = 0x23;  // sub-block 0: scale 3, min 2
  a.scales[2] = 0x11;
  a.scales[4] = 0x05;
  a.scales[6] = 0xF1;
  a.qs[0] = 0xE4;  // elements 0, 32, 64, 96: 0, 1, 2, 3
  auto y = Deq(DType::kQ2_K, &a, 256);
  EXPECT_EQ(y[0], 3.0f * 0 - 1.0f);
  EXPECT_EQ(y[32], 1.0f * 1 - 0.5f);
  EXPECT_EQ(y[64], 5.0f * 2 - 0.0f);
  EXPECT_EQ(y[96], 1.0f * 3 - 7.5f);
  BlockQ3_K b{};
  b.d = H(0.5f);
  b.scales[0] = 0x75;  // low nibbles of sub-blocks 0 (5) and 8 (7)
  b.scales[8] = 0x32;  // top bits of sub-blocks 0 (2) and 8 (3)
  b.qs[0] = 0x01;      // element 0: low bits 1, third bit clear: q = 1 - 4
  b.qs[32] = 0x02;     // element 128: low bits 2
  b.hmask[0] = 0x10;   // bit 4: element 128's third bit: q = 2
  y = Deq(DType::kQ3_K, &b, 256);
  EXPECT_EQ(y[0], 0.5f * (37 - 32) * -3);
  EXPECT_EQ(y[128], 0.5f * (55 - 32) * 2);
  EXPECT_EQ(y[1], 0.5f * (37 - 32) * -4);
  BlockIQ4_XS c{};
  c.d = H(0.25f);
  c.scales_l[0] = 0xA3;  // sub-block 0: low 3, sub-block 1: low 10
  c.scales_h = 0x0002;   // sub-block 0: top 2 -> 35; sub-block 1: top 0 -> 10
  c.qs[0] = 0x1F;        // element 0: level 15 (113), element 16: level 1 (-104)
  c.qs[16] = 0x08;       // element 32: level 8 (1)
  y = Deq(DType::kIQ4_XS, &c, 256);
  EXPECT_EQ(y[0], 0.25f * 3 * 113);
  EXPECT_EQ(y[16], 0.25f * 3 * -104);
  EXPECT_EQ(y[32], 0.25f * -22 * 1);
  EXPECT_EQ(y[48], 0.25f * -22 * -127);
}

TEST(Dequant, UnsupportedTypesAreUnimplemented) {
  uint8_t buf[512] = {};
  float out[256];
  for (DType t : {DType::kQ8_1, DType::kQ8_K, DType::kI8, DType::kI32, DType::kF64}) {
    const Status st = DequantizeRow(t, buf, 256, out);
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << DTypeName(t);
    EXPECT_NE(st.message().find(DTypeName(t)), std::string::npos) << st.message();
  }
  const Status st = DequantizeRow(static_cast<DType>(99), buf, 32, out);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("99"), std::string::npos) << st.message();
}

TEST(Dequant, LengthMustBeAWholeNumberOfBlocks) {
  uint8_t buf[1024] = {};
  float out[512];
  EXPECT_EQ(DequantizeRow(DType::kQ8_0, buf, 33, out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DequantizeRow(DType::kQ4_1, buf, 16, out).code(), StatusCode::kInvalidArgument);
  const Status st = DequantizeRow(DType::kQ4_K, buf, 100, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("q4_k"), std::string::npos) << st.message();
  EXPECT_EQ(DequantizeRow(DType::kF16, buf, -1, out).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(DequantizeRow(DType::kQ6_K, buf, 0, out).ok());
}

}  // namespace
}  // namespace stet

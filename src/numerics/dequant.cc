// Row dequantization for every supported type (dtype.h). Scalar and plain on
// purpose: it defines the meaning of each block format (the kernels' accuracy
// oracle), not a hot path. Each expression is ggml's dequantize_row_*, so the
// floats equal gguf-py's gguf.quants.dequantize (tests/numerics/test_dequant_oracle.py).
#include "numerics/dequant.h"

#include <cstring>
#include <string>
#include <type_traits>

#include "numerics/codecs.h"
#include "numerics/half.h"

namespace stet {

int Q3KScale(const uint8_t* scales, int j) {
  // Sub-blocks 0..7 keep their low nibble in the low nibble of bytes 0..7, 8..15 in the
  // high nibble; the top two bits of sub-block j are bits 2(j/4).. of byte 8 + j % 4.
  const int low = j < 8 ? (scales[j] & 0x0f) : (scales[j - 8] >> 4);
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

int IQ4XSScale(const BlockIQ4_XS& b, int j) {
  const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f;
  const int high = (b.scales_h >> (2 * j)) & 3;
  return (low | (high << 4)) - 32;
}

namespace codecs {

void DequantF32(const void* src, int64_t n, float* y) {
  if (n > 0) std::memcpy(y, src, static_cast<size_t>(n) * 4);
}

void DequantF16(const void* src, int64_t n, float* y) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) y[i] = F16ToF32(h[i]);
}

void DequantBF16(const void* src, int64_t n, float* y) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) y[i] = BF16ToF32(h[i]);
}

void DequantQ8_0(const void* blocks, int64_t nb, float* y) {
  const auto* b = static_cast<const BlockQ8_0*>(blocks);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = F16ToF32(b[i].d);
    for (int j = 0; j < kQK; ++j) y[i * kQK + j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void DequantQ4_0(const void* blocks, int64_t nb, float* y) {
  const auto* b = static_cast<const BlockQ4_0*>(blocks);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = F16ToF32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b[i].qs[j] & 0x0f) - 8;
      const int hi = (b[i].qs[j] >> 4) - 8;
      y[i * kQK + j] = static_cast<float>(lo) * d;
      y[i * kQK + j + kQK / 2] = static_cast<float>(hi) * d;
    }
  }
}

void DequantQ4_1(const void* blocks, int64_t nb, float* y) {
  const auto* b = static_cast<const BlockQ4_1*>(blocks);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = F16ToF32(b[i].d);
    const float m = F16ToF32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[i * kQK + j] = static_cast<float>(b[i].qs[j] & 0x0f) * d + m;
      y[i * kQK + j + kQK / 2] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

namespace {
// q5_0 / q5_1: q4_0's nibbles plus a fifth bit, bit e of the little-endian qh word.
int Q5Quant(const uint8_t* qs, uint32_t qh, int e) {
  const int nib = e < kQK / 2 ? (qs[e] & 0x0f) : (qs[e - kQK / 2] >> 4);
  return nib | static_cast<int>(((qh >> e) & 1u) << 4);
}
}  // namespace

void DequantQ5_0(const void* blocks, int64_t nb, float* y) {
  const auto* b = static_cast<const BlockQ5_0*>(blocks);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = F16ToF32(b[i].d);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (int e = 0; e < kQK; ++e)
      y[i * kQK + e] = d * static_cast<float>(Q5Quant(b[i].qs, qh, e) - 16);
  }
}

void DequantQ5_1(const void* blocks, int64_t nb, float* y) {
  const auto* b = static_cast<const BlockQ5_1*>(blocks);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = F16ToF32(b[i].d);
    const float m = F16ToF32(b[i].m);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (int e = 0; e < kQK; ++e)
      y[i * kQK + e] = d * static_cast<float>(Q5Quant(b[i].qs, qh, e)) + m;
  }
}

void DequantIQ4_NL(const void* blocks, int64_t nb, float* y) {
  const auto* b = static_cast<const BlockIQ4_NL*>(blocks);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = F16ToF32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[i * kQK + j] = d * static_cast<float>(kIQ4NLValues[b[i].qs[j] & 0x0f]);
      y[i * kQK + j + kQK / 2] = d * static_cast<float>(kIQ4NLValues[b[i].qs[j] >> 4]);
    }
  }
}

// q2_k: two halves of 128; element 128h + 32g + l (g = 0..3) is bits 2g..2g+1 of
// qs[32h + l]; sub-block e / 16 has scale scales[e/16] & 15 and min scales[e/16] >> 4.
void DequantQ2_K(const void* blocks, int64_t nb, float* y) {
  const auto* b = static_cast<const BlockQ2_K*>(blocks);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = F16ToF32(b[i].d);
    const float dmin = F16ToF32(b[i].dmin);
    float* out = y + i * kQKK;
    for (int e = 0; e < kQKK; ++e) {
      const int h = e / 128, g = (e % 128) / 32, l = e % 32;
      const int q = (b[i].qs[32 * h + l] >> (2 * g)) & 3;
      const uint8_t sc = b[i].scales[e / 16];
      const float dl = d * static_cast<float>(sc & 0x0f);
      const float ml = dmin * static_cast<float>(sc >> 4);
      out[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

// q3_k: low two bits as q2_k; element 128h + 32g + l subtracts 4 unless bit 4h + g
// of hmask[l] is set; sub-block j's scale is Q3KScale(j).
void DequantQ3_K(const void* blocks, int64_t nb, float* y) {
  const auto* b = static_cast<const BlockQ3_K*>(blocks);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = F16ToF32(b[i].d);
    float* out = y + i * kQKK;
    for (int e = 0; e < kQKK; ++e) {
      const int h = e / 128, g = (e % 128) / 32, l = e % 32;
      const int low = (b[i].qs[32 * h + l] >> (2 * g)) & 3;
      const int q = low - (((b[i].hmask[l] >> (4 * h + g)) & 1) ? 0 : 4);
      const float dl = d * static_cast<float>(Q3KScale(b[i].scales, e / 16));
      out[e] = dl * static_cast<float>(q);
    }
  }
}

// iq4_xs: sub-block j (32 elements) has ls = 6 bits (scales_l nibble, scales_h
// pair) - 32 and the nibbles of qs[16j .. 16j + 15] as iq4_nl's.
void DequantIQ4_XS(const void* blocks, int64_t nb, float* y) {
  const auto* b = static_cast<const BlockIQ4_XS*>(blocks);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = F16ToF32(b[i].d);
    for (int j = 0; j < kQKK / 32; ++j) {
      const float dl = d * static_cast<float>(IQ4XSScale(b[i], j));
      const uint8_t* q = b[i].qs + 16 * j;
      float* out = y + i * kQKK + 32 * j;
      for (int l = 0; l < 16; ++l) {
        out[l] = dl * static_cast<float>(kIQ4NLValues[q[l] & 0x0f]);
        out[l + 16] = dl * static_cast<float>(kIQ4NLValues[q[l] >> 4]);
      }
    }
  }
}

namespace {
// q4_k / q5_k: four chunks of 64; byte l of chunk c holds element 64c+l (low
// nibble, sub-block 2c) and 64c+32+l (high nibble, sub-block 2c+1); q5_k's qh[l]
// adds bit 2c (element 64c+l) and bit 2c+1 (element 64c+32+l) as a fifth bit.
template <typename Block>
void DequantK45(const void* blocks, int64_t nb, float* y) {
  const auto* b = static_cast<const Block*>(blocks);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = F16ToF32(b[i].d);
    const float dmin = F16ToF32(b[i].dmin);
    float* out = y + i * kQKK;
    for (int c = 0; c < 4; ++c) {
      uint8_t sc0, m0, sc1, m1;
      UnpackScaleMinK4(b[i].scales, 2 * c, &sc0, &m0);
      UnpackScaleMinK4(b[i].scales, 2 * c + 1, &sc1, &m1);
      const float d0 = d * static_cast<float>(sc0), min0 = dmin * static_cast<float>(m0);
      const float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
      const uint8_t* q = b[i].qs + 32 * c;
      for (int l = 0; l < 32; ++l) {
        int lo = q[l] & 0x0f, hi = q[l] >> 4;
        if constexpr (std::is_same_v<Block, BlockQ5_K>) {
          lo |= ((b[i].qh[l] >> (2 * c)) & 1) << 4;
          hi |= ((b[i].qh[l] >> (2 * c + 1)) & 1) << 4;
        }
        out[64 * c + l] = d0 * static_cast<float>(lo) - min0;
        out[64 * c + 32 + l] = d1 * static_cast<float>(hi) - min1;
      }
    }
  }
}
}  // namespace

void DequantQ4_K(const void* blocks, int64_t nb, float* y) { DequantK45<BlockQ4_K>(blocks, nb, y); }
void DequantQ5_K(const void* blocks, int64_t nb, float* y) { DequantK45<BlockQ5_K>(blocks, nb, y); }

// q6_k: two halves of 128. In half h, element 128h + 32g + l (g = 0..3, l < 32)
// takes its low nibble from ql[64h + l + 32*(g&1)] (low nibble for g < 2, high
// for g >= 2), its top two bits from qh[32h + l] bits 2g..2g+1, and its scale
// from scales[(128h + 32g + l) / 16]; value = d * scale * (q - 32).
void DequantQ6_K(const void* blocks, int64_t nb, float* y) {
  const auto* b = static_cast<const BlockQ6_K*>(blocks);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = F16ToF32(b[i].d);
    float* out = y + i * kQKK;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b[i].ql + 64 * h;
      const uint8_t* qh = b[i].qh + 32 * h;
      for (int g = 0; g < 4; ++g) {
        for (int l = 0; l < 32; ++l) {
          const uint8_t lbyte = ql[l + 32 * (g & 1)];
          const int low = g < 2 ? (lbyte & 0x0f) : (lbyte >> 4);
          const int q = (low | (((qh[l] >> (2 * g)) & 3) << 4)) - 32;
          const int e = 128 * h + 32 * g + l;
          out[e] = d * static_cast<float>(b[i].scales[e / 16]) * static_cast<float>(q);
        }
      }
    }
  }
}

}  // namespace codecs

Status DequantizeRow(DType type, const void* src, int64_t n, float* dst) {
  const auto traits = GetDTypeTraits(static_cast<uint32_t>(type));
  if (!traits) {
    return Unimplemented("cannot dequantize unknown tensor type id " +
                         std::to_string(static_cast<uint32_t>(type)));
  }
  if (traits->dequantize == nullptr) {
    return Unimplemented(std::string("cannot dequantize tensor type ") + traits->name +
                         " (supported: " + SupportedDTypeList() + ")");
  }
  if (n < 0 || n % traits->block_elems != 0) {
    return InvalidArgument(std::string("row length ") + std::to_string(n) +
                           " is not a multiple of " + traits->name + "'s block size " +
                           std::to_string(traits->block_elems));
  }
  traits->dequantize(src, n / traits->block_elems, dst);
  return Status::Ok();
}

}  // namespace stet

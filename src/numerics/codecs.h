// Each computable type's scalar block codec: dequantize (dequant.cc, ggml's
// dequantize_row_*) and the reference quantizer (quantize.cc). dtype.cc's type
// rows point at them; everyone else goes through DequantizeRow / QuantizeRow,
// which check the arguments first. nb counts blocks (plain types: elements);
// inputs to a quantizer are finite.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace stet::codecs {

#define STET_CODEC(T)                                          \
  void Dequant##T(const void* blocks, int64_t nb, float* out); \
  Status Quantize##T(const float* x, int64_t nb, void* blocks);

STET_CODEC(F32)
STET_CODEC(F16)
STET_CODEC(BF16)
STET_CODEC(Q8_0)
STET_CODEC(Q4_0)
STET_CODEC(Q4_1)
STET_CODEC(Q5_0)
STET_CODEC(Q5_1)
STET_CODEC(IQ4_NL)
STET_CODEC(Q2_K)
STET_CODEC(Q3_K)
STET_CODEC(Q4_K)
STET_CODEC(Q5_K)
STET_CODEC(Q6_K)
STET_CODEC(IQ4_XS)

#undef STET_CODEC

}  // namespace stet::codecs

// Reference weight quantizers: float rows to ggml's on-disk block formats (dtype.h), used
// to make test weights and random-weight GGUF models. Deterministic (no libm); the 32-block
// types follow ggml's quantize_row_*_ref exactly, the K-quants and iq4_xs use a simple
// min/max (absmax) scale choice whose round-trip error bound quantize_test.cc checks.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "numerics/dtype.h"

namespace stet {

// Writes RowBytes(type, n) bytes to dst from n floats at src.
//  f32, f16, bf16: element-wise (f16/bf16 round to nearest even).
//  q8_0, q4_0, q4_1, q5_0, q5_1: ggml's reference quantizers, bit for bit.
//  iq4_nl: ggml's quantize_row_iq4_nl_ref (least-squares scale search over 15 starts),
//    evaluated without FMA contraction.
//  q4_k, q5_k: per 32-element sub-block min/max, mins rounded up and scales rounded up
//    so nothing is clipped; |x - x'| <= (range/levels + d + dmin) / 2 per sub-block.
//  q2_k: as q4_k on 16-element sub-blocks, 4-bit scales and mins, q in [0, 3].
//  q6_k: per 16-element sub-block absmax, scale rounded up; |x - x'| <= (absmax/31 + d) / 2.
//  q3_k: as q6_k with q in [-3, 3] and scales 0..31; |x - x'| <= (absmax/3 + d) / 2.
//  iq4_xs: per 32-element sub-block, the largest magnitude maps to level -127, |scale|
//    rounded up; |x - x'| <= 14 * |d * ls| (half the widest level gap, or 127 - 113).
// InvalidArgument if n is not a multiple of the type's block size, if an input is not
// finite (all types but f32/f16/bf16), or if a block scale overflows f16;
// Unimplemented for types without a quantizer.
Status QuantizeRow(DType type, const float* src, int64_t n, void* dst);

}  // namespace stet

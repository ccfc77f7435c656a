// Dequantization of one row of any supported weight type to float, in exactly
// ggml's block formats (layouts in dtype.h). The reference for what a stored
// weight *means*: kernel accuracy tests compare against float64 math on these
// values, and the loader uses it for embeddings. Pinned by dequant_test.cc.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "numerics/dtype.h"

namespace stet {

// Writes n floats to dst from n elements of `type` at src. Each value is
// computed with ggml's float expression order (e.g. q4_k: (d*sc)*q - dmin*m),
// so results equal ggml's dequantize_row_* bit for bit. InvalidArgument if n is
// not a multiple of the type's block size; Unimplemented for other types.
Status DequantizeRow(DType type, const void* src, int64_t n, float* dst);

// The 6-bit scale and min of sub-block j (0..7) of a q4_k / q5_k super-block,
// unpacked from its 12 packed bytes (ggml's get_scale_min_k4 layout). Inline:
// the K-quant batch kernels unpack every sub-block of every row they sweep.
inline void UnpackScaleMinK4(const uint8_t* q, int j, uint8_t* scale, uint8_t* min) {
  // Bytes 0..3 hold the low 6 bits of scales 0..3 (top 2 bits: high bits of
  // scales 4..7); bytes 4..7 the same for mins; bytes 8..11 the low nibbles of
  // scales 4..7 (low) and mins 4..7 (high).
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The signed 6-bit scale (-32..31) of sub-block j (0..15) of a q3_k super-block,
// from its 12 packed bytes.
int Q3KScale(const uint8_t* scales, int j);

// The signed scale ls - 32 (-32..31) of sub-block j (0..7) of an iq4_xs super-block.
int IQ4XSScale(const BlockIQ4_XS& b, int j);

}  // namespace stet

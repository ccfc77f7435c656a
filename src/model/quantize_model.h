// Re-encodes a GGUF model's weight matrices in another type (like llama.cpp's
// llama-quantize): metadata is copied as is; 2-D ".weight" tensors (and 3-D
// expert stacks, but not a MoE router) become
// `type` where their row length fits its block size (others — and for K-quants,
// rows not a multiple of 256 — fall back to q8_0 or stay as they are); norms and
// biases stay float. Used to make same-model/different-quantization pairs.
#pragma once

#include <string>

#include "base/status.h"
#include "numerics/dtype.h"

namespace stet {

struct QuantizeReport {
  int quantized = 0;  // tensors written in the requested type
  int fallback = 0;   // tensors written as q8_0 instead
  int kept = 0;       // tensors copied unchanged
};

Result<QuantizeReport> QuantizeModel(const std::string& in_path, const std::string& out_path,
                                     DType type, bool progress);

}  // namespace stet

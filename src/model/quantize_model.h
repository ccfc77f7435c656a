// Re-encodes a GGUF model's weight matrices in another type (like llama.cpp's
// llama-quantize): metadata is copied as is; 2-D ".weight" tensors (and 3-D
// expert stacks, but not a MoE router) become the recipe's type where their row
// length fits its block size; others fall back as llama.cpp's quantizer does
// (q4_k -> q5_0, q5_k -> q5_1, q6_k -> q8_0, q2_k/q3_k/iq4_xs -> iq4_nl, else
// q8_0) or, when no type fits, stay as they are; norms and biases stay float.
// Used to make same-model/different-quantization pairs and the files people
// download (the _m mixes).
#pragma once

#include <string>

#include "base/status.h"
#include "numerics/dtype.h"

namespace stet {

struct QuantizeReport {
  int quantized = 0;  // tensors written in the recipe's type (base, or q6_k in a mix)
  int fallback = 0;   // tensors written in the fallback type instead
  int kept = 0;       // tensors copied unchanged
};

// One type for every matrix ("q4_k"), or a llama.cpp-style mix ("q4_k_m",
// "q5_k_m"): the base type, and q6_k for the output matrix (the token embedding
// when the output is tied to it) and for attn_v and ffn_down in the layers i of n
// with i < n/8, i >= 7n/8 or (i - n/8) % 3 == 2.
struct QuantRecipe {
  std::string name;
  DType base = DType::kQ8_0;
  DType more = DType::kQ8_0;  // == base for a single type
};
// InvalidArgument naming the supported recipes for an unknown name.
Result<QuantRecipe> ParseQuantRecipe(const std::string& name);
std::string QuantRecipeList();  // "f32, f16, ..., q4_k_m, q5_k_m"

struct TensorRole {
  std::string name;
  int64_t cols = 0;
  int n_layer = 0;    // the model's block count
  bool tied = false;  // the file has no output.weight: token_embd is the output
};
// The type the recipe gives a matrix, its fallback applied (the tensor's own
// type when none fits).
DType RecipeType(const QuantRecipe& r, const TensorRole& t, DType current);

Result<QuantizeReport> QuantizeModel(const std::string& in_path, const std::string& out_path,
                                     const QuantRecipe& recipe, bool progress);
Result<QuantizeReport> QuantizeModel(const std::string& in_path, const std::string& out_path,
                                     DType type, bool progress);

}  // namespace stet

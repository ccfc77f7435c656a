// Random-weight GGUF models with the exact shapes of real ones (SmolLM2-135M/360M,
// Qwen2.5-0.5B, Llama-3.2-1B/3B, Llama-3.1-8B, Qwen3-30B-A3B, OLMoE-1B-7B's dimensions as a
// qwen3moe, a tiny test shape and a tiny qwen3moe one), for speed tests: speed
// does not depend on trained weights. Owns two invariants: the bytes are a pure function of (shape,
// type, seed, layers) on every machine (counter-based Philox draws, Box-Muller from basic IEEE
// operations, reference quantizers), and the file is a model stet and llama.cpp load, with a
// synthetic byte-level BPE vocabulary whose merges only build tokens it holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "format/gguf.h"
#include "numerics/dtype.h"

namespace stet {

// Which real model's tokenizer conventions the synthetic vocabulary follows.
enum class RandomVocabStyle {
  kSmolLm,  // specials first (<|endoftext|>, <|im_start|>, <|im_end|>), pre "smollm"
  kQwen2,   // specials after the BPE tokens, then [PADn] unused tokens, pre "qwen2"
  kLlama3,  // 256 specials after the BPE tokens (<|begin_of_text|> ...), pre "llama-bpe"
};

struct RandomModelShape {
  const char* name;       // --shape value: "smollm2-135m"
  const char* real_name;  // "SmolLM2-135M"
  const char* arch;       // general.architecture: "llama" or "qwen2"
  int n_layer;
  int n_embd;
  int n_head;
  int n_head_kv;
  int n_ff;
  int n_vocab;
  int n_ctx_train;
  double rope_base;
  float rms_eps;
  bool llama3_rope;  // rope_freqs.weight with Llama 3.1+ scaling (factor 32, low 1, high 4, 8192)
  RandomVocabStyle vocab;
  int n_expert = 0;           // qwen3moe: experts per layer (n_ff is each expert's width)
  int n_expert_used = 0;      // qwen3moe: experts per token
  int head_dim = 0;           // 0: n_embd / n_head (else attention.key_length, as Qwen3's 128)
  double rope_factor = 32.0;  // llama3_rope's scaling factor (Llama 3.1: 8, 3.2: 32)
};

// The shape named `name`, or nullptr.
const RandomModelShape* FindRandomModelShape(std::string_view name);
// "smollm2-135m, smollm2-360m, qwen2.5-0.5b, llama-3.2-1b, llama-3.2-3b, llama-3.1-8b,
// qwen3-30b-a3b, olmoe-1b-7b, tiny, moe-tiny"
std::string RandomModelShapeList();
// The --type values: "f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k,
// q5_k, q6_k, iq4_xs, q4_k_m, q5_k_m"
std::string RandomModelTypeList();
// InvalidArgument (listing the valid names) for anything else.
Result<DType> ParseRandomModelType(std::string_view name);

struct RandomModelOptions {
  std::string shape = "tiny";
  DType type = DType::kQ4_1;
  // A llama.cpp mix (q4_k_m, q5_k_m: model/quantize_model.h's rule): the type of the
  // output and of attn_v/ffn_down in some layers; unset: `type` for every matrix.
  // Written directly, with no f16 copy first (an 8B model's would not fit in memory).
  std::optional<DType> more;
  uint64_t seed = 0;
  int n_layers = 0;   // 0: the shape's own layer count; else at most that
  int n_threads = 1;  // for drawing and quantizing (never changes the bytes)
};

// A type or a mix ("q4_k_m", "q5_k_m") into opts.type and opts.more.
Status SetRandomModelType(std::string_view name, RandomModelOptions* opts);

struct RandomModelSummary {
  std::string name;  // general.name
  int n_layer = 0;
  int n_matrices = 0;               // 2-D weight tensors
  int n_fallback = 0;               // matrices stored as q8_0 because a K-quant needs K % 256 == 0
  DType output_type = DType::kF32;  // the (tied) token embedding / output matrix
  int64_t tensor_bytes = 0;
};

// Builds the model in memory. Weights ~ N(0, 0.02^2), norms ~ N(1, 0.02^2), biases
// ~ N(0, 0.02^2), each element's draw keyed by (seed, tensor name, element index), so a
// tensor's values do not depend on --layers. Types follow llama.cpp's quantizer: 1-D
// tensors f32; the tied embedding/output q6_k for quantized types (q8_0 when --type is
// q8_0 or n_embd % 256 != 0); a super-block matrix (K-quants, iq4_xs) whose K % 256 != 0
// falls back to q8_0 (llama.cpp would pick q5_0/q5_1/iq4_nl there; q8_0 keeps the bytes of
// the files made before stet had those types). general.name says so.
Result<gguf::GgufWriter> BuildRandomModel(const RandomModelOptions& opts,
                                          RandomModelSummary* summary = nullptr);

// BuildRandomModel, then writes the file.
Status WriteRandomModel(const RandomModelOptions& opts, const std::string& path,
                        RandomModelSummary* summary = nullptr);

}  // namespace stet

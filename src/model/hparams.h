// Hyper-parameters of a decoder-only model, read from GGUF metadata with the
// conventional defaults, and validated so later code can trust them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/gguf.h"
#include "model/arch.h"

namespace stet {

struct HParams {
  const ArchSpec* arch = nullptr;
  int n_layer = 0;
  int n_embd = 0;       // model width
  int n_head = 0;       // query heads
  int n_head_kv = 0;    // key/value heads (GQA when < n_head)
  int head_dim = 0;     // per-head width (key_length)
  int n_ff = 0;         // FFN hidden width
  int n_vocab = 0;      // rows of token_embd
  int n_ctx_train = 0;  // context length the model was trained with
  int rot_dim = 0;      // RoPE dimensions per head (rope.dimension_count)
  double rope_base = 10000.0;
  double rope_linear_factor = 1.0;  // rope.scaling.type == linear: positions / factor
  float rms_eps = 1e-5f;
  float attn_scale = 0.0f;  // multiplies q·k: 1 / sqrtf(head_dim)
  // Sliding-window attention (gemma3): on a windowed layer the query at position
  // p sees keys p - n_swa + 1 .. p (llama.cpp masks p - p_key >= n_swa). A
  // function of p alone, so chunking, batching and caching cannot move the edge.
  int n_swa = 0;                    // 0: every layer attends to the whole prefix
  std::vector<uint8_t> swa_layers;  // [n_layer], 1 where windowed (empty when n_swa == 0)
  double rope_base_swa = 10000.0;   // windowed layers' RoPE base (no scaling there)

  // Mixture of experts (arch->moe): expert_count, expert_used_count and each
  // expert's FFN width (expert_feed_forward_length); 0 for dense models.
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_exp = 0;

  // Gemma 2's tanh soft-capping: scores s -> c tanh(s / c) before the softmax,
  // and the final logits likewise; 0: none.
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;

  bool IsSwa(int layer) const { return n_swa > 0 && swa_layers[layer] != 0; }

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
};

// Reads and validates; unsupported architectures get an error listing the supported ones.
Result<HParams> ReadHParams(const gguf::GgufFile& file);

}  // namespace stet

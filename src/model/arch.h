// The architectures stet runs, as data: what differs between Llama, Qwen2,
// Qwen3, Qwen3-MoE, Gemma 2, Gemma 3 and Phi-3 is a handful of switches on one decoder block
// (model/forward.cc). Each architecture's file (arch/<name>.cc) defines its switches
// and GGUF quirks.
#pragma once

#include <string>
#include <string_view>

#include "kernels/kernels.h"

namespace stet {

// The FFN's gate activation: SiLU (SwiGLU) or GELU in its tanh form (GeGLU).
enum class FfnActivation { kSilu, kGeluTanh };

// An architecture's file names only what differs from Llama's block (the
// defaults below), by designated initializers.
struct ArchSpec {
  const char* name;                              // general.architecture in GGUF
  kernels::RopeStyle rope_style;                 // kNormal (GGUF llama) or kNeox (qwen2/3)
  bool qkv_bias = false;                         // attn_{q,k,v}.bias tensors (qwen2)
  bool qk_norm = false;                          // per-head RMSNorm on q and k before RoPE (qwen3)
  float default_rope_base = 10000.0f;            // when {arch}.rope.freq_base is absent
  FfnActivation ffn_act = FfnActivation::kSilu;  // kSilu, or kGeluTanh (gemma3)
  bool post_norms = false;  // post_attention_norm / post_ffw_norm on each block's output
  bool scale_embd = false;  // embeddings times sqrtf(n_embd) (gemma3)
  // With {arch}.attention.sliding_window: layer l is windowed unless
  // l % swa_pattern == swa_pattern - 1 ({arch}.attention.sliding_window_pattern
  // overrides). 0: the architecture has no sliding window.
  int swa_pattern = 0;
  // Mixture of experts (qwen3moe): the FFN is a router (ffn_gate_inp) choosing
  // expert_used_count of expert_count SwiGLU experts per token, their outputs
  // mixed by the normalized router probabilities (model/forward_moe.cc).
  bool moe = false;
  // Phi-3: gate and up stored as one ffn_up [2 * n_ff, n_embd] (gate first).
  // (A fused attn_qkv, where a file has one, is read for any architecture.)
  bool fused_gate_up = false;
  // Gemma 2: tanh soft-capping of the attention scores and of the final logits
  // ({arch}.attn_logit_softcapping, final_logit_softcapping; 50 and 30 when
  // absent); elsewhere a file asking for it is refused.
  bool softcaps = false;
  // Windowed layers use rope.freq_base_swa (Gemma 3) rather than rope.freq_base.
  bool swa_own_rope_base = false;
  // Window length when {arch}.attention.sliding_window is absent (Gemma 2: 4096).
  int default_n_swa = 0;
};

const ArchSpec& LlamaArch();
const ArchSpec& Qwen2Arch();
const ArchSpec& Qwen3Arch();
const ArchSpec& Gemma3Arch();
const ArchSpec& Qwen3MoeArch();
const ArchSpec& Phi3Arch();
const ArchSpec& Gemma2Arch();

// The spec for general.architecture, or nullptr.
const ArchSpec* FindArch(std::string_view name);
// "llama, qwen2, qwen3, gemma3, qwen3moe, phi3, gemma2" — for error messages.
std::string SupportedArchList();

}  // namespace stet

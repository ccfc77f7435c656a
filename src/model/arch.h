// The architectures stet runs, as data: what differs between Llama, Qwen2,
// Qwen3 and Gemma 3 is a handful of switches on one decoder block
// (model/forward.cc). Each architecture's file (arch_*.cc) defines its switches
// and GGUF quirks.
#pragma once

#include <string>
#include <string_view>

#include "kernels/kernels.h"

namespace stet {

// The FFN's gate activation: SiLU (SwiGLU) or GELU in its tanh form (GeGLU).
enum class FfnActivation { kSilu, kGeluTanh };

struct ArchSpec {
  const char* name;               // general.architecture in GGUF
  kernels::RopeStyle rope_style;  // kNormal (GGUF llama) or kNeox (qwen2/3)
  bool qkv_bias;                  // attn_{q,k,v}.bias tensors (qwen2)
  bool qk_norm;                   // per-head RMSNorm on q and k before RoPE (qwen3)
  float default_rope_base;        // when {arch}.rope.freq_base is absent
  FfnActivation ffn_act;          // kSilu, or kGeluTanh (gemma3)
  bool post_norms;                // post_attention_norm / post_ffw_norm on each block's output
  bool scale_embd;                // embeddings times sqrtf(n_embd) (gemma3)
  // With {arch}.attention.sliding_window: layer l is windowed unless
  // l % swa_pattern == swa_pattern - 1 ({arch}.attention.sliding_window_pattern
  // overrides). 0: the architecture has no sliding window.
  int swa_pattern;
};

const ArchSpec& LlamaArch();
const ArchSpec& Qwen2Arch();
const ArchSpec& Qwen3Arch();
const ArchSpec& Gemma3Arch();

// The spec for general.architecture, or nullptr.
const ArchSpec* FindArch(std::string_view name);
// "llama, qwen2, qwen3, gemma3" — for error messages.
std::string SupportedArchList();

}  // namespace stet

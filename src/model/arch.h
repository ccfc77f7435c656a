// The architectures stet runs, as data: what differs between Llama, Qwen2 and
// Qwen3 is a handful of switches on one decoder block (model/forward.cc). Each
// architecture's file (arch_*.cc) defines its switches and GGUF quirks.
#pragma once

#include <string>
#include <string_view>

#include "kernels/kernels.h"

namespace stet {

struct ArchSpec {
  const char* name;               // general.architecture in GGUF
  kernels::RopeStyle rope_style;  // kNormal (GGUF llama) or kNeox (qwen2/3)
  bool qkv_bias;                  // attn_{q,k,v}.bias tensors (qwen2)
  bool qk_norm;                   // per-head RMSNorm on q and k before RoPE (qwen3)
  float default_rope_base;        // when {arch}.rope.freq_base is absent
};

const ArchSpec& LlamaArch();
const ArchSpec& Qwen2Arch();
const ArchSpec& Qwen3Arch();

// The spec for general.architecture, or nullptr.
const ArchSpec* FindArch(std::string_view name);
// "llama, qwen2, qwen3" — for error messages.
std::string SupportedArchList();

}  // namespace stet

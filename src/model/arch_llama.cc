// Llama family: Llama 2, Llama 3.x (3.1+ rope scaling arrives as the
// rope_freqs.weight tensor), SmolLM2, TinyLlama, Mistral. GGUF's converter
// permutes q/k weights so RoPE rotates adjacent pairs (kNormal).
#include "model/arch.h"

namespace stet {

const ArchSpec& LlamaArch() {
  static const ArchSpec spec{"llama",
                             kernels::RopeStyle::kNormal,
                             /*qkv_bias=*/false,
                             /*qk_norm=*/false,
                             /*default_rope_base=*/10000.0f,
                             FfnActivation::kSilu,
                             /*post_norms=*/false,
                             /*scale_embd=*/false,
                             /*swa_pattern=*/0};
  return spec;
}

}  // namespace stet

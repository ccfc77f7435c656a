// Llama family: Llama 2, Llama 3.x (3.1+ rope scaling arrives as the
// rope_freqs.weight tensor), SmolLM2, TinyLlama, Mistral. GGUF's converter
// permutes q/k weights so RoPE rotates adjacent pairs (kNormal).
#include "model/arch.h"

namespace stet {

const ArchSpec& LlamaArch() {
  static const ArchSpec spec{.name = "llama", .rope_style = kernels::RopeStyle::kNormal};
  return spec;
}

}  // namespace stet

// Gemma 3 (text): embeddings scaled by sqrtf(n_embd); per-head q/k RMSNorm; a
// post-norm on the attention and the FFN outputs besides the pre-norms;
// GELU(tanh)-gated FFN; NeoX RoPE; sliding-window attention on five layers of
// six, whose RoPE base is 10 000 (rope.freq_base_swa), the global layers' the
// file's rope.freq_base. GGUF norms already hold Gemma's (1 + w).
#include "model/arch.h"

namespace stet {

const ArchSpec& Gemma3Arch() {
  static const ArchSpec spec{.name = "gemma3",
                             .rope_style = kernels::RopeStyle::kNeox,
                             .qk_norm = true,
                             .default_rope_base = 1000000.0f,
                             .ffn_act = FfnActivation::kGeluTanh,
                             .post_norms = true,
                             .scale_embd = true,
                             .swa_pattern = 6,
                             .swa_own_rope_base = true};
  return spec;
}

}  // namespace stet

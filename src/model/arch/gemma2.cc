// Gemma 2: Gemma 3's block without the q/k norms, with tanh soft-capping of the
// attention scores (attn_logit_softcapping) and of the final logits
// (final_logit_softcapping), and a sliding window (4096 unless the file says)
// on every other layer, starting with layer 0; one RoPE base for all layers.
// GGUF norms already hold Gemma's (1 + w).
#include "model/arch.h"

namespace stet {

const ArchSpec& Gemma2Arch() {
  static const ArchSpec spec{.name = "gemma2",
                             .rope_style = kernels::RopeStyle::kNeox,
                             .ffn_act = FfnActivation::kGeluTanh,
                             .post_norms = true,
                             .scale_embd = true,
                             .swa_pattern = 2,
                             .softcaps = true,
                             .default_n_swa = 4096};
  return spec;
}

}  // namespace stet

// Qwen3-MoE: Qwen3's attention (per-head q/k RMSNorm, NeoX RoPE, no biases)
// with a mixture-of-experts FFN: a softmax router picks expert_used_count of
// expert_count SwiGLU experts per token and mixes them with the chosen
// probabilities renormalized to sum to 1 (no shared expert).
#include "model/arch.h"

namespace stet {

const ArchSpec& Qwen3MoeArch() {
  static const ArchSpec spec{.name = "qwen3moe",
                             .rope_style = kernels::RopeStyle::kNeox,
                             .qk_norm = true,
                             .default_rope_base = 1000000.0f,
                             .moe = true};
  return spec;
}

}  // namespace stet

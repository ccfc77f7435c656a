// Qwen3-MoE: Qwen3's attention (per-head q/k RMSNorm, NeoX RoPE, no biases)
// with a mixture-of-experts FFN: a softmax router picks expert_used_count of
// expert_count SwiGLU experts per token and mixes them with the chosen
// probabilities renormalized to sum to 1 (no shared expert).
#include "model/arch.h"

namespace stet {

const ArchSpec& Qwen3MoeArch() {
  static const ArchSpec spec{"qwen3moe",
                             kernels::RopeStyle::kNeox,
                             /*qkv_bias=*/false,
                             /*qk_norm=*/true,
                             /*default_rope_base=*/1000000.0f,
                             FfnActivation::kSilu,
                             /*post_norms=*/false,
                             /*scale_embd=*/false,
                             /*swa_pattern=*/0,
                             /*moe=*/true};
  return spec;
}

}  // namespace stet

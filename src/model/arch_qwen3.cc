// Qwen3 (dense): per-head RMSNorm on q and k before RoPE, no biases, NeoX RoPE,
// head_dim from attention.key_length (not n_embd / n_head).
#include "model/arch.h"

namespace stet {

const ArchSpec& Qwen3Arch() {
  static const ArchSpec spec{"qwen3",
                             kernels::RopeStyle::kNeox,
                             /*qkv_bias=*/false,
                             /*qk_norm=*/true,
                             /*default_rope_base=*/1000000.0f,
                             FfnActivation::kSilu,
                             /*post_norms=*/false,
                             /*scale_embd=*/false,
                             /*swa_pattern=*/0};
  return spec;
}

}  // namespace stet

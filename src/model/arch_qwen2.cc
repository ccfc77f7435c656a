// Qwen2 / Qwen2.5: biases on q, k and v; NeoX-style RoPE (pairs i, i + d/2).
#include "model/arch.h"

namespace stet {

const ArchSpec& Qwen2Arch() {
  static const ArchSpec spec{"qwen2",
                             kernels::RopeStyle::kNeox,
                             /*qkv_bias=*/true,
                             /*qk_norm=*/false,
                             /*default_rope_base=*/1000000.0f,
                             FfnActivation::kSilu,
                             /*post_norms=*/false,
                             /*scale_embd=*/false,
                             /*swa_pattern=*/0};
  return spec;
}

}  // namespace stet

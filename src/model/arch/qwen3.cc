// Qwen3 (dense): per-head RMSNorm on q and k before RoPE, no biases, NeoX RoPE,
// head_dim from attention.key_length (not n_embd / n_head).
#include "model/arch.h"

namespace stet {

const ArchSpec& Qwen3Arch() {
  static const ArchSpec spec{.name = "qwen3",
                             .rope_style = kernels::RopeStyle::kNeox,
                             .qk_norm = true,
                             .default_rope_base = 1000000.0f};
  return spec;
}

}  // namespace stet

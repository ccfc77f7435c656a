// Qwen2 / Qwen2.5: biases on q, k and v; NeoX-style RoPE (pairs i, i + d/2).
#include "model/arch.h"

namespace stet {

const ArchSpec& Qwen2Arch() {
  static const ArchSpec spec{.name = "qwen2",
                             .rope_style = kernels::RopeStyle::kNeox,
                             .qkv_bias = true,
                             .default_rope_base = 1000000.0f};
  return spec;
}

}  // namespace stet

// Phi-3 (mini/medium, 4k context): Llama's block with NeoX RoPE, q/k/v fused in
// one attn_qkv and gate/up in one ffn_up (gate rows first), both read as row
// ranges of the mapped tensor (no copy). As llama.cpp, a file's
// attention.sliding_window is not applied; LongRoPE files (rope_factors_long /
// _short, the 128k variants) are refused.
#include "model/arch.h"

namespace stet {

const ArchSpec& Phi3Arch() {
  static const ArchSpec spec{
      .name = "phi3", .rope_style = kernels::RopeStyle::kNeox, .fused_gate_up = true};
  return spec;
}

}  // namespace stet

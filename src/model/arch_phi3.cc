// Phi-3 (mini/medium, 4k context): Llama's block with NeoX RoPE, q/k/v fused in
// one attn_qkv and gate/up in one ffn_up (gate rows first), both read as row
// ranges of the mapped tensor (no copy). As llama.cpp, a file's
// attention.sliding_window is not applied; LongRoPE files (rope_factors_long /
// _short, the 128k variants) are refused.
#include "model/arch.h"

namespace stet {

const ArchSpec& Phi3Arch() {
  static const ArchSpec spec{"phi3",
                             kernels::RopeStyle::kNeox,
                             /*qkv_bias=*/false,
                             /*qk_norm=*/false,
                             /*default_rope_base=*/10000.0f,
                             FfnActivation::kSilu,
                             /*post_norms=*/false,
                             /*scale_embd=*/false,
                             /*swa_pattern=*/0,
                             /*moe=*/false,
                             /*fused_gate_up=*/true};
  return spec;
}

}  // namespace stet

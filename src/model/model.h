// A loaded decoder-only transformer: hyper-parameters and weight views into
// the mapped GGUF file (no copies of the big matrices). Loading validates
// every tensor's presence, type and shape so the forward pass can trust them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/gguf.h"
#include "kernels/kernels.h"
#include "kernels/matmul_table.h"
#include "model/hparams.h"

namespace stet {

struct LayerWeights {
  std::vector<float> attn_norm;        // [n_embd]
  kernels::WeightView wq, wk, wv, wo;  // [q_dim, n_embd], [kv_dim, n_embd] x2, [n_embd, q_dim]
  std::vector<float> bq, bk, bv;       // qwen2 biases [q_dim], [kv_dim], [kv_dim]; else empty
  std::vector<float> q_norm, k_norm;   // qwen3 per-head norms [head_dim]; else empty
  std::vector<float> ffn_norm;         // [n_embd]
  kernels::WeightView w_gate, w_up, w_down;  // [n_ff, n_embd] x2, [n_embd, n_ff]
  // gemma3: RMSNorm of the attention output and of the FFN output before each
  // residual add [n_embd]; else empty.
  std::vector<float> attn_post_norm, ffn_post_norm;
  // qwen3moe (w_gate/w_up/w_down unused): the router [n_expert, n_embd] and
  // each expert's gate/up [n_ff_exp, n_embd] and down [n_embd, n_ff_exp], views
  // into the 3-D ffn_{gate,up,down}_exps tensors; else empty.
  kernels::WeightView router;
  std::vector<kernels::WeightView> gate_exps, up_exps, down_exps;
};

struct ModelWeights {
  kernels::WeightView token_embd;  // [n_vocab, n_embd]: row t is token t's embedding
  std::vector<float> output_norm;  // [n_embd]
  kernels::WeightView output;      // [n_vocab, n_embd]; the embedding when tied
  bool tied_output = false;
  std::vector<float> rope_freq_factors;  // [rot_dim / 2] (Llama 3.1+ rope_freqs.weight), or empty
  std::vector<LayerWeights> layers;
};

class Model {
 public:
  // Maps the file and validates it; `progress` draws a bar on a terminal.
  static Result<std::unique_ptr<Model>> Load(const std::string& path, bool progress = false);
  // For tests and tools that build a GgufFile in memory.
  static Result<std::unique_ptr<Model>> FromGguf(std::unique_ptr<gguf::GgufFile> file,
                                                 bool progress = false);

  const HParams& hparams() const { return hp_; }
  const ModelWeights& weights() const { return w_; }
  const gguf::GgufFile& file() const { return *file_; }
  // Bytes of weights read per decoded token (for the bandwidth roofline).
  int64_t weight_bytes() const { return weight_bytes_; }
  // Bytes of AVX-512 decode-layout copies held besides the mapped file (0 when
  // the CPU lacks AVX-512 or STET_NO_PACK is set).
  int64_t packed_bytes() const { return packed_bytes_; }

  // The MatMul rows Isa::kAuto uses for this model's matrices (kernel_plan.cc):
  // measured on them with n_threads (well under a second), or read back from the
  // cache of an earlier measurement on this CPU, binary, thread count and shapes
  // ($STET_KERNEL_CACHE, else ~/.cache/stet/kernel-plans); STET_KERNEL_PLAN=spec
  // (kernels::MatMulPlan::Parse) gives one instead, STET_KERNEL_TUNE=0 keeps the
  // best ISA's rows. Never changes an output bit. Returns one line saying which.
  std::string TuneKernels(int n_threads);
  void SetKernelPlan(const kernels::MatMulPlan& plan);
  const kernels::MatMulPlan* kernel_plan() const { return plan_.get(); }
  const std::string& kernel_plan_note() const { return plan_note_; }  // TuneKernels' line
  // Every matrix the forward pass multiplies by (layers, then the output).
  std::vector<const kernels::WeightView*> MatMulViews() const;

 private:
  Model() = default;
  Status LoadWeights(bool progress);

  // Gives every q8_0/q4_0/q4_1/q4_k matrix a copy in the AVX-512 decode layout
  // (kernels::PackWeights), on CPUs that can use it.
  void PackWeights();
  std::string TuneKernelsOnce(int n_threads);

  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<gguf::GgufFile> file_;
  HParams hp_;
  ModelWeights w_;
  std::vector<std::unique_ptr<uint8_t, FreeDeleter>> packed_;
  int64_t weight_bytes_ = 0;
  int64_t packed_bytes_ = 0;
  std::unique_ptr<kernels::MatMulPlan> plan_;
  std::string plan_note_;
};

}  // namespace stet

// A loaded decoder-only transformer: hyper-parameters and weight views into
// the mapped GGUF file (no copies of the big matrices). Loading validates
// every tensor's presence, type and shape so the forward pass can trust them.
// Float tensors can be replaced in place (ReplaceTensors: new values in memory
// the model owns, the file never written) or read from caller memory
// (BorrowTensors: a trainer's parameters), and WeightsDigest names what the
// weights are now, for the fingerprint.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/gguf.h"
#include "kernels/kernels.h"
#include "kernels/matmul_table.h"
#include "model/hparams.h"
#include "model/tensor_parallel.h"

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

// New values for one tensor of the file (Model::ReplaceTensors).
struct TensorValues {
  std::string name;  // as in the GGUF: "blk.0.attn_q.weight"
  DType type = DType::kF32;
  const void* data = nullptr;  // `count` values of `type`, in the file's element order
  int64_t count = 0;
};

class Model {
 public:
  // Maps the file and validates it; `progress` draws a bar on a terminal.
  static Result<std::unique_ptr<Model>> Load(const std::string& path, bool progress = false);
  // Rank `rank` of an n_ranks tensor-parallel group (model/tensor_parallel.h):
  // validates the whole file as Load does, but maps and holds only the rows of
  // its shard (the header alone is read for the rest). n_ranks 1 is Load.
  // InvalidArgument when the model cannot be split n_ranks ways.
  static Result<std::unique_ptr<Model>> LoadShard(const std::string& path, int rank, int n_ranks,
                                                  bool progress = false);
  // For tests and tools that build a GgufFile in memory.
  static Result<std::unique_ptr<Model>> FromGguf(std::unique_ptr<gguf::GgufFile> file,
                                                 bool progress = false, int rank = 0,
                                                 int n_ranks = 1);

  const HParams& hparams() const { return hp_; }
  // The whole model (hparams) and this process's share of it: every matrix in
  // weights() holds the shard's rows only (all of them when shard().whole()).
  const ModelWeights& weights() const { return w_; }
  const Shard& shard() const { return shard_; }
  const gguf::GgufFile& file() const { return *file_; }
  // Bytes of weights read per decoded token (for the bandwidth roofline); this
  // shard's share.
  int64_t weight_bytes() const { return weight_bytes_; }
  // Bytes of AVX-512 decode-layout copies held besides the mapped file (0 when
  // the CPU lacks AVX-512 or STET_NO_PACK is set).
  int64_t packed_bytes() const { return packed_bytes_; }

  // Replaces the values of the file's tensors — float matrices, norms or
  // biases (f32, f16 or bf16; a quantized tensor is refused: there is no
  // re-quantization) — by `count` values of `type`: the tensor's own type, or
  // f32 values it represents exactly (else InvalidArgument naming the first
  // that would round). All or none: any refusal leaves every weight as it
  // was. The views into a tensor (fused q/k/v, experts, a tied output) and
  // its packed copies follow. Not while a Forward runs (Engine::LoadWeights
  // calls it between steps).
  Status ReplaceTensors(const std::vector<TensorValues>& values);
  // Points the model at caller-owned values of float tensors (each in the
  // tensor's own type, `count` of them) instead of copying them: the forward
  // pass reads that memory directly, so a change the caller makes there is
  // what the next Forward::Run computes with. The caller keeps it alive and
  // unchanged while a Forward runs, and calls again after changing the 1-D
  // tensors (norms, biases: the model reads float copies of those). Checked
  // as ReplaceTensors, all or none; WeightsDigest() is then "borrowed".
  Status BorrowTensors(const std::vector<TensorValues>& values);
  // "" while every tensor holds the file's bytes; else the SHA-256 of every
  // tensor's name and current bytes, in file order (equal weights, equal digest).
  const std::string& WeightsDigest() const { return digest_; }
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
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  Model() = default;
  Status LoadWeights(bool progress, int rank, int n_ranks);
  // Records `dst` as the float copy of tensor `name` (ReplaceTensor updates it).
  Status LoadVector(const std::string& name, int64_t n, std::vector<float>* dst,
                    bool required = true, RowSpan part = {});
  Result<std::unique_ptr<uint8_t, FreeDeleter>> NewValues(const TensorValues& v) const;
  void UpdateDigest(const std::vector<TensorValues>& replaced);
  void MapViews();
  Status Retarget(const std::string& name, const uint8_t* bytes);

  // Gives every q8_0/q4_0/q4_1/q4_k matrix a copy in the AVX-512 decode layout
  // (kernels::PackWeights), on CPUs that can use it.
  void PackWeights();
  std::string TuneKernelsOnce(int n_threads);

  std::unique_ptr<gguf::GgufFile> file_;
  HParams hp_;
  Shard shard_;
  ModelWeights w_;
  std::unique_ptr<uint8_t, FreeDeleter> packed_arena_;  // every packed copy (PackWeights)
  int64_t weight_bytes_ = 0;
  int64_t packed_bytes_ = 0;
  // ReplaceTensor's state: the float copies of small tensors, the replaced
  // tensors' bytes, every tensor's SHA-256 (file and current; filled on the
  // first replacement) and the digest of the current weights.
  std::map<std::string, std::vector<float>*> vectors_;
  std::map<std::string, std::unique_ptr<uint8_t, FreeDeleter>> replaced_;
  std::set<std::string> borrowed_;  // tensors read from caller memory (BorrowTensors)
  // Each tensor's matrix views and their byte offsets in it (MapViews).
  std::map<std::string, std::vector<std::pair<kernels::WeightView*, ptrdiff_t>>> views_of_;
  bool views_mapped_ = false;
  std::map<std::string, std::string> file_sha_, current_sha_;
  std::string digest_;
  std::unique_ptr<kernels::MatMulPlan> plan_;
  std::string plan_note_;
};

}  // namespace stet

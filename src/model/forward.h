// The decoder forward pass over a batch of tokens that may belong to several
// sequences, each at its own absolute position. Every op is a batch-invariant
// kernel, so a token's logits do not depend on what else is in the batch, how
// its prompt was chunked, or how many threads run (tests/model/forward_test.cc).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "base/cpu_features.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/adaptive.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace stet {

class RopeTable;

struct BatchToken {
  int32_t token = 0;    // token id, < n_vocab
  int32_t pos = 0;      // absolute position in its sequence (kv.Has(seq, pos))
  int32_t seq = 0;      // sequence slot in the KV store
  bool logits = false;  // whether to produce this token's logits
};

class Forward {
 public:
  // pool may be null (one thread). max_ctx bounds positions (RoPE table size).
  // kAdaptive is the batch-variant mode (R8), for measurement and demonstration.
  // A model shard (Model::LoadShard) runs with the comm of its group: every
  // rank calls Run with the same batch, each computes its rows of every matrix
  // and its heads, and all-gathers join the finished pieces
  // (model/tensor_parallel.h), so the logits are those of one process, bit for bit.
  Forward(const Model& model, ThreadPool* pool, Isa isa, int max_ctx,
          NumericsMode mode = NumericsMode::kInvariant, TpComm* comm = nullptr);
  ~Forward();

  // Runs the batch. Tokens of one sequence must appear in increasing position
  // order, and positions below a token's own in its sequence must already be in
  // the cache (or earlier in this batch). Appends n_vocab logits per token with
  // logits=true to *logits, in batch order (under tensor parallelism on rank 0
  // only; the others append nothing). Token ids, positions and KV slots
  // are the caller's to validate (the engine does: ValidateRequest, the
  // scheduler); an out-of-range one is a programmer error (STET_CHECK). kv holds
  // this rank's KV heads (KvRowBytes). Errors: a collective that failed (a rank
  // gone); the group is then broken.
  Status Run(const std::vector<BatchToken>& batch, KvStore& kv, std::vector<float>* logits);

  // Bytes of one position's K (or V) row for this model shard's KV heads in `kv_type`.
  static int64_t KvRowBytes(const Model& model, DType kv_type);

 private:
  // Scratch vectors only grow (capacity is reused from step to step).
  template <typename T>
  static void Grow(std::vector<T>& v, size_t n) {
    if (v.size() < n) v.resize(n);
  }
  void MatMul(const kernels::WeightView& w, const float* x, int64_t m, float* y);
  // y[m, n] for a matrix split by output rows across the group (spans: every
  // rank's rows; this rank holds w, its own): its rows, then one all-gather.
  // One process: MatMul straight into y.
  Status MatMulSplit(const kernels::WeightView& w, const float* x, int64_t m,
                     const std::vector<RowSpan>& spans, float* y);
  // y[m, total] from every rank's columns local[m, spans[r].size() * unit]:
  // one all-gather, then each row's pieces put side by side. out_root: only
  // rank 0 receives (the logits).
  Status GatherColumns(const float* local, int64_t m, const std::vector<RowSpan>& spans,
                       int64_t unit, float* y, bool to_root_only = false);
  // x[m, n_embd] = the batch's embedding rows (each from the rank holding its
  // vocabulary row under tensor parallelism), scaled where the architecture says.
  Status Embed(const std::vector<BatchToken>& batch, float* x);
  // Local query head j's KV head (local index), and the local query heads of
  // local KV head c: [*h0, *h1).
  int KvOf(int j) const { return (q0_ + j) / group_ - kv0_; }
  void QueriesOf(int c, int* h0, int* h1) const;
  // Whether w's MatMul runs on refined activations (invariant mode, quantized w).
  bool Refined(const kernels::WeightView& w) const;
  void MatMulPrecise(const kernels::WeightView& w, const float* x, int64_t m, float* y);
  // Same input, several matrices (q/k/v, gate/up): one kernels::MatMulGroup call
  // where the mode runs the canonical kernel, else one MatMul each.
  void MatMuls(std::initializer_list<const kernels::WeightView*> ws, const float* x, int64_t m,
               std::initializer_list<float*> ys);
  // The mixture-of-experts FFN (qwen3moe) of rows x[m, n_embd] into out[m, n_embd]:
  // each row's experts are chosen from its own router logits alone, and each
  // expert runs its rows as one MatMul batch (row-local, so the grouping cannot
  // change a bit). forward_moe.cc.
  Status MoeFfn(const LayerWeights& L, const float* x, int64_t m, float* out);
  // Reads K/V in place through the store's views (a paged block table: no copy);
  // on a windowed layer a query whose window starts past 0 reads a gathered copy.
  // Writes this rank's heads' output, out[m, q_dim_].
  void Attention(const std::vector<BatchToken>& batch, int layer, KvStore& kv, float* out);

  const Model& model_;
  ThreadPool* pool_;
  Isa isa_;
  int max_ctx_;
  NumericsMode mode_;
  TpComm* comm_;  // null, or the group (size > 1) of this model shard
  // This rank's query heads [q0_, q0_ + nq_) and KV heads [kv0_, kv0_ + nkv_);
  // q_dim_ / kv_dim_: their widths; group_: query heads per KV head.
  int q0_, nq_, kv0_, nkv_, group_;
  int64_t q_dim_, kv_dim_;
  std::unique_ptr<RopeTable> rope_;
  std::unique_ptr<RopeTable> rope_swa_;  // windowed layers' table (gemma3), or null
  // Workspace, grown on demand and then reused (no allocation in steady state).
  std::vector<float> x_, xn_, q_, k_, v_, attn_, ff_gate_, ff_up_, out_rows_;
  // Tensor parallelism: this rank's attention heads' output, a matmul's own
  // columns, the gathered FFN activation, gather buffers, the owners' rows.
  std::vector<float> attn_local_, cols_local_, ff_full_, gathered_, embd_local_;
  std::vector<int64_t> counts_;
  std::vector<std::vector<float>> scratch_;  // per thread: attention scores
  // One attention call: query rows (i0, h0) and, for a pair, (i1, h1) over the
  // K/V rows of i0's sequence and h0's KV group (i1 = -1: a single query); or,
  // with n_tok > 0, a tile: tokens i0 .. i0 + n_tok - 1 of one sequence times
  // every (local) query head of (local) KV head h0 (kernels::AttendHeads).
  struct AttnTask {
    int64_t i0, i1;
    int h0, h1;
    int n_tok = 0;
  };
  std::vector<AttnTask> attn_tasks_;
  void AttendTile(const std::vector<BatchToken>& batch, const AttnTask& at, int layer, KvStore& kv,
                  float* out, std::vector<float>& scratch);
  // One token's attention in steps spread over the threads (kernels::
  // AttendScores / AttendSoftmax / AttendValues), when its KV heads are fewer
  // than the threads and its context long; false: not taken (the caller's
  // task list does it). split_s_: every query's scores; split_den_: their
  // softmax denominators.
  bool AttendSplit(const BatchToken& t, int layer, KvStore& kv, float* out);
  std::vector<float> split_s_, split_den_;
  // MoE workspace: router logits, each row's chosen experts and weights, the
  // rows grouped by expert, and per (row, choice) expert outputs.
  // Slots are kept in expert order throughout (moe_order_), so each expert's
  // rows are contiguous for its matmuls and for the gathers between them.
  std::vector<float> router_, moe_w_, moe_x_, moe_g_, moe_u_, moe_h_, moe_y_, moe_y_local_;
  std::vector<int32_t> moe_sel_, moe_count_, moe_order_, moe_where_;
};

}  // namespace stet

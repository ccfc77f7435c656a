#include "model/forward.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "numerics/dequant.h"
#include "numerics/math.h"
#include "numerics/rope_table.h"

namespace stet {

namespace {

// First key position a query at `pos` attends to: 0, or on a windowed layer
// (window > 0) the start of its window. Depends on pos alone (R2).
int64_t WindowStart(int64_t pos, int window) {
  return window > 0 && pos >= window ? pos - window + 1 : 0;
}

}  // namespace

Forward::Forward(const Model& model, ThreadPool* pool, Isa isa, int max_ctx, NumericsMode mode,
                 TpComm* comm)
    : model_(model),
      pool_(pool),
      isa_(isa),
      max_ctx_(max_ctx),
      mode_(mode),
      comm_(comm != nullptr && comm->size() > 1 ? comm : nullptr) {
  const HParams& hp = model.hparams();
  const Shard& sh = model.shard();
  STET_CHECK_MSG(sh.whole()
                     ? comm_ == nullptr
                     : comm_ != nullptr && comm_->size() == sh.n_ranks && comm_->rank() == sh.rank,
                 "Forward: a model shard needs the comm of its group (and a whole model none)");
  q0_ = static_cast<int>(sh.my_q_heads().begin);
  nq_ = static_cast<int>(sh.my_q_heads().size());
  kv0_ = static_cast<int>(sh.my_kv_heads().begin);
  nkv_ = static_cast<int>(sh.my_kv_heads().size());
  group_ = hp.n_head / hp.n_head_kv;
  q_dim_ = int64_t{nq_} * hp.head_dim;
  kv_dim_ = int64_t{nkv_} * hp.head_dim;
  RopeScaling scaling;
  if (hp.rope_linear_factor != 1.0) {
    scaling.kind = RopeScaling::Kind::kLinear;
    scaling.factor = hp.rope_linear_factor;
  }
  const auto& ff = model.weights().rope_freq_factors;
  rope_ = std::make_unique<RopeTable>(hp.rot_dim, hp.rope_base, scaling,
                                      ff.empty() ? nullptr : ff.data(), max_ctx);
  if (hp.n_swa > 0) {
    rope_swa_ =
        std::make_unique<RopeTable>(hp.rot_dim, hp.rope_base_swa, RopeScaling{}, nullptr, max_ctx);
  }
  scratch_.resize(pool ? pool->size() : 1);
}

Forward::~Forward() = default;

int64_t Forward::KvRowBytes(const Model& model, DType kv_type) {
  return model.shard().my_kv_heads().size() * model.hparams().head_dim *
         (kv_type == DType::kF32 ? 4 : 2);
}

Status Forward::Run(const std::vector<BatchToken>& batch, KvStore& kv, std::vector<float>* logits) {
  const HParams& hp = model_.hparams();
  const ModelWeights& w = model_.weights();
  const Shard& sh = model_.shard();
  const int64_t m = static_cast<int64_t>(batch.size());
  if (m == 0) return Status::Ok();
  // The engine validated the request (ValidateRequest) and the scheduler gave
  // every position a KV block: anything else here is a programmer error.
  for (const BatchToken& t : batch) {
    STET_CHECK_MSG(t.token >= 0 && t.token < hp.n_vocab, "token id outside the vocabulary");
    STET_CHECK_MSG(t.pos >= 0 && t.pos < max_ctx_, "position outside the context");
    STET_CHECK_MSG(kv.Has(t.seq, t.pos), "no KV storage for this slot and position");
  }
  STET_CHECK_MSG(kv.row_bytes() == KvRowBytes(model_, kv.type()),
                 "the KV store's rows are not this shard's KV heads");
  const int64_t d = hp.n_embd, qd = q_dim_, kvd = kv_dim_;
  Grow(x_, m * d);
  Grow(xn_, m * d);
  Grow(q_, m * qd);
  Grow(k_, m * kvd);
  Grow(v_, m * kvd);
  Grow(attn_, m * std::max<int64_t>(hp.q_dim(), d));  // also the MoE FFN's output
  Grow(ff_gate_, m * sh.my_ff().size());
  Grow(ff_up_, m * sh.my_ff().size());
  // One process: attention writes attn_ itself; a rank its heads' columns.
  float* attn_out = attn_.data();
  if (comm_) {
    Grow(attn_local_, m * qd);
    Grow(ff_full_, m * hp.n_ff);
    attn_out = attn_local_.data();
  }

  STET_RETURN_IF_ERROR(Embed(batch, x_.data()));
  for (int l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& L = w.layers[l];
    // Attention block.
    kernels::RmsNorm(x_.data(), L.attn_norm.data(), m, d, hp.rms_eps, xn_.data(), isa_);
    MatMuls({&L.wq, &L.wk, &L.wv}, xn_.data(), m, {q_.data(), k_.data(), v_.data()});
    if (!L.bq.empty()) {
      for (int64_t i = 0; i < m; ++i) {
        kernels::Add(&q_[i * qd], L.bq.data(), qd, &q_[i * qd], isa_);
        kernels::Add(&k_[i * kvd], L.bk.data(), kvd, &k_[i * kvd], isa_);
        kernels::Add(&v_[i * kvd], L.bv.data(), kvd, &v_[i * kvd], isa_);
      }
    }
    if (!L.q_norm.empty()) {
      kernels::RmsNorm(q_.data(), L.q_norm.data(), m * nq_, hp.head_dim, hp.rms_eps, q_.data(),
                       isa_);
      kernels::RmsNorm(k_.data(), L.k_norm.data(), m * nkv_, hp.head_dim, hp.rms_eps, k_.data(),
                       isa_);
    }
    const RopeTable& rope = hp.IsSwa(l) ? *rope_swa_ : *rope_;
    for (int64_t i = 0; i < m; ++i) {
      const float* c = rope.Cos(batch[i].pos);
      const float* s = rope.Sin(batch[i].pos);
      kernels::Rope(&q_[i * qd], nq_, hp.head_dim, hp.rot_dim, c, s, hp.arch->rope_style, isa_);
      kernels::Rope(&k_[i * kvd], nkv_, hp.head_dim, hp.rot_dim, c, s, hp.arch->rope_style, isa_);
      // Rule R3: K and V go into the cache first; attention reads them back from there.
      for (int c = 0; c < nkv_; ++c) {
        const int64_t at = i * kvd + c * hp.head_dim;
        kernels::StoreRow(&k_[at], hp.head_dim, kv.type(), kv.K(l, batch[i].seq, batch[i].pos, c),
                          isa_);
        kernels::StoreRow(&v_[at], hp.head_dim, kv.type(), kv.V(l, batch[i].seq, batch[i].pos, c),
                          isa_);
      }
    }
    Attention(batch, l, kv, attn_out);
    if (comm_) {
      STET_RETURN_IF_ERROR(GatherColumns(attn_out, m, sh.q_heads, hp.head_dim, attn_.data()));
    }
    STET_RETURN_IF_ERROR(MatMulSplit(L.wo, attn_.data(), m, sh.embd, xn_.data()));
    if (!L.attn_post_norm.empty()) {
      kernels::RmsNorm(xn_.data(), L.attn_post_norm.data(), m, d, hp.rms_eps, xn_.data(), isa_);
    }
    kernels::Add(x_.data(), xn_.data(), m * d, x_.data(), isa_);

    // Feed-forward block (SwiGLU, or GeGLU for gemma3, or a mixture of experts).
    kernels::RmsNorm(x_.data(), L.ffn_norm.data(), m, d, hp.rms_eps, xn_.data(), isa_);
    if (hp.arch->moe) {
      STET_RETURN_IF_ERROR(
          MoeFfn(L, xn_.data(), m, attn_.data()));  // attn_ is free until the next layer
      kernels::Add(x_.data(), attn_.data(), m * d, x_.data(), isa_);
      continue;
    }
    const int64_t ff = sh.my_ff().size();
    MatMuls({&L.w_gate, &L.w_up}, xn_.data(), m, {ff_gate_.data(), ff_up_.data()});
    if (hp.arch->ffn_act == FfnActivation::kGeluTanh) {
      kernels::GeGlu(ff_gate_.data(), ff_up_.data(), m * ff, ff_gate_.data(), isa_);
    } else {
      kernels::SwiGlu(ff_gate_.data(), ff_up_.data(), m * ff, ff_gate_.data(), isa_);
    }
    const float* act = ff_gate_.data();
    if (comm_) {
      STET_RETURN_IF_ERROR(GatherColumns(ff_gate_.data(), m, sh.ff, 1, ff_full_.data()));
      act = ff_full_.data();
    }
    STET_RETURN_IF_ERROR(MatMulSplit(L.w_down, act, m, sh.embd, xn_.data()));
    if (!L.ffn_post_norm.empty()) {
      kernels::RmsNorm(xn_.data(), L.ffn_post_norm.data(), m, d, hp.rms_eps, xn_.data(), isa_);
    }
    kernels::Add(x_.data(), xn_.data(), m * d, x_.data(), isa_);
  }

  // Logits only for the rows that asked (the output matmul dominates small models).
  int64_t n_out = 0;
  for (int64_t i = 0; i < m; ++i) {
    if (!batch[i].logits) continue;
    kernels::RmsNorm(&x_[i * d], w.output_norm.data(), 1, d, hp.rms_eps, &xn_[n_out * d], isa_);
    ++n_out;
  }
  if (n_out == 0) return Status::Ok();
  // Each rank computes its vocabulary rows' logits; rank 0 gathers whole rows.
  const bool root = comm_ == nullptr || comm_->rank() == 0;
  const int64_t n_vocab_mine = sh.my_vocab().size();
  const size_t base = logits->size();
  if (root) logits->resize(base + n_out * hp.n_vocab);
  float* y = logits->data() + base;
  if (comm_) {
    Grow(cols_local_, n_out * n_vocab_mine);
    y = cols_local_.data();
  }
  MatMul(w.output, xn_.data(), n_out, y);
  if (hp.final_softcap > 0.0f) {  // Gemma 2; scalar, the same bits on every ISA
    const float c = hp.final_softcap;
    for (int64_t j = 0; j < n_out * n_vocab_mine; ++j) y[j] = c * TanhF(y[j] / c);
  }
  if (comm_) {
    STET_RETURN_IF_ERROR(
        GatherColumns(y, n_out, sh.vocab, 1, root ? logits->data() + base : nullptr, true));
  }
  return Status::Ok();
}

Status Forward::Embed(const std::vector<BatchToken>& batch, float* x) {
  const HParams& hp = model_.hparams();
  const kernels::WeightView& e = model_.weights().token_embd;
  const int64_t m = static_cast<int64_t>(batch.size()), d = hp.n_embd;
  auto row = [&](int32_t token) {
    return static_cast<const uint8_t*>(e.data) +
           (token - model_.shard().my_vocab().begin) * e.row_bytes;
  };
  if (!comm_) {
    for (int64_t i = 0; i < m; ++i) {
      STET_RETURN_IF_ERROR(DequantizeRow(e.type, row(batch[i].token), d, &x[i * d]));
    }
  } else {
    // Each rank dequantizes the rows of its vocabulary (in batch order), the
    // group all-gathers them, and every rank puts each row in its place.
    const std::vector<RowSpan>& spans = model_.shard().vocab;
    const int n = comm_->size();
    auto owner = [&](int32_t token) {
      int r = 0;
      while (token >= spans[r].end) ++r;
      return r;
    };
    counts_.assign(n, 0);
    int64_t mine = 0;
    for (int64_t i = 0; i < m; ++i) {
      const int r = owner(batch[i].token);
      counts_[r] += d * 4;
      if (r != comm_->rank()) continue;
      Grow(embd_local_, (mine + 1) * d);
      STET_RETURN_IF_ERROR(DequantizeRow(e.type, row(batch[i].token), d, &embd_local_[mine * d]));
      ++mine;
    }
    Grow(embd_local_, 1);
    Grow(gathered_, m * d);
    STET_RETURN_IF_ERROR(comm_->AllGather(embd_local_.data(), counts_.data(), gathered_.data()));
    std::vector<int64_t> next(n, 0);  // each rank's next row in gathered_
    for (int r = 1; r < n; ++r) next[r] = next[r - 1] + counts_[r - 1] / 4;
    for (int64_t i = 0; i < m; ++i) {
      const int r = owner(batch[i].token);
      std::copy_n(&gathered_[next[r]], d, &x[i * d]);
      next[r] += d;
    }
  }
  if (hp.arch->scale_embd) {
    // As llama.cpp: the f32 row times sqrtf(n_embd), one rounding per element.
    const float s = std::sqrt(static_cast<float>(d));
    for (int64_t j = 0; j < m * d; ++j) x[j] = x[j] * s;
  }
  return Status::Ok();
}

Status Forward::MatMulSplit(const kernels::WeightView& w, const float* x, int64_t m,
                            const std::vector<RowSpan>& spans, float* y) {
  if (!comm_) {
    MatMul(w, x, m, y);
    return Status::Ok();
  }
  Grow(cols_local_, m * w.rows);
  MatMul(w, x, m, cols_local_.data());
  return GatherColumns(cols_local_.data(), m, spans, 1, y);
}

Status Forward::GatherColumns(const float* local, int64_t m, const std::vector<RowSpan>& spans,
                              int64_t unit, float* y, bool to_root_only) {
  const int n = comm_->size();
  const int64_t total = spans.back().end * unit;
  counts_.resize(n);
  for (int r = 0; r < n; ++r) counts_[r] = m * spans[r].size() * unit * 4;
  // One row: the rank-ordered pieces are the row itself.
  float* out = y;
  if (m > 1) {
    Grow(gathered_, m * total);
    out = gathered_.data();
  }
  STET_RETURN_IF_ERROR(to_root_only ? comm_->Gather(local, counts_.data(), out)
                                    : comm_->AllGather(local, counts_.data(), out));
  if (m == 1 || y == nullptr) return Status::Ok();
  const float* piece = out;
  for (int r = 0; r < n; ++r) {
    const int64_t cols = spans[r].size() * unit, at = spans[r].begin * unit;
    for (int64_t i = 0; i < m; ++i) std::copy_n(piece + i * cols, cols, y + i * total + at);
    piece += m * cols;
  }
  return Status::Ok();
}

void Forward::MatMuls(std::initializer_list<const kernels::WeightView*> ws, const float* x,
                      int64_t m, std::initializer_list<float*> ys) {
  if (mode_ == NumericsMode::kPrecise) {
    for (size_t j = 0; j < ws.size(); ++j) MatMul(*ws.begin()[j], x, m, ys.begin()[j]);
    return;
  }
  if (Refined(**ws.begin())) {
    // Refined (int8 x + int8 residual), one call for the group; mixed types go
    // matrix by matrix inside (a float matrix among them unrefined).
    kernels::MatMulGroupRefined(ws.begin(), static_cast<int>(ws.size()), x, m, ys.begin(), pool_,
                                isa_);
    return;
  }
  // Adaptive mode from kAdaptiveSplitRows rows on runs the canonical kernel, so
  // it gets the fused call too (a fair invariant/adaptive comparison).
  if (mode_ != NumericsMode::kAdaptive || m >= kernels::kAdaptiveSplitRows) {
    kernels::MatMulGroup(ws.begin(), static_cast<int>(ws.size()), x, m, ys.begin(), pool_, isa_);
    return;
  }
  for (size_t j = 0; j < ws.size(); ++j) MatMul(*ws.begin()[j], x, m, ys.begin()[j]);
}

bool Forward::Refined(const kernels::WeightView& w) const {
  return mode_ == NumericsMode::kInvariant && kernels::ActQuantBlock(w.type) > 0;
}

namespace {

// Precise mode's weight tiles: kPreciseTile rows of a quantized matrix,
// dequantized exactly to f32 per call (per thread), then the float kernel.
constexpr int64_t kPreciseTile = 32;
thread_local std::vector<float> tls_tile_w, tls_tile_y;

}  // namespace

// Float activations against the exactly dequantized weights: each output is
// the float kernel's canonical 8-lane dot over K, whatever the tiling.
void Forward::MatMulPrecise(const kernels::WeightView& w, const float* x, int64_t m, float* y) {
  const int64_t k = w.cols, n = w.rows, tiles = (n + kPreciseTile - 1) / kPreciseTile;
  auto run = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = t * kPreciseTile, rows = std::min(kPreciseTile, n - r0);
      Grow(tls_tile_w, rows * k);
      Grow(tls_tile_y, m * rows);
      for (int64_t r = 0; r < rows; ++r) {
        const auto* src = static_cast<const uint8_t*>(w.data) + (r0 + r) * w.row_bytes;
        STET_CHECK(DequantizeRow(w.type, src, k, &tls_tile_w[r * k]).ok());
      }
      const kernels::WeightView tile{
          DType::kF32, rows, k, tls_tile_w.data(), k * static_cast<int64_t>(sizeof(float)),
          nullptr};
      kernels::MatMul(tile, x, m, tls_tile_y.data(), nullptr, isa_);
      for (int64_t i = 0; i < m; ++i)
        std::copy(&tls_tile_y[i * rows], &tls_tile_y[(i + 1) * rows], y + i * n + r0);
    }
  };
  if (pool_ == nullptr || pool_->size() == 1) return run(0, tiles);
  pool_->ParallelFor(tiles, 1, run);
}

void Forward::MatMul(const kernels::WeightView& w, const float* x, int64_t m, float* y) {
  if (mode_ == NumericsMode::kPrecise && kernels::ActQuantBlock(w.type) > 0) {
    MatMulPrecise(w, x, m, y);
  } else if (mode_ == NumericsMode::kAdaptive) {
    kernels::MatMulAdaptive(w, x, m, y, pool_, isa_);
  } else if (Refined(w)) {
    const kernels::WeightView* ws[1] = {&w};
    kernels::MatMulGroupRefined(ws, 1, x, m, &y, pool_, isa_);
  } else {
    kernels::MatMul(w, x, m, y, pool_, isa_);
  }
}

void Forward::QueriesOf(int c, int* h0, int* h1) const {
  *h0 = std::max(q0_, (kv0_ + c) * group_) - q0_;
  *h1 = std::min(q0_ + nq_, (kv0_ + c + 1) * group_) - q0_;
}

void Forward::Attention(const std::vector<BatchToken>& batch, int layer, KvStore& kv, float* out) {
  const HParams& hp = model_.hparams();
  const int64_t m = static_cast<int64_t>(batch.size());
  const float scale = hp.attn_scale;
  const int window = hp.IsSwa(layer) ? hp.n_swa : 0;
  // (Heads are this rank's: local query heads 0..nq_-1, local KV heads
  // 0..nkv_-1; one process holds them all.) Two queries over the same K/V rows
  // per task where possible (AttendHeadPair
  // shares each K/V load; its results are those of two AttendHead calls):
  // consecutive tokens of one sequence, head by head; a lone token (decode)
  // pairs the heads of each KV group instead (or takes the group whole, below).
  // Tokens pair only while both
  // windows start at 0 (a pair reads the same K/V rows).
  // Runs of 2+ tokens of one sequence go as tiles of up to tile_tokens tokens x
  // the heads of a KV group (one pass over that group's K/V for all of them:
  // prefill at depth reads the context once per tile, not once per pair).
  const int tile_tokens = std::min(8, kernels::kMaxAttendQueries / group_);
  // A lone token's KV groups of 3+ heads go whole (a tile of one token: K/V
  // read once, not once per pair: ~2/3 of the pairs' time at long context)
  // where every thread gets a group and its window starts at 0 (as every
  // tile's); else in pairs, so that one group still spreads over the threads.
  const int threads = pool_ != nullptr ? pool_->size() : 1;
  if (m == 1 && AttendSplit(batch[0], layer, kv, out)) return;
  const bool whole_groups = group_ > 2 && nkv_ >= threads;
  attn_tasks_.clear();
  for (int64_t i = 0; i < m; ++i) {
    int64_t run = 1;
    while (run < tile_tokens && i + run < m && batch[i + run].seq == batch[i].seq &&
           WindowStart(batch[i + run].pos, window) == 0) {
      ++run;
    }
    if (run >= 2) {
      for (int c = 0; c < nkv_; ++c) attn_tasks_.push_back({i, -1, c, -1, static_cast<int>(run)});
      i += run - 1;
      continue;
    }
    if (i + 1 < m && batch[i + 1].seq == batch[i].seq &&
        WindowStart(batch[i + 1].pos, window) == 0) {
      for (int h = 0; h < nq_; ++h) attn_tasks_.push_back({i, i + 1, h, h});
      ++i;
      continue;
    }
    for (int c = 0; c < nkv_; ++c) {
      if (whole_groups && WindowStart(batch[i].pos, window) == 0) {  // one pass for all its heads
        attn_tasks_.push_back({i, -1, c, -1, 1});
        continue;
      }
      int h, h_end;
      QueriesOf(c, &h, &h_end);
      for (; h + 1 < h_end; h += 2) attn_tasks_.push_back({i, i, h, h + 1});
      if (h < h_end) attn_tasks_.push_back({i, -1, h, -1});
    }
  }
  const int64_t n_tasks = static_cast<int64_t>(attn_tasks_.size());
  // Threads claim runs of tasks as they go (causal prefill makes later queries
  // longer, so fixed ranges would leave a thread idle). Which thread runs a
  // task never changes its result.
  auto work = [&](int64_t task0, int64_t task1, int thread) {
    std::vector<float>& scratch = scratch_[thread];
    for (int64_t task = task0; task < task1; ++task) {
      const AttnTask& at = attn_tasks_[task];
      if (at.n_tok > 0) {
        AttendTile(batch, at, layer, kv, out, scratch);
        continue;
      }
      const BatchToken& t = batch[at.i0];
      const int kvh = KvOf(at.h0);
      // A pair shares its first position: the same token, or two tokens whose
      // windows both start at 0 (see the task list above).
      const int64_t start = WindowStart(t.pos, window);
      const int64_t n_kv = t.pos + 1 - start;
      const int64_t n_kv1 = at.i1 >= 0 ? batch[at.i1].pos + 1 - start : 0;
      Grow(scratch, 2 * std::max(n_kv, n_kv1) + 2 * hp.head_dim);
      // A windowed layer reads its window in place: position 0 of the view is `start`.
      const kernels::KvRows kh = kv.KRows(layer, t.seq, kvh).From(start);
      const kernels::KvRows vh = kv.VRows(layer, t.seq, kvh).From(start);
      float* out0 = &out[at.i0 * q_dim_ + at.h0 * hp.head_dim];
      const float* q0 = &q_[at.i0 * q_dim_ + at.h0 * hp.head_dim];
      if (at.i1 >= 0) {
        float* out1 = &out[at.i1 * q_dim_ + at.h1 * hp.head_dim];
        const float* q1 = &q_[at.i1 * q_dim_ + at.h1 * hp.head_dim];
        kernels::AttendHeadPair(q0, q1, kh, vh, kv.type(), n_kv, n_kv1, hp.head_dim, scale,
                                hp.attn_softcap, out0, out1, scratch.data(), isa_);
      } else {
        kernels::AttendHead(q0, kh, vh, kv.type(), n_kv, hp.head_dim, scale, hp.attn_softcap, out0,
                            scratch.data(), isa_);
      }
    }
  };
  if (pool_) {
    pool_->ParallelFor(n_tasks, 1, work);
  } else {
    work(0, n_tasks, 0);
  }
}

bool Forward::AttendSplit(const BatchToken& t, int layer, KvStore& kv, float* out) {
  const HParams& hp = model_.hparams();
  const int window = hp.IsSwa(layer) ? hp.n_swa : 0;
  const int64_t start = WindowStart(t.pos, window), n = t.pos + 1 - start;
  const int hd = hp.head_dim;
  // Taken where the pairs would leave each thread reading the whole context
  // (fewer KV heads than threads) and the context is long enough for three
  // short parallel steps to beat one long one (kSplitMinKv: measured, Gemma 3
  // on 2 threads); only where the steps have SIMD kernels.
  constexpr int64_t kSplitMinKv = 256, kPosChunk = 256;
  constexpr int kDimChunk = 64;
  if (pool_ == nullptr || nkv_ >= pool_->size() || group_ < 2 || n < kSplitMinKv ||
      nq_ > kernels::kMaxAttendQueries || !kernels::AttendStepsHaveSimd(isa_, hd)) {
    return false;
  }
  split_s_.resize(static_cast<size_t>(nq_ * n));
  split_den_.resize(static_cast<size_t>(nq_));
  const float* qs[kernels::kMaxAttendQueries];
  float* ss[kernels::kMaxAttendQueries];
  float* outs[kernels::kMaxAttendQueries];
  for (int h = 0; h < nq_; ++h) {
    qs[h] = &q_[h * hd];
    ss[h] = &split_s_[h * n];
    outs[h] = &out[h * hd];
  }
  const int64_t pos_chunks = (n + kPosChunk - 1) / kPosChunk;
  pool_->ParallelFor(nkv_ * pos_chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t task = b; task < e; ++task) {
      const int c = static_cast<int>(task / pos_chunks);
      const int64_t t0 = task % pos_chunks * kPosChunk, t1 = std::min(n, t0 + kPosChunk);
      int h0, h1;
      QueriesOf(c, &h0, &h1);
      kernels::AttendScores(qs + h0, h1 - h0, kv.KRows(layer, t.seq, c).From(start), kv.type(), t0,
                            t1, hd, hp.attn_scale, ss + h0, isa_);
    }
  });
  pool_->ParallelFor(nq_, 1, [&](int64_t b, int64_t e) {
    for (int64_t h = b; h < e; ++h)
      split_den_[h] = kernels::AttendSoftmax(ss[h], n, hp.attn_softcap, isa_);
  });
  const int dim_chunks = (hd + kDimChunk - 1) / kDimChunk;
  pool_->ParallelFor(nkv_ * dim_chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t task = b; task < e; ++task) {
      const int c = static_cast<int>(task / dim_chunks);
      const int j0 = static_cast<int>(task % dim_chunks) * kDimChunk;
      int h0, h1;
      QueriesOf(c, &h0, &h1);
      kernels::AttendValues(ss + h0, &split_den_[h0], h1 - h0,
                            kv.VRows(layer, t.seq, c).From(start), kv.type(), n, j0,
                            std::min(hd, j0 + kDimChunk), hd, outs + h0, isa_);
    }
  });
  return true;
}

void Forward::AttendTile(const std::vector<BatchToken>& batch, const AttnTask& at, int layer,
                         KvStore& kv, float* out, std::vector<float>& scratch) {
  const HParams& hp = model_.hparams();
  int h0, h1;  // the local query heads of local KV head at.h0
  QueriesOf(at.h0, &h0, &h1);
  const int heads = h1 - h0;
  const int nq = at.n_tok * heads;
  const float* qs[kernels::kMaxAttendQueries];
  float* outs[kernels::kMaxAttendQueries];
  int64_t n_kv[kernels::kMaxAttendQueries];
  for (int j = 0; j < at.n_tok; ++j) {
    const int64_t row = at.i0 + j;
    for (int g = 0; g < heads; ++g) {
      const int idx = j * heads + g;
      const int64_t off = row * q_dim_ + (h0 + g) * hp.head_dim;
      qs[idx] = &q_[off];
      outs[idx] = &out[off];
      n_kv[idx] = batch[row].pos + 1;  // every window of a tile starts at 0
    }
  }
  const int64_t n_max = *std::max_element(n_kv, n_kv + nq);
  Grow(scratch, kernels::AttendHeadsScratch(nq, n_max, hp.head_dim));
  const auto seq = batch[at.i0].seq;
  const kernels::KvRows kh = kv.KRows(layer, seq, at.h0);
  const kernels::KvRows vh = kv.VRows(layer, seq, at.h0);
  kernels::AttendHeads(qs, n_kv, nq, kh, vh, kv.type(), hp.head_dim, hp.attn_scale, hp.attn_softcap,
                       outs, scratch.data(), isa_);
}

}  // namespace stet

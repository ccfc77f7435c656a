#include "model/model.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/cpu_features.h"
#include "base/hash.h"
#include "base/progress.h"
#include "numerics/dequant.h"
#include "numerics/half.h"
#include "numerics/rope_table.h"

namespace stet {

namespace {

std::string DimsString(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// Finds a tensor and checks its dims (innermost first, as GGUF stores them).
Result<const gguf::TensorInfo*> Find(const gguf::GgufFile& f, const std::string& name,
                                     std::vector<int64_t> dims, bool required = true) {
  const gguf::TensorInfo* t = f.FindTensor(name);
  if (!t) {
    if (!required) return static_cast<const gguf::TensorInfo*>(nullptr);
    return DataLoss("model lacks tensor '" + name + "'");
  }
  if (t->dims != dims) {
    return DataLoss("tensor '" + name + "' has shape " + DimsString(t->dims) + ", expected " +
                    DimsString(dims));
  }
  if (!DTypeSupported(t->type)) {
    return Unimplemented("tensor '" + name + "' has type " + DTypeName(t->type) +
                         ", which stet cannot compute with (supported: " + SupportedDTypeList() +
                         ")");
  }
  return t;
}

// The rows `rows` of a [total_rows, cols] matrix (a shard's share, or all of
// it): a view of just those bytes, mapped on demand for a header-only file.
Result<kernels::WeightView> Matrix(gguf::GgufFile& f, const std::string& name, int64_t total_rows,
                                   int64_t cols, RowSpan rows) {
  STET_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, Find(f, name, {cols, total_rows}));
  kernels::WeightView w;
  w.type = t->type;
  w.rows = rows.size();
  w.cols = cols;
  w.row_bytes = RowBytes(t->type, cols);
  STET_ASSIGN_OR_RETURN(w.data, f.TensorBytes(*t, rows.begin * w.row_bytes, w.rows * w.row_bytes));
  return w;
}

// Small vectors (norms, biases) are converted to float once at load: all n
// elements, or the span `part` of them (a shard's biases).
Result<std::vector<float>> Vector(gguf::GgufFile& f, const std::string& name, int64_t n,
                                  bool required = true, RowSpan part = {}) {
  STET_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, Find(f, name, {n}, required));
  std::vector<float> v;
  if (!t) return v;
  v.resize(n);
  STET_ASSIGN_OR_RETURN(const uint8_t* bytes, f.TensorBytes(*t, 0, t->size_bytes));
  STET_RETURN_IF_ERROR(DequantizeRow(t->type, bytes, n, v.data()));
  if (part.size() > 0) v = std::vector<float>(v.begin() + part.begin, v.begin() + part.end);
  return v;
}

// Spans of heads as spans of rows (head_dim rows per head), from row `base` on.
RowSpan HeadRows(RowSpan heads, int64_t head_dim, int64_t base = 0) {
  return {base + heads.begin * head_dim, base + heads.end * head_dim};
}

// q, k and v: three tensors, or one fused attn_qkv [q_dim + 2 kv_dim, n_embd]
// (Phi-3 and others) read as three row ranges; each the shard's heads only.
Status LoadQkv(gguf::GgufFile& f, const HParams& hp, const Shard& sh, const std::string& b,
               LayerWeights& L) {
  const RowSpan q = HeadRows(sh.my_q_heads(), hp.head_dim);
  const RowSpan kv = HeadRows(sh.my_kv_heads(), hp.head_dim);
  if (f.FindTensor(b + "attn_qkv.weight")) {
    const std::string name = b + "attn_qkv.weight";
    const int64_t rows = hp.q_dim() + 2 * hp.kv_dim();
    STET_ASSIGN_OR_RETURN(L.wq, Matrix(f, name, rows, hp.n_embd, q));
    STET_ASSIGN_OR_RETURN(L.wk, Matrix(f, name, rows, hp.n_embd,
                                       HeadRows(sh.my_kv_heads(), hp.head_dim, hp.q_dim())));
    STET_ASSIGN_OR_RETURN(
        L.wv, Matrix(f, name, rows, hp.n_embd,
                     HeadRows(sh.my_kv_heads(), hp.head_dim, hp.q_dim() + hp.kv_dim())));
    return Status::Ok();
  }
  STET_ASSIGN_OR_RETURN(L.wq, Matrix(f, b + "attn_q.weight", hp.q_dim(), hp.n_embd, q));
  STET_ASSIGN_OR_RETURN(L.wk, Matrix(f, b + "attn_k.weight", hp.kv_dim(), hp.n_embd, kv));
  STET_ASSIGN_OR_RETURN(L.wv, Matrix(f, b + "attn_v.weight", hp.kv_dim(), hp.n_embd, kv));
  return Status::Ok();
}

// Expert e of a 3-D tensor [n_expert][rows][cols] (GGUF dims {cols, rows,
// n_expert}), one WeightView per expert, each holding the rows `part`.
Result<std::vector<kernels::WeightView>> Experts(gguf::GgufFile& f, const std::string& name,
                                                 int64_t n_expert, int64_t rows, int64_t cols,
                                                 RowSpan part) {
  STET_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, Find(f, name, {cols, rows, n_expert}));
  std::vector<kernels::WeightView> out(n_expert);
  for (int64_t e = 0; e < n_expert; ++e) {
    kernels::WeightView& w = out[e];
    w.type = t->type;
    w.rows = part.size();
    w.cols = cols;
    w.row_bytes = RowBytes(t->type, cols);
    STET_ASSIGN_OR_RETURN(
        w.data, f.TensorBytes(*t, (e * rows + part.begin) * w.row_bytes, w.rows * w.row_bytes));
  }
  return out;
}

// Every matrix of a layer (each expert's too), for byte counts, page touching and packing.
std::vector<kernels::WeightView*> LayerMatrices(LayerWeights& L) {
  std::vector<kernels::WeightView*> v = {&L.wq, &L.wk, &L.wv, &L.wo};
  if (L.gate_exps.empty()) {
    for (auto* w : {&L.w_gate, &L.w_up, &L.w_down}) v.push_back(w);
    return v;
  }
  v.push_back(&L.router);
  for (auto* exps : {&L.gate_exps, &L.up_exps, &L.down_exps}) {
    for (kernels::WeightView& w : *exps) v.push_back(&w);
  }
  return v;
}

// Reads a layer's FFN: dense gate/up/down, or (MoE) the router and the
// experts; gate/up the shard's FFN rows, down its embedding rows, the router whole.
Status LoadFfn(gguf::GgufFile& f, const HParams& hp, const Shard& sh, const std::string& b,
               LayerWeights& L) {
  const RowSpan ff = sh.my_ff(), embd = sh.my_embd();
  if (hp.arch->fused_gate_up) {
    const std::string up = b + "ffn_up.weight";
    STET_ASSIGN_OR_RETURN(L.w_gate, Matrix(f, up, 2 * int64_t{hp.n_ff}, hp.n_embd, ff));
    STET_ASSIGN_OR_RETURN(L.w_up, Matrix(f, up, 2 * int64_t{hp.n_ff}, hp.n_embd,
                                         {hp.n_ff + ff.begin, hp.n_ff + ff.end}));
    STET_ASSIGN_OR_RETURN(L.w_down, Matrix(f, b + "ffn_down.weight", hp.n_embd, hp.n_ff, embd));
    return Status::Ok();
  }
  if (!hp.arch->moe) {
    STET_ASSIGN_OR_RETURN(L.w_gate, Matrix(f, b + "ffn_gate.weight", hp.n_ff, hp.n_embd, ff));
    STET_ASSIGN_OR_RETURN(L.w_up, Matrix(f, b + "ffn_up.weight", hp.n_ff, hp.n_embd, ff));
    STET_ASSIGN_OR_RETURN(L.w_down, Matrix(f, b + "ffn_down.weight", hp.n_embd, hp.n_ff, embd));
    return Status::Ok();
  }
  STET_ASSIGN_OR_RETURN(
      L.router, Matrix(f, b + "ffn_gate_inp.weight", hp.n_expert, hp.n_embd, {0, hp.n_expert}));
  STET_ASSIGN_OR_RETURN(
      L.gate_exps, Experts(f, b + "ffn_gate_exps.weight", hp.n_expert, hp.n_ff, hp.n_embd, ff));
  STET_ASSIGN_OR_RETURN(L.up_exps,
                        Experts(f, b + "ffn_up_exps.weight", hp.n_expert, hp.n_ff, hp.n_embd, ff));
  STET_ASSIGN_OR_RETURN(
      L.down_exps, Experts(f, b + "ffn_down_exps.weight", hp.n_expert, hp.n_embd, hp.n_ff, embd));
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, bool progress) {
  STET_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::Open(path));
  return FromGguf(std::move(file), progress);
}

Result<std::unique_ptr<Model>> Model::LoadShard(const std::string& path, int rank, int n_ranks,
                                                bool progress) {
  if (n_ranks == 1 && rank == 0) return Load(path, progress);
  STET_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::OpenHeader(path));
  return FromGguf(std::move(file), progress, rank, n_ranks);
}

Result<std::unique_ptr<Model>> Model::FromGguf(std::unique_ptr<gguf::GgufFile> file, bool progress,
                                               int rank, int n_ranks) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  STET_ASSIGN_OR_RETURN(m->hp_, ReadHParams(*m->file_));
  STET_RETURN_IF_ERROR(m->LoadWeights(progress, rank, n_ranks));
  return m;
}

Status Model::LoadWeights(bool progress, int rank, int n_ranks) {
  gguf::GgufFile& f = *file_;
  HParams& hp = hp_;
  const gguf::TensorInfo* embd = f.FindTensor("token_embd.weight");
  if (!embd) return DataLoss("model lacks tensor 'token_embd.weight'");
  if (embd->dims.size() != 2 || embd->dims[0] != hp.n_embd || embd->dims[1] <= 0 ||
      embd->dims[1] > (1 << 24)) {
    return DataLoss("tensor 'token_embd.weight' has shape " + DimsString(embd->dims) +
                    ", expected [" + std::to_string(hp.n_embd) + ", n_vocab]");
  }
  hp.n_vocab = static_cast<int>(embd->dims[1]);
  STET_ASSIGN_OR_RETURN(shard_, PlanShard(hp, rank, n_ranks));
  const Shard& sh = shard_;
  STET_ASSIGN_OR_RETURN(w_.token_embd,
                        Matrix(f, "token_embd.weight", hp.n_vocab, hp.n_embd, sh.my_vocab()));
  STET_RETURN_IF_ERROR(LoadVector("output_norm.weight", hp.n_embd, &w_.output_norm));
  if (f.FindTensor("output.weight")) {
    STET_ASSIGN_OR_RETURN(w_.output,
                          Matrix(f, "output.weight", hp.n_vocab, hp.n_embd, sh.my_vocab()));
  } else {
    w_.output = w_.token_embd;
    w_.tied_output = true;
  }
  if (f.FindTensor("rope_factors_long.weight") || f.FindTensor("rope_factors_short.weight")) {
    return Unimplemented(
        "LongRoPE (rope_factors_long/short tensors, e.g. Phi-3 128k) is not supported; "
        "the 4k-context variants run");
  }
  STET_RETURN_IF_ERROR(
      LoadVector("rope_freqs.weight", hp.rot_dim / 2, &w_.rope_freq_factors, /*required=*/false));

  {
    RopeScaling scaling;
    if (hp.rope_linear_factor != 1.0) {
      scaling.kind = RopeScaling::Kind::kLinear;
      scaling.factor = hp.rope_linear_factor;
    }
    const auto& ff = w_.rope_freq_factors;
    STET_RETURN_IF_ERROR(ValidateRope(hp.rot_dim, hp.rope_base, scaling,
                                      ff.empty() ? nullptr : ff.data(), hp.n_ctx_train));
    if (hp.n_swa > 0) {
      STET_RETURN_IF_ERROR(
          ValidateRope(hp.rot_dim, hp.rope_base_swa, RopeScaling{}, nullptr, hp.n_ctx_train));
    }
  }

  ProgressBar bar("loading", hp.n_layer);
  w_.layers.resize(hp.n_layer);
  for (int l = 0; l < hp.n_layer; ++l) {
    if (progress) bar.Update(l);
    LayerWeights& L = w_.layers[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    STET_RETURN_IF_ERROR(LoadVector(b + "attn_norm.weight", hp.n_embd, &L.attn_norm));
    STET_RETURN_IF_ERROR(LoadQkv(f, hp, sh, b, L));
    STET_ASSIGN_OR_RETURN(L.wo,
                          Matrix(f, b + "attn_output.weight", hp.n_embd, hp.q_dim(), sh.my_embd()));
    if (hp.arch->qkv_bias) {
      const RowSpan q = HeadRows(sh.my_q_heads(), hp.head_dim);
      const RowSpan kv = HeadRows(sh.my_kv_heads(), hp.head_dim);
      STET_RETURN_IF_ERROR(LoadVector(b + "attn_q.bias", hp.q_dim(), &L.bq, true, q));
      STET_RETURN_IF_ERROR(LoadVector(b + "attn_k.bias", hp.kv_dim(), &L.bk, true, kv));
      STET_RETURN_IF_ERROR(LoadVector(b + "attn_v.bias", hp.kv_dim(), &L.bv, true, kv));
    }
    if (hp.arch->qk_norm) {
      STET_RETURN_IF_ERROR(LoadVector(b + "attn_q_norm.weight", hp.head_dim, &L.q_norm));
      STET_RETURN_IF_ERROR(LoadVector(b + "attn_k_norm.weight", hp.head_dim, &L.k_norm));
    }
    STET_RETURN_IF_ERROR(LoadVector(b + "ffn_norm.weight", hp.n_embd, &L.ffn_norm));
    if (hp.arch->post_norms) {
      STET_RETURN_IF_ERROR(
          LoadVector(b + "post_attention_norm.weight", hp.n_embd, &L.attn_post_norm));
      STET_RETURN_IF_ERROR(LoadVector(b + "post_ffw_norm.weight", hp.n_embd, &L.ffn_post_norm));
    }
    STET_RETURN_IF_ERROR(LoadFfn(f, hp, sh, b, L));
    // Per decoded token a MoE layer reads its router and expert_used_count experts.
    const std::vector<kernels::WeightView*> mats = LayerMatrices(L);
    for (const auto* w : mats) {
      const bool expert =
          hp.arch->moe && w != &L.router && w != &L.wq && w != &L.wk && w != &L.wv && w != &L.wo;
      const int64_t bytes = w->rows * w->row_bytes;
      weight_bytes_ += expert ? bytes * hp.n_expert_used / hp.n_expert : bytes;
    }
    // Touch the mapped pages now so the first request does not pay for page faults.
    for (const auto* w : mats) {
      const volatile uint8_t* p = static_cast<const uint8_t*>(w->data);
      const int64_t n = w->rows * w->row_bytes;
      uint8_t sink = 0;
      for (int64_t i = 0; i < n; i += 4096) sink ^= p[i];
      (void)sink;
    }
  }
  bar.Finish();
  weight_bytes_ += w_.output.rows * w_.output.row_bytes;
  PackWeights();
  return Status::Ok();
}

void Model::FreeDeleter::operator()(void* p) const { std::free(p); }

Status Model::LoadVector(const std::string& name, int64_t n, std::vector<float>* dst, bool required,
                         RowSpan part) {
  STET_ASSIGN_OR_RETURN(*dst, Vector(*file_, name, n, required, part));
  if (!dst->empty() && part.size() == 0) vectors_[name] = dst;
  return Status::Ok();
}

namespace {

// `n` values of `in` as `out` bytes: a copy when the types agree; f32 values
// into f16/bf16 only when each converts back to itself (nothing is rounded).
Status ConvertExactly(const std::string& name, DType in, const void* src, DType out, int64_t n,
                      uint8_t* dst) {
  if (in == out) {
    std::memcpy(dst, src, static_cast<size_t>(RowBytes(out, n)));
    return Status::Ok();
  }
  if (in != DType::kF32 || (out != DType::kF16 && out != DType::kBF16)) {
    return InvalidArgument("tensor '" + name + "' is " + DTypeName(out) + ": give " +
                           DTypeName(out) + " values (or f32 values it holds exactly), not " +
                           DTypeName(in));
  }
  const float* x = static_cast<const float*>(src);
  auto* h = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    h[i] = out == DType::kF16 ? F32ToF16(x[i]) : F32ToBF16(x[i]);
    const float back = out == DType::kF16 ? F16ToF32(h[i]) : BF16ToF32(h[i]);
    if (FloatBits(back) != FloatBits(x[i])) {
      return InvalidArgument("tensor '" + name + "' is " + DTypeName(out) + " and value " +
                             std::to_string(i) + " (" + std::to_string(x[i]) +
                             ") is not one: stet does not round weights; convert them first");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<uint8_t, Model::FreeDeleter>> Model::NewValues(const TensorValues& v) const {
  const gguf::TensorInfo* t = file_->FindTensor(v.name);
  if (t == nullptr) return NotFound("the model has no tensor '" + v.name + "'");
  if (v.name == "rope_freqs.weight")
    return InvalidArgument(
        "'rope_freqs.weight' sets the positions' rotation, not a trained weight");
  if (t->type != DType::kF32 && t->type != DType::kF16 && t->type != DType::kBF16) {
    return InvalidArgument("tensor '" + v.name + "' is " + DTypeName(t->type) +
                           ": only f32, f16 and bf16 weights can be replaced (stet does not "
                           "re-quantize)");
  }
  if (v.count != t->n_elements) {
    return InvalidArgument("tensor '" + v.name + "' has " + std::to_string(t->n_elements) +
                           " values (shape " + DimsString(t->dims) + "), not " +
                           std::to_string(v.count));
  }
  std::unique_ptr<uint8_t, FreeDeleter> buf(static_cast<uint8_t*>(
      std::aligned_alloc(64, static_cast<size_t>((t->size_bytes + 63) / 64 * 64))));
  if (!buf) return ResourceExhausted("no memory for tensor '" + v.name + "'");
  STET_RETURN_IF_ERROR(ConvertExactly(v.name, v.type, v.data, t->type, t->n_elements, buf.get()));
  return buf;
}

Status Model::ReplaceTensors(const std::vector<TensorValues>& values) {
  if (shard_.n_ranks > 1)  // each rank maps only its rows, and the workers would need them too
    return Unimplemented("weights cannot be replaced in a tensor-parallel group (" +
                         std::to_string(shard_.n_ranks) + " ranks); run one process");
  // All converted first: a refusal leaves every weight as it was.
  std::vector<std::unique_ptr<uint8_t, FreeDeleter>> bufs;
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (values[j].name == values[i].name)
        return InvalidArgument("tensor '" + values[i].name + "' is given twice");
    }
    STET_ASSIGN_OR_RETURN(auto buf, NewValues(values[i]));
    bufs.push_back(std::move(buf));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    STET_RETURN_IF_ERROR(Retarget(values[i].name, bufs[i].get()));
    borrowed_.erase(values[i].name);
    replaced_[values[i].name] = std::move(bufs[i]);
  }
  UpdateDigest(values);
  return Status::Ok();
}

void Model::MapViews() {
  std::vector<kernels::WeightView*> views = {&w_.token_embd, &w_.output};
  for (LayerWeights& L : w_.layers) {
    for (kernels::WeightView* w : LayerMatrices(L)) views.push_back(w);
  }
  // Before any replacement every view lies in the mapped file: in exactly one
  // tensor's bytes. Kept by tensor name, so later moves never guess by address
  // (borrowed memory may be freed and reused for another tensor).
  for (kernels::WeightView* w : views) {
    const auto* d = static_cast<const uint8_t*>(w->data);
    for (const gguf::TensorInfo& t : file_->tensors()) {
      if (d >= t.data && d < t.data + t.size_bytes) {
        views_of_[t.name].push_back({w, d - t.data});
        break;
      }
    }
  }
  views_mapped_ = true;
}

// Points every view into tensor `name` (fused q/k/v, experts, a tied output)
// at `bytes`, makes its packed copies again in place and refreshes its float copy.
Status Model::Retarget(const std::string& name, const uint8_t* bytes) {
  if (!views_mapped_) MapViews();
  const gguf::TensorInfo& t = *file_->FindTensor(name);
  for (const auto& [w, offset] : views_of_[name]) {
    w->data = bytes + offset;
    if (w->packed) kernels::PackWeights(*w, const_cast<void*>(w->packed));
  }
  if (auto v = vectors_.find(name); v != vectors_.end())
    STET_RETURN_IF_ERROR(DequantizeRow(t.type, bytes, t.n_elements, v->second->data()));
  return Status::Ok();
}

Status Model::BorrowTensors(const std::vector<TensorValues>& values) {
  if (shard_.n_ranks > 1)
    return Unimplemented("weights cannot be borrowed in a tensor-parallel group");
  for (size_t i = 0; i < values.size(); ++i) {
    const TensorValues& v = values[i];
    for (size_t j = 0; j < i; ++j) {
      if (values[j].name == v.name)
        return InvalidArgument("tensor '" + v.name + "' is given twice");
    }
    const gguf::TensorInfo* t = file_->FindTensor(v.name);
    if (t == nullptr) return NotFound("the model has no tensor '" + v.name + "'");
    if (v.name == "rope_freqs.weight")
      return InvalidArgument(
          "'rope_freqs.weight' sets the positions' rotation, not a trained weight");
    if (v.type != t->type ||
        (t->type != DType::kF32 && t->type != DType::kF16 && t->type != DType::kBF16)) {
      return InvalidArgument("tensor '" + v.name + "' is " + DTypeName(t->type) +
                             ": borrowed memory must hold values of that type (" +
                             DTypeName(v.type) + " given; float tensors only)");
    }
    if (v.count != t->n_elements || v.data == nullptr) {
      return InvalidArgument("tensor '" + v.name + "' has " + std::to_string(t->n_elements) +
                             " values, not " + std::to_string(v.count));
    }
  }
  for (const TensorValues& v : values) {
    STET_RETURN_IF_ERROR(Retarget(v.name, static_cast<const uint8_t*>(v.data)));
    replaced_.erase(v.name);
    borrowed_.insert(v.name);
  }
  // Borrowed bytes change behind the model's back: no digest can name them.
  digest_ = "borrowed";
  return Status::Ok();
}

void Model::UpdateDigest(const std::vector<TensorValues>& replaced) {
  if (!borrowed_.empty()) {
    digest_ = "borrowed";
    return;
  }
  if (file_sha_.empty()) {  // once: what the file holds
    for (const gguf::TensorInfo& t : file_->tensors())
      file_sha_[t.name] = current_sha_[t.name] = Sha256Hex(t.data, t.size_bytes);
  }
  for (const TensorValues& v : replaced)
    current_sha_[v.name] =
        Sha256Hex(replaced_.at(v.name).get(), file_->FindTensor(v.name)->size_bytes);
  if (current_sha_ == file_sha_) {
    digest_.clear();
    return;
  }
  std::string all;
  for (const gguf::TensorInfo& t : file_->tensors())
    all += t.name + ":" + current_sha_[t.name] + "\n";
  digest_ = Sha256Hex(all.data(), all.size());
}

void Model::PackWeights() {
  // Only types whose packed copy this CPU's fast path reads; elsewhere it would
  // be dead weight. STET_NO_PACK=1 keeps the mapped file as the only copy.
  if (std::getenv("STET_NO_PACK") != nullptr) return;
  std::vector<kernels::WeightView*> views;
  for (LayerWeights& L : w_.layers) {
    for (kernels::WeightView* w : LayerMatrices(L)) views.push_back(w);
  }
  views.push_back(&w_.output);
  // One arena for every packed copy, in 2 MiB pages where the kernel gives them
  // (transparent huge pages on request): decode streams the whole arena once per
  // token, and with 4 KiB pages every 4 KiB of it costs a TLB miss (a two-level
  // page walk in a VM). Each copy starts on a 64-byte line.
  std::vector<std::pair<kernels::WeightView*, int64_t>> packs;  // view, padded bytes
  int64_t total = 0;
  for (kernels::WeightView* w : views) {
    const int64_t bytes = kernels::PackedBytes(*w);
    if (bytes == 0 || !kernels::PackedLayoutUsed(w->type)) continue;
    packs.emplace_back(w, (bytes + 63) / 64 * 64);
    total += packs.back().second;
    packed_bytes_ += bytes;
  }
  if (total == 0) return;
  constexpr int64_t kHuge = int64_t{2} << 20;
  const int64_t arena_bytes = (total + kHuge - 1) / kHuge * kHuge;
  packed_arena_.reset(
      static_cast<uint8_t*>(std::aligned_alloc(kHuge, static_cast<size_t>(arena_bytes))));
  if (!packed_arena_) {  // out of memory: the unpacked path still works
    packed_bytes_ = 0;
    return;
  }
#ifdef MADV_HUGEPAGE
  madvise(packed_arena_.get(), static_cast<size_t>(arena_bytes), MADV_HUGEPAGE);  // advice only
#endif
  uint8_t* next = packed_arena_.get();
  for (const auto& [w, padded] : packs) {
    kernels::PackWeights(*w, next);
    w->packed = next;
    next += padded;
  }
}

}  // namespace stet

// _core.Policy (policy.h): the engine's Forward over a Model whose float
// tensors are borrowed from caller memory (Model::BorrowTensors: no copy), a
// KV store of the engine's type, and the sampler's LogSoftmaxAt. Invariant:
// the logits of a token are the ones LLM.generate computes for the same
// weights, tokens and numerics — the same kernels, and they are
// batch-invariant (R1–R3), so the batch shape, the chunking and the padding
// the caller chose cannot change a bit.
#include "python/src/policy.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "base/thread_pool.h"
#include "engine/sampler.h"
#include "model/forward.h"
#include "model/paged_kv.h"
#include "numerics/rope_table.h"
#include "tools/common.h"
#include "tools/model_catalog.h"

namespace nb = nanobind;
using namespace nb::literals;  // NOLINT

namespace stet::python {
namespace {

using I32 = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I64 = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using F32Rows = nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using F32 = nb::ndarray<float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// Tokens per Forward::Run: bounds the workspace; the kernels are invariant to
// where a batch is cut, so the logits do not depend on it.
constexpr int64_t kRunTokens = 512;

struct PolicyOptions {
  std::string model;
  int threads = 0;
  int max_model_len = 4096;
  std::string kv_cache_dtype = "auto";
  std::string numerics = "invariant";
  std::string isa = "auto";
};

class Policy {
 public:
  // Loads the model (no Python involved: called without the GIL).
  static Result<std::unique_ptr<Policy>> Create(const PolicyOptions& o) {
    auto p = std::unique_ptr<Policy>(new Policy);
    STET_RETURN_IF_ERROR(p->Init(o));
    return p;
  }

  const HParams& hp() const { return model_->hparams(); }
  const Model& model() const { return *model_; }
  Isa isa() const { return isa_; }
  int max_ctx() const { return max_ctx_; }
  std::string kv_type() const { return DTypeName(kv_type_); }

  // The model reads these arrays from now on (each one a whole float tensor in
  // its own type); the caller keeps them alive (the Python Policy holds them).
  void Borrow(const std::vector<std::tuple<std::string, Array, std::string>>& items) {
    std::vector<TensorValues> values;
    for (const auto& [name, a, hint] : items)
      values.push_back({name, ArrayType(a, name, hint), a.data(), static_cast<int64_t>(a.size())});
    Status st = model_->BorrowTensors(values);
    if (!st.ok()) {
      if (st.code() == StatusCode::kNotFound) throw nb::key_error(st.message().c_str());
      Raise(st);
    }
  }

  // The file's bytes of tensor `name` into `out` (exactly its size in bytes).
  void ReadFileTensor(const std::string& name, nb::ndarray<nb::c_contig, nb::device::cpu> out) {
    const gguf::TensorInfo* t = model_->file().FindTensor(name);
    if (t == nullptr) throw nb::key_error(("the model has no tensor '" + name + "'").c_str());
    if (static_cast<int64_t>(out.nbytes()) != t->size_bytes)
      throw nb::value_error(("tensor '" + name + "' has " + std::to_string(t->size_bytes) +
                             " bytes; the array has " + std::to_string(out.nbytes()))
                                .c_str());
    std::memcpy(out.data(), t->data, static_cast<size_t>(t->size_bytes));
  }

  // Logits of token i (tokens[i] at position pos[i] of sequence seq[i]) into
  // row dest[i] of out. Each sequence's tokens come in order from position 0.
  void Run(const I32& tokens, const I32& seq, const I32& pos, const I64& dest, F32Rows out) {
    const int64_t n = static_cast<int64_t>(tokens.shape(0));
    if (seq.shape(0) != tokens.shape(0) || pos.shape(0) != tokens.shape(0) ||
        dest.shape(0) != tokens.shape(0))
      throw nb::value_error("tokens, seq, pos and dest must have one entry each per token");
    if (static_cast<int64_t>(out.shape(1)) != hp().n_vocab)
      throw nb::value_error("out must have n_vocab columns");
    int n_seq = 0, n_pos = 0;
    std::vector<int32_t> next;  // each sequence's next position
    for (int64_t i = 0; i < n; ++i) {
      const int32_t t = tokens(i), s = seq(i), p = pos(i);
      if (t < 0 || t >= hp().n_vocab)
        throw nb::value_error(("token id " + std::to_string(t) + " is outside the vocabulary (" +
                               std::to_string(hp().n_vocab) + ")")
                                  .c_str());
      if (s < 0 || s >= (1 << 20)) throw nb::value_error("sequence index out of range");
      if (p < 0 || p >= max_ctx_)
        throw nb::value_error(("position " + std::to_string(p) + " is outside the context (" +
                               std::to_string(max_ctx_) + ": max_model_len)")
                                  .c_str());
      if (dest(i) < 0 || dest(i) >= static_cast<int64_t>(out.shape(0)))
        throw nb::value_error("destination row out of range");
      if (static_cast<size_t>(s) >= next.size()) next.resize(s + 1, 0);
      if (p != next[s])
        throw nb::value_error("each sequence's tokens must come in order from position 0");
      ++next[s];
      n_seq = std::max(n_seq, s + 1);
      n_pos = std::max(n_pos, p + 1);
    }
    Status st;
    {
      nb::gil_scoped_release release;
      st = RunRows(tokens.data(), seq.data(), pos.data(), dest.data(), n, n_seq, n_pos, out.data());
    }
    if (!st.ok()) Raise(st);
  }

  // out[i] = the sampler's log-softmax of row i of logits at ids[i].
  void LogSoftmaxRows(nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> logits,
                      const I64& ids, F32 out) const {
    const int64_t n = static_cast<int64_t>(logits.shape(0));
    const int v = static_cast<int>(logits.shape(1));
    if (ids.shape(0) != logits.shape(0) || out.shape(0) != logits.shape(0))
      throw nb::value_error("one id and one output per row");
    for (int64_t i = 0; i < n; ++i) {
      if (ids(i) < 0 || ids(i) >= v) throw nb::value_error("token id outside the row");
    }
    nb::gil_scoped_release release;
    for (int64_t i = 0; i < n; ++i)
      out(i) = LogSoftmaxAt(logits.data() + i * v, v, static_cast<int32_t>(ids(i)), isa_);
  }

  // The RoPE table the forward pass reads: cos and sin [n_pos, rot_dim / 2].
  std::tuple<nb::ndarray<nb::numpy, float>, nb::ndarray<nb::numpy, float>> RopeTables(
      int n_pos) const {
    if (n_pos < 1 || n_pos > max_ctx_) throw nb::value_error("n_pos must be in [1, max_model_len]");
    RopeTable table(hp().rot_dim, hp().rope_base, Scaling(), FreqFactors(), n_pos);
    const int half = table.n_pairs();
    auto* c = new float[static_cast<size_t>(n_pos) * half];
    auto* s = new float[static_cast<size_t>(n_pos) * half];
    for (int p = 0; p < n_pos; ++p) {
      std::copy_n(table.Cos(p), half, c + static_cast<size_t>(p) * half);
      std::copy_n(table.Sin(p), half, s + static_cast<size_t>(p) * half);
    }
    nb::capsule fc(c, [](void* q) noexcept { delete[] static_cast<float*>(q); });
    nb::capsule fs(s, [](void* q) noexcept { delete[] static_cast<float*>(q); });
    const size_t shape[2] = {static_cast<size_t>(n_pos), static_cast<size_t>(half)};
    return {nb::ndarray<nb::numpy, float>(c, 2, shape, fc),
            nb::ndarray<nb::numpy, float>(s, 2, shape, fs)};
  }

 private:
  Policy() = default;

  Status Init(const PolicyOptions& o) {
    STET_ASSIGN_OR_RETURN(std::string path, tools::ResolveModelArg(o.model));
    STET_ASSIGN_OR_RETURN(model_, Model::Load(path));
    STET_ASSIGN_OR_RETURN(tools::NumericsChoice nc,
                          tools::ParseNumericsChoice(o.numerics, o.kv_cache_dtype));
    STET_ASSIGN_OR_RETURN(isa_, tools::ParseIsa(o.isa));
    if (o.threads < 0 || o.threads > 1024)
      return InvalidArgument("threads must be in [0, 1024] (0: every core)");
    if (o.max_model_len < 2) return InvalidArgument("max_model_len must be at least 2");
    const int threads = o.threads > 0
                            ? o.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    kv_type_ = nc.kv_type;
    max_ctx_ = o.max_model_len;
    // As the engine: Isa::kAuto picks MatMul rows by measurement (never an output bit).
    if (isa_ == Isa::kAuto) model_->TuneKernels(threads);
    pool_ = std::make_unique<ThreadPool>(threads);
    fwd_ = std::make_unique<Forward>(*model_, pool_.get(), isa_, max_ctx_, nc.mode);
    return Status::Ok();
  }

  RopeScaling Scaling() const {
    RopeScaling s;
    if (hp().rope_linear_factor != 1.0) {
      s.kind = RopeScaling::Kind::kLinear;
      s.factor = hp().rope_linear_factor;
    }
    return s;
  }
  const float* FreqFactors() const {
    const auto& ff = model_->weights().rope_freq_factors;
    return ff.empty() ? nullptr : ff.data();
  }

  Status RunRows(const int32_t* tokens, const int32_t* seq, const int32_t* pos, const int64_t* dest,
                 int64_t n, int n_seq, int n_pos, float* out) {
    if (kv_ == nullptr || kv_->n_slots() < n_seq ||
        kv_->BlockTable(0).size() * kv_->block_size() < static_cast<size_t>(n_pos)) {
      kv_.reset();  // free the old store before the new one
      kv_ = std::make_unique<PagedKvCache>(PagedKvCache::Contiguous(
          hp(), std::max(n_seq, kv_seqs_), std::max(n_pos, kv_pos_), kv_type_));
      kv_seqs_ = std::max(n_seq, kv_seqs_);
      kv_pos_ = std::max(n_pos, kv_pos_);
    }
    const int64_t v = hp().n_vocab;
    std::vector<BatchToken> batch;
    for (int64_t i0 = 0; i0 < n; i0 += kRunTokens) {
      const int64_t i1 = std::min(n, i0 + kRunTokens);
      batch.clear();
      for (int64_t i = i0; i < i1; ++i) batch.push_back({tokens[i], pos[i], seq[i], true});
      logits_.clear();
      STET_RETURN_IF_ERROR(fwd_->Run(batch, *kv_, &logits_));
      for (int64_t i = i0; i < i1; ++i)
        std::copy_n(logits_.data() + (i - i0) * v, v, out + dest[i] * v);
    }
    return Status::Ok();
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Forward> fwd_;
  std::unique_ptr<PagedKvCache> kv_;
  int kv_seqs_ = 0, kv_pos_ = 0;
  DType kv_type_ = DType::kF16;
  Isa isa_ = Isa::kAuto;
  int max_ctx_ = 4096;
  std::vector<float> logits_;
};

// The architecture as the torch reference needs it (stet/torch.py).
nb::dict HParamsDict(const Policy& p) {
  const HParams& hp = p.hp();
  nb::dict d;
  d["arch"] = std::string(hp.arch->name);
  d["n_layer"] = hp.n_layer;
  d["n_embd"] = hp.n_embd;
  d["n_head"] = hp.n_head;
  d["n_head_kv"] = hp.n_head_kv;
  d["head_dim"] = hp.head_dim;
  d["n_ff"] = hp.n_ff;
  d["n_vocab"] = hp.n_vocab;
  d["rot_dim"] = hp.rot_dim;
  d["rms_eps"] = hp.rms_eps;
  d["attn_scale"] = hp.attn_scale;
  d["rope_neox"] = hp.arch->rope_style != kernels::RopeStyle::kNormal;
  d["tied_output"] = p.model().weights().tied_output;
  d["qkv_bias"] = hp.arch->qkv_bias;
  d["qk_norm"] = hp.arch->qk_norm;
  d["post_norms"] = hp.arch->post_norms;
  d["scale_embd"] = hp.arch->scale_embd;
  d["moe"] = hp.arch->moe;
  d["gelu"] = hp.arch->ffn_act == FfnActivation::kGeluTanh;
  d["n_swa"] = hp.n_swa;
  d["attn_softcap"] = hp.attn_softcap;
  d["final_softcap"] = hp.final_softcap;
  return d;
}

}  // namespace

nb::list TensorList(const gguf::GgufFile& file) {
  nb::list out;
  for (const gguf::TensorInfo& t : file.tensors()) {
    nb::list shape;
    for (auto d = t.dims.rbegin(); d != t.dims.rend(); ++d) shape.append(*d);
    out.append(nb::make_tuple(t.name, DTypeName(t.type), nb::tuple(shape)));
  }
  return out;
}

void BindPolicy(nb::module_& m) {
  nb::class_<PolicyOptions>(m, "PolicyOptions")
      .def(nb::init<>())
      .def_rw("model", &PolicyOptions::model)
      .def_rw("threads", &PolicyOptions::threads)
      .def_rw("max_model_len", &PolicyOptions::max_model_len)
      .def_rw("kv_cache_dtype", &PolicyOptions::kv_cache_dtype)
      .def_rw("numerics", &PolicyOptions::numerics)
      .def_rw("isa", &PolicyOptions::isa);
  nb::class_<Policy>(m, "Policy")
      .def_static(
          "open",
          [](const PolicyOptions& o) {
            Result<std::unique_ptr<Policy>> p = InvalidArgument("not opened");
            {
              nb::gil_scoped_release release;
              p = Policy::Create(o);
            }
            if (!p.ok()) Raise(p.status());
            return std::move(*p);
          },
          "options"_a)
      .def_prop_ro("hparams", &HParamsDict)
      .def_prop_ro("kv_cache_dtype", &Policy::kv_type)
      .def_prop_ro("max_model_len", &Policy::max_ctx)
      .def_prop_ro("weights_digest", [](const Policy& p) { return p.model().WeightsDigest(); })
      .def("tensors", [](const Policy& p) { return TensorList(p.model().file()); })
      .def("read_file_tensor", &Policy::ReadFileTensor, "name"_a, "out"_a)
      .def("borrow", &Policy::Borrow, "items"_a)
      .def("run", &Policy::Run, "tokens"_a, "seq"_a, "pos"_a, "dest"_a, "out"_a)
      .def("log_softmax_at", &Policy::LogSoftmaxRows, "logits"_a, "ids"_a, "out"_a)
      .def("rope_tables", &Policy::RopeTables, "n_pos"_a);
}

}  // namespace stet::python

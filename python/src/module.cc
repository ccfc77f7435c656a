// stet._core: the nanobind module under the `stet` Python package. It exposes
// the engine driver (offline.h) with plain Python values — lists of ints,
// floats, bytes for text that may hold partial UTF-8 — and leaves the vLLM
// shapes to the Python layer. Invariants: the GIL is released around every
// wait for the engine (Batch.wait, Stream.take) and while a model loads; a
// refusal becomes stet.RequestError (a ValueError carrying the field), any
// other failure a Python exception — never an abort of the interpreter.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "base/cpu_features.h"
#include "python/src/offline.h"
#include "python/src/policy.h"

namespace nb = nanobind;
using namespace nb::literals;  // NOLINT

namespace stet::python {

// The element type of an array handed to load_weights: its dtype, or `hint`
// ("bf16", "f16") for 16-bit integers carrying raw half-precision bits.
DType ArrayType(const Array& a, const std::string& name, const std::string& hint) {
  const nb::dlpack::dtype t = a.dtype();
  const auto code = static_cast<nb::dlpack::dtype_code>(t.code);
  if (t.lanes == 1 && t.bits == 32 && code == nb::dlpack::dtype_code::Float) return DType::kF32;
  if (t.lanes == 1 && t.bits == 16 && code == nb::dlpack::dtype_code::Float) return DType::kF16;
  if (t.lanes == 1 && t.bits == 16 && code == nb::dlpack::dtype_code::Bfloat) return DType::kBF16;
  if (t.lanes == 1 && t.bits == 16 && code != nb::dlpack::dtype_code::Float) {
    if (hint == "bf16") return DType::kBF16;
    if (hint == "f16") return DType::kF16;
  }
  throw nb::type_error(("weights for '" + name +
                        "' must be float32, float16 or bfloat16 values (16-bit integers with "
                        "the hint \"bf16\" or \"f16\")")
                           .c_str());
}

[[noreturn]] void Raise(const Status& st) {
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
      throw nb::value_error(st.message().c_str());
    case StatusCode::kNotFound:
      PyErr_SetString(PyExc_FileNotFoundError, st.message().c_str());
      throw nb::python_error();
    case StatusCode::kIoError:
      PyErr_SetString(PyExc_OSError, st.message().c_str());
      throw nb::python_error();
    default:
      throw std::runtime_error(st.ToString());
  }
}

namespace {

// stet.RequestError, handed over by the Python package at import (kept for
// the process's life: an exception type must outlive every call that raises it).
PyObject* g_request_error = nullptr;

void SetRequestError(nb::handle type) {
  Py_XINCREF(type.ptr());
  g_request_error = type.ptr();
}

[[noreturn]] void Raise(const Refusal& r) {
  PyObject* type = g_request_error ? g_request_error : PyExc_ValueError;
  nb::object args = nb::make_tuple(r.message, r.field);
  PyErr_SetObject(type, args.ptr());
  throw nb::python_error();
}
using python::Raise;  // the Status overload (policy.h) beside the Refusal one

nb::bytes Bytes(const std::string& s) { return nb::bytes(s.data(), s.size()); }

nb::list Ids(const std::vector<int32_t>& ids) {
  nb::list out;
  for (int32_t id : ids) out.append(id);
  return out;
}

// [(id, logprob), ...] best first.
nb::list Top(const std::vector<TokenLogprob>& top) {
  nb::list out;
  for (const TokenLogprob& t : top) out.append(nb::make_tuple(t.id, t.logprob));
  return out;
}

// One choice: (ids, logprobs, tops, text bytes, finish, end_marker, error, logits hashes).
nb::tuple Choice(const ChoiceOut& c) {
  nb::list ids, lps, tops, hashes;
  for (const TokenOut& t : c.tokens) {
    ids.append(t.id);
    lps.append(t.logprob);
    tops.append(Top(t.top));
    hashes.append(t.logits_hash);
  }
  return nb::make_tuple(ids, lps, tops, Bytes(c.text), FinishReasonName(c.finish), c.end_marker,
                        c.error, hashes);
}

// The prompt's scores: (ids, logprobs, tops); empty lists without prompt_logprobs.
nb::tuple Prompt(const std::vector<TokenOut>& tokens) {
  nb::list ids, lps, tops;
  for (const TokenOut& t : tokens) {
    ids.append(t.id);
    lps.append(t.logprob);
    tops.append(Top(t.top));
  }
  return nb::make_tuple(ids, lps, tops);
}

nb::tuple ResultTuple(const RequestOut& r) {
  nb::list choices;
  for (const ChoiceOut& c : r.choices) choices.append(Choice(c));
  return nb::make_tuple(r.seed, r.cached_prompt_tokens, Prompt(r.prompt_tokens), choices);
}

// A stream event: (kind, choice, id, logprob, top, text bytes, end_marker, finish, error).
nb::tuple Event(const RequestEvent& ev) {
  switch (ev.kind) {
    case RequestEvent::Kind::kPromptScored:
      return nb::make_tuple("prompt", ev.choice, Prompt(ev.prompt_tokens));
    case RequestEvent::Kind::kToken:
      return nb::make_tuple("token", ev.choice, ev.token.id, ev.token.logprob, Top(ev.token.top),
                            Bytes(ev.text_delta), ev.end_marker);
    case RequestEvent::Kind::kFinished:
      break;
  }
  return nb::make_tuple("finished", ev.choice, Bytes(ev.text_delta), FinishReasonName(ev.finish),
                        ev.error, ev.cached_prompt_tokens);
}

// A request the engine has validated, waiting to be run.
struct Prepared {
  RequestParams params;
};

// A compiled structured-output constraint, shared by every prompt that uses it.
struct CompiledGrammar {
  std::shared_ptr<const Grammar> grammar;
};

void BindOptions(nb::module_& m) {
  nb::class_<LlmOptions>(m, "LlmOptions")
      .def(nb::init<>())
      .def_rw("model", &LlmOptions::model)
      .def_rw("threads", &LlmOptions::threads)
      .def_rw("max_model_len", &LlmOptions::max_model_len)
      .def_rw("kv_cache_dtype", &LlmOptions::kv_cache_dtype)
      .def_rw("numerics", &LlmOptions::numerics)
      .def_rw("isa", &LlmOptions::isa)
      .def_rw("speculative", &LlmOptions::speculative)
      .def_rw("num_speculative_tokens", &LlmOptions::num_speculative_tokens)
      .def_rw("draft_model", &LlmOptions::draft_model)
      .def_rw("max_num_seqs", &LlmOptions::max_num_seqs)
      .def_rw("max_num_batched_tokens", &LlmOptions::max_num_batched_tokens)
      .def_rw("chunk_size", &LlmOptions::chunk_size)
      .def_rw("enable_prefix_caching", &LlmOptions::enable_prefix_caching)
      .def_rw("chat_template", &LlmOptions::chat_template)
      .def_rw("chat_template_kwargs", &LlmOptions::chat_template_kwargs)
      .def_rw("progress", &LlmOptions::progress);
}

template <typename T>
void SamplingField(nb::class_<RequestSpec>& c, const char* name, T SamplingParams::*field) {
  c.def_prop_rw(
      name, [field](const RequestSpec& s) { return s.sampling.*field; },
      [field](RequestSpec& s, T v) { s.sampling.*field = std::move(v); });
}

void BindSpec(nb::module_& m) {
  nb::class_<CompiledGrammar>(m, "CompiledGrammar");
  m.def(
      "compile_structured",
      [](const std::string& kind, const std::string& text,
         const std::vector<std::string>& choices) {
        auto g = CompileStructured(kind, text, choices);
        if (auto* r = std::get_if<Refusal>(&g)) Raise(*r);
        return CompiledGrammar{std::get<0>(std::move(g))};
      },
      "kind"_a, "text"_a = "", "choices"_a = std::vector<std::string>());
  nb::class_<RequestSpec> c(m, "RequestSpec");
  c.def(nb::init<>())
      .def_rw("prompt", &RequestSpec::prompt)
      .def_rw("max_tokens", &RequestSpec::max_tokens, nb::arg().none())
      .def_rw("min_tokens", &RequestSpec::min_tokens)
      .def_rw("n", &RequestSpec::n)
      .def_rw("stop", &RequestSpec::stop)
      .def_rw("stop_token_ids", &RequestSpec::stop_token_ids)
      .def_rw("ignore_eos", &RequestSpec::ignore_eos)
      .def_rw("logprobs", &RequestSpec::logprobs, nb::arg().none())
      .def_rw("prompt_logprobs", &RequestSpec::prompt_logprobs, nb::arg().none())
      .def_rw("speculative", &RequestSpec::speculative, nb::arg().none())
      .def_rw("logits_hash", &RequestSpec::logits_hash)
      .def_prop_rw(
          "grammar", [](const RequestSpec&) { return nb::none(); },
          [](RequestSpec& s, const CompiledGrammar* g) { s.grammar = g ? g->grammar : nullptr; },
          nb::arg().none());
  SamplingField(c, "temperature", &SamplingParams::temperature);
  SamplingField(c, "top_k", &SamplingParams::top_k);
  SamplingField(c, "top_p", &SamplingParams::top_p);
  SamplingField(c, "min_p", &SamplingParams::min_p);
  SamplingField(c, "logit_bias", &SamplingParams::logit_bias);
  SamplingField(c, "repetition_penalty", &SamplingParams::repetition_penalty);
  SamplingField(c, "presence_penalty", &SamplingParams::presence_penalty);
  SamplingField(c, "frequency_penalty", &SamplingParams::frequency_penalty);
  c.def_prop_rw(
      "seed", [](const RequestSpec& s) { return s.sampling.seed; },
      [](RequestSpec& s, std::optional<uint64_t> v) { s.sampling.seed = v; }, nb::arg().none());
  m.def("check_spec", [](const RequestSpec& spec) {
    if (auto r = CheckSpec(spec)) Raise(*r);
  });
  nb::class_<Prepared>(m, "Prepared")
      .def_prop_ro("prompt_len", [](const Prepared& p) { return p.params.prompt.size(); })
      .def_prop_ro("n", [](const Prepared& p) { return p.params.n; });
}

void BindRuns(nb::module_& m) {
  nb::class_<Batch>(m, "Batch")
      .def("wait", &Batch::Wait, "timeout"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("cancel", &Batch::Cancel, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("size", &Batch::size)
      .def_prop_ro("finished", &Batch::finished)
      .def_prop_ro("generated_tokens", &Batch::generated_tokens)
      .def("result", [](const Batch& b, size_t i) {
        if (i >= b.size() || b.finished() != b.size())
          throw nb::index_error("the batch has not finished, or no such request");
        return ResultTuple(b.result(i));
      });
  nb::class_<StreamRun>(m, "Stream")
      .def(
          "take",
          [](StreamRun& s, double timeout) {
            std::vector<RequestEvent> events;
            {
              nb::gil_scoped_release release;
              events = s.Take(timeout);
            }
            nb::list out;
            for (const RequestEvent& ev : events) out.append(Event(ev));
            return out;
          },
          "timeout"_a)
      .def_prop_ro("done", &StreamRun::done)
      .def_prop_ro("seed", &StreamRun::seed)
      .def("cancel", &StreamRun::Cancel, nb::call_guard<nb::gil_scoped_release>());
}

std::shared_ptr<Offline> OpenLlm(const LlmOptions& o) {
  Result<std::shared_ptr<Offline>> llm = InvalidArgument("not opened");
  {
    nb::gil_scoped_release release;
    llm = Offline::Open(o);
  }
  if (!llm.ok()) Raise(llm.status());
  return *llm;
}

// (name, array, hint) triples -> Engine::LoadWeights, the GIL released while it runs.
void LoadWeights(Offline& o,
                 const std::vector<std::tuple<std::string, Array, std::string>>& items) {
  std::vector<TensorValues> values;
  for (const auto& [name, a, hint] : items)
    values.push_back({name, ArrayType(a, name, hint), a.data(), static_cast<int64_t>(a.size())});
  Status st;
  {
    nb::gil_scoped_release release;
    st = o.engine().LoadWeights(values);
  }
  if (!st.ok()) {
    if (st.code() == StatusCode::kNotFound) throw nb::key_error(st.message().c_str());
    Raise(st);
  }
}

void BindEngine(nb::module_& m) {
  nb::class_<Offline>(m, "Engine")
      .def_static("open", &OpenLlm, "options"_a)
      .def_prop_ro("fingerprint", [](Offline& o) { return o.engine().fingerprint(); })
      .def_prop_ro("fingerprint_descriptor",
                   [](Offline& o) { return o.engine().fingerprint_descriptor(); })
      .def_prop_ro("model_sha256", [](Offline& o) { return o.engine().model_sha256(); })
      .def_prop_ro("model_path", &Offline::model_path)
      .def_prop_ro("arch",
                   [](Offline& o) { return std::string(o.engine().model().hparams().arch->name); })
      .def_prop_ro("n_head", [](Offline& o) { return o.engine().model().hparams().n_head; })
      .def_prop_ro("n_head_kv", [](Offline& o) { return o.engine().model().hparams().n_head_kv; })
      .def_prop_ro("tied_output",
                   [](Offline& o) { return o.engine().model().weights().tied_output; })
      .def("tensors", [](Offline& o) { return TensorList(o.engine().model().file()); })
      .def("load_weights", &LoadWeights, "items"_a)
      .def_prop_ro("model_id", &Offline::model_id)
      .def_prop_ro("n_ctx", &Offline::n_ctx)
      .def_prop_ro("n_vocab", [](const Offline& o) { return o.tokenizer().n_vocab(); })
      .def_prop_ro("bos", [](const Offline& o) { return o.tokenizer().bos(); })
      .def_prop_ro("eos", [](const Offline& o) { return o.tokenizer().eos(); })
      .def_prop_ro("eog_ids", [](const Offline& o) { return o.tokenizer().eog_ids(); })
      .def_prop_ro("chat_template", &Offline::chat_template_source)
      .def_prop_ro("chat_template_builtin",
                   [](const Offline& o) { return o.chat().builtin_name(); })
      .def_prop_ro("chat_extra_stops", [](const Offline& o) { return o.chat().extra_stops(); })
      .def(
          "encode",
          [](const Offline& o, const std::string& text, bool add_special, bool parse_special) {
            return Ids(o.tokenizer().Encode(text, add_special, parse_special));
          },
          "text"_a, "add_special"_a = true, "parse_special"_a = true)
      .def(
          "decode",
          [](const Offline& o, const std::vector<int32_t>& ids, bool render_special) {
            return Bytes(o.tokenizer().Decode(ids, render_special));
          },
          "ids"_a, "render_special"_a = false)
      .def(
          "piece",
          [](const Offline& o, int32_t id, bool render_special) {
            return Bytes(o.tokenizer().TokenToPiece(id, render_special));
          },
          "id"_a, "render_special"_a = false)
      .def("token_text", [](const Offline& o,
                            int32_t id) { return Bytes(std::string(o.tokenizer().TokenText(id))); })
      .def(
          "render_chat",
          [](const Offline& o, const std::string& messages, const std::string& tools, bool agp,
             bool cont, const std::string& kwargs, std::optional<int64_t> clock) {
            auto text = o.RenderChat(messages, tools, agp, cont, kwargs, clock);
            if (auto* r = std::get_if<Refusal>(&text)) Raise(*r);
            return Bytes(std::get<0>(text));
          },
          "messages_json"_a, "tools_json"_a = "", "add_generation_prompt"_a = true,
          "continue_final_message"_a = false, "kwargs_json"_a = "",
          "clock"_a = std::optional<int64_t>())
      .def("chat_tokenize",
           [](const Offline& o, const std::string& text) { return Ids(o.chat().Tokenize(text)); })
      .def("prepare",
           [](const Offline& o, const RequestSpec& spec) {
             auto p = o.Build(spec);
             if (auto* r = std::get_if<Refusal>(&p)) Raise(*r);
             return Prepared{std::get<0>(std::move(p))};
           })
      .def("run_batch",
           [](std::shared_ptr<Offline> o, const std::vector<const Prepared*>& reqs) {
             std::vector<RequestParams> params;
             params.reserve(reqs.size());
             for (const Prepared* r : reqs) params.push_back(r->params);
             auto b = Batch::Start(std::move(o), std::move(params));
             if (auto* e = std::get_if<1>(&b)) {
               Refusal r = e->second;
               r.message = "request " + std::to_string(e->first) + ": " + r.message;
               Raise(r);
             }
             return std::get<0>(std::move(b));
           })
      .def("stream", [](std::shared_ptr<Offline> o, const Prepared& req) {
        auto s = StreamRun::Start(std::move(o), req.params);
        if (auto* r = std::get_if<Refusal>(&s)) Raise(*r);
        return std::get<0>(std::move(s));
      });
}

}  // namespace
}  // namespace stet::python

NB_MODULE(_core, m) {
  using namespace stet::python;  // NOLINT
  m.doc() = "stet's engine, tokenizer and chat templates (the stet package's native core)";
  m.def("_set_request_error", [](nb::handle type) { SetRequestError(type); });
  m.def("best_isa", [] { return std::string(stet::IsaName(stet::BestIsa())); });
  BindOptions(m);
  BindSpec(m);
  BindRuns(m);
  BindEngine(m);
  BindPolicy(m);
}

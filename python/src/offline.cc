// The Python package's engine driver (offline.h): the model opened with
// `stet serve`'s options, requests built and validated by the engine's one
// ValidateRequest, events collected per request under a mutex.
#include "python/src/offline.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>

#include "server/openai/request_parse.h"
#include "server/server.h"
#include "tools/common.h"
#include "tools/model_catalog.h"

namespace stet::python {

using server::Json;

namespace {

// vLLM's spellings of the KV type, in stet's: auto | f16 | f32.
std::string KvName(const std::string& name) {
  if (name == "fp16" || name == "float16") return "f16";
  if (name == "fp32" || name == "float32") return "f32";
  return name;
}

Result<EngineOptions> EngineOptionsOf(const LlmOptions& o) {
  EngineOptions eo;
  eo.n_ctx = o.max_model_len;
  // As the CLI's --numerics / --kv-type (kv "auto": f32 under precise, else f16).
  auto nc = tools::ParseNumericsChoice(o.numerics, KvName(o.kv_cache_dtype));
  if (!nc.ok()) {  // the CLI's message, in the Python names
    std::string m = nc.status().message();
    if (m.rfind("--numerics", 0) == 0) m = "numerics" + m.substr(10);
    if (m.rfind("--kv-type", 0) == 0) m = "kv_cache_dtype" + m.substr(9);
    return InvalidArgument(m);
  }
  eo.kv_type = nc->kv_type;
  eo.numerics = nc->mode;
  STET_ASSIGN_OR_RETURN(eo.isa, tools::ParseIsa(o.isa));
  if (o.threads < 0 || o.threads > 1024)
    return InvalidArgument("threads must be in [0, 1024] (0: every core), not " +
                           std::to_string(o.threads));
  eo.n_threads = o.threads > 0
                     ? o.threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (o.max_model_len < 2) return InvalidArgument("max_model_len must be at least 2");
  if (o.max_num_seqs < 1) return InvalidArgument("max_num_seqs must be at least 1");
  if (o.max_num_batched_tokens < 1 || o.chunk_size < 1)
    return InvalidArgument("max_num_batched_tokens and chunk_size must be at least 1");
  eo.max_seqs = o.max_num_seqs;
  eo.max_batch_tokens = o.max_num_batched_tokens;
  eo.chunk_size = o.chunk_size;
  eo.prefix_cache = o.enable_prefix_caching;
  STET_ASSIGN_OR_RETURN(eo.spec.mode, ParseSpecMode(o.speculative));
  eo.spec.k = o.num_speculative_tokens;
  eo.spec.draft_model = o.draft_model;
  if (!o.draft_model.empty()) {
    STET_ASSIGN_OR_RETURN(eo.spec.draft_model, tools::ResolveModelArg(o.draft_model));
  }
  STET_RETURN_IF_ERROR(ValidateSpecOptions(eo.spec));
  return eo;
}

// The engine's field names as the Python SamplingParams spells them.
std::string PythonField(const std::string& engine_field) {
  if (engine_field == "stop_ids") return "stop_token_ids";
  if (engine_field == "top_logprobs") return "logprobs";
  if (engine_field == "grammar") return "structured_outputs";
  return engine_field;
}

Refusal RefusalOf(const Status& st, const std::string& engine_field) {
  const std::string field = PythonField(engine_field);
  std::string msg = st.message();
  if (!engine_field.empty() && msg.rfind(engine_field, 0) == 0)
    msg = field + msg.substr(engine_field.size());
  return {field, msg};
}

}  // namespace

Result<std::shared_ptr<Offline>> Offline::Open(const LlmOptions& o) {
  STET_ASSIGN_OR_RETURN(EngineOptions eo, EngineOptionsOf(o));
  STET_ASSIGN_OR_RETURN(std::string path, tools::ResolveModelArg(o.model));
  STET_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Open(path, eo, o.progress));
  auto llm = std::shared_ptr<Offline>(new Offline());
  llm->path_ = path;
  server::ModelInfo info = server::ModelInfoOf(path, *engine);
  llm->model_id_ = info.names.id;
  server::ChatPromptSetup setup;  // as Server::Attach makes it
  setup.source = o.chat_template.empty() ? info.chat_template : o.chat_template;
  setup.architecture = info.architecture;
  setup.model_name = info.model_name;
  setup.limits = info.template_limits;
  if (!o.chat_template_kwargs.empty()) {
    setup.default_kwargs = Json::parse(o.chat_template_kwargs, nullptr, false);
    if (!setup.default_kwargs.is_object())
      return InvalidArgument("chat_template_kwargs must be a JSON object");
  }
  llm->engine_ = std::move(engine);
  STET_ASSIGN_OR_RETURN(server::ChatPrompt chat,
                        server::ChatPrompt::Create(setup, llm->engine_->tokenizer()));
  llm->chat_ = std::make_unique<server::ChatPrompt>(std::move(chat));
  return llm;
}

namespace {

// The engine's parameters for `spec` in a context of `n_ctx` positions.
RequestParams ParamsOf(const RequestSpec& spec, int n_ctx) {
  RequestParams p;
  p.prompt = spec.prompt;
  // As the server: max_tokens beyond the context is clamped (the choice ends with "length").
  const int room = n_ctx - static_cast<int>(std::min<size_t>(spec.prompt.size(), INT32_MAX));
  p.max_tokens = std::min(spec.max_tokens.value_or(room), room);
  p.min_tokens = spec.min_tokens;
  p.n = spec.n;
  p.sampling = spec.sampling;
  p.stop = spec.stop;
  p.stop_ids = spec.stop_token_ids;
  p.ignore_eos = spec.ignore_eos;
  // One top-k serves both lists; each is trimmed to what it asked for. At least
  // one alternative when either list is asked for, so a most likely token's
  // rank (1) is known even with logprobs=0 (the alternatives never change a draw).
  const bool any = spec.logprobs.has_value() || spec.prompt_logprobs.has_value();
  p.top_logprobs =
      std::max({spec.logprobs.value_or(0), spec.prompt_logprobs.value_or(0), any ? 1 : 0});
  p.prompt_logprobs = spec.prompt_logprobs.has_value();
  p.speculative = spec.speculative;
  p.grammar = spec.grammar;
  p.logits_hash = spec.logits_hash;
  return p;
}

std::optional<Refusal> Check(const RequestParams& p, const RequestSpec& spec,
                             const RequestLimits& limits) {
  for (const auto& [name, k] :
       {std::pair{"logprobs", spec.logprobs}, std::pair{"prompt_logprobs", spec.prompt_logprobs}}) {
    if (k && (*k < 0 || *k > kMaxTopLogprobs))
      return Refusal{name, std::string(name) + " must be in [0, " +
                               std::to_string(kMaxTopLogprobs) + "], not " + std::to_string(*k)};
  }
  std::string field;
  const Status st = ValidateRequest(p, limits, &field);
  if (st.ok()) return std::nullopt;
  return RefusalOf(st, field);
}

}  // namespace

std::variant<RequestParams, Refusal> Offline::Build(const RequestSpec& spec) const {
  RequestParams p = ParamsOf(spec, engine_->n_ctx());
  if (auto r = Check(p, spec, engine_->limits())) return *r;
  return p;
}

std::optional<Refusal> CheckSpec(const RequestSpec& spec) {
  RequestSpec s = spec;
  s.prompt = {0};
  constexpr int kAny = INT32_MAX;  // ids and lengths are checked against the model at generate
  const RequestParams p = ParamsOf(s, kAny);
  return Check(p, s, RequestLimits{kAny, kAny, {}});
}

std::variant<std::string, Refusal> Offline::RenderChat(const std::string& messages_json,
                                                       const std::string& tools_json,
                                                       bool add_generation_prompt,
                                                       bool continue_final_message,
                                                       const std::string& kwargs_json,
                                                       std::optional<int64_t> clock) const {
  Json body = Json::object();
  server::ChatPromptOptions options;
  try {
    body["messages"] = Json::parse(messages_json);
    if (!tools_json.empty()) body["tools"] = Json::parse(tools_json);
    if (!kwargs_json.empty()) options.chat_template_kwargs = Json::parse(kwargs_json);
  } catch (const std::exception& e) {
    return Refusal{"messages", std::string("messages: not JSON (") + e.what() + ")"};
  }
  Json messages, tools;
  if (auto e = server::ParseMessages(body, &messages)) return Refusal{e->param, e->message};
  if (auto e = server::ParseTools(body, &tools)) return Refusal{e->param, e->message};
  options.add_generation_prompt = add_generation_prompt;
  options.continue_final_message = continue_final_message;
  options.now_unix = server::TemplateClock(clock);
  if (auto e = server::CheckChatPromptOptions(options)) return Refusal{e->param, e->message};
  auto text = chat_->Render(messages, tools, options);
  if (!text.ok()) return Refusal{text.error().param, text.error().message};
  return std::move(*text);
}

// What a Batch and a StreamRun wait on: the engine's callbacks change the state and
// notify under `mu`; Wait/Take block (without the GIL) up to `timeout_s`, never negative.
namespace {
struct Waiter {
  std::mutex mu;
  std::condition_variable cv;

  template <typename Ready>
  std::unique_lock<std::mutex> WaitUntil(double timeout_s, Ready ready) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::duration<double>(std::max(0.0, timeout_s)), ready);
    return lock;
  }
};
}  // namespace

// ---- Batch ----

struct Batch::State : Waiter {
  std::vector<RequestOut> out;
  size_t finished = 0;
  int64_t generated = 0;

  void OnEvent(size_t i, const RequestEvent& ev) {
    std::lock_guard<std::mutex> lock(mu);
    RequestOut& r = out[i];
    ChoiceOut& c = r.choices[static_cast<size_t>(ev.choice)];
    switch (ev.kind) {
      case RequestEvent::Kind::kPromptScored:
        if (r.prompt_tokens.empty()) r.prompt_tokens = ev.prompt_tokens;
        break;
      case RequestEvent::Kind::kToken:
        c.tokens.push_back(ev.token);
        c.text += ev.text_delta;
        c.end_marker = ev.end_marker;
        ++generated;
        break;
      case RequestEvent::Kind::kFinished:
        c.text += ev.text_delta;
        c.finish = ev.finish;
        c.error = ev.error;
        r.cached_prompt_tokens = std::max(r.cached_prompt_tokens, ev.cached_prompt_tokens);
        if (++r.finished_choices == static_cast<int>(r.choices.size())) {
          ++finished;
          cv.notify_all();
        }
        break;
    }
  }
};

std::variant<std::shared_ptr<Batch>, std::pair<size_t, Refusal>> Batch::Start(
    std::shared_ptr<Offline> llm, std::vector<RequestParams> params) {
  auto b = std::shared_ptr<Batch>(new Batch());
  b->llm_ = std::move(llm);
  b->state_ = std::make_shared<State>();
  b->state_->out.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) b->state_->out[i].choices.resize(params[i].n);
  Engine& engine = b->llm_->engine();
  for (size_t i = 0; i < params.size(); ++i) {
    std::shared_ptr<State> st = b->state_;
    auto sub = engine.Submit(std::move(params[i]),
                             [st, i](const RequestEvent& ev) { st->OnEvent(i, ev); });
    if (!sub.ok()) {
      b->Cancel();
      return std::make_pair(i, RefusalOf(sub.status(), ""));
    }
    {
      std::lock_guard<std::mutex> lock(b->state_->mu);
      b->state_->out[i].seed = sub->seed;
    }
    b->ids_.push_back(sub->id);
  }
  return b;
}

Batch::~Batch() { Cancel(); }

size_t Batch::Wait(double timeout_s) {
  size_t before;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    before = state_->finished;
  }
  auto lock = state_->WaitUntil(
      timeout_s, [&] { return state_->finished != before || state_->finished == ids_.size(); });
  return state_->finished;
}

const RequestOut& Batch::result(size_t i) const { return state_->out[i]; }

size_t Batch::finished() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->finished;
}

int64_t Batch::generated_tokens() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->generated;
}

void Batch::Cancel() {
  std::vector<uint64_t> running;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    for (size_t i = 0; i < ids_.size(); ++i) {
      const RequestOut& r = state_->out[i];
      if (r.finished_choices < static_cast<int>(r.choices.size())) running.push_back(ids_[i]);
    }
  }
  for (uint64_t id : running) llm_->engine().Cancel(id);
}

// ---- StreamRun ----

struct StreamRun::State : Waiter {
  std::deque<RequestEvent> events;
  int choices = 0;
  int finished = 0;
};

std::variant<std::shared_ptr<StreamRun>, Refusal> StreamRun::Start(std::shared_ptr<Offline> llm,
                                                                   RequestParams params) {
  auto s = std::shared_ptr<StreamRun>(new StreamRun());
  s->llm_ = std::move(llm);
  s->state_ = std::make_shared<State>();
  s->state_->choices = params.n;
  std::shared_ptr<State> st = s->state_;
  auto sub = s->llm_->engine().Submit(std::move(params), [st](const RequestEvent& ev) {
    std::lock_guard<std::mutex> lock(st->mu);
    if (ev.kind == RequestEvent::Kind::kFinished) ++st->finished;
    st->events.push_back(ev);
    st->cv.notify_all();
  });
  if (!sub.ok()) return RefusalOf(sub.status(), "");
  s->id_ = sub->id;
  s->seed_ = sub->seed;
  return s;
}

StreamRun::~StreamRun() { Cancel(); }

std::vector<RequestEvent> StreamRun::Take(double timeout_s) {
  auto lock = state_->WaitUntil(
      timeout_s, [&] { return !state_->events.empty() || state_->finished == state_->choices; });
  std::vector<RequestEvent> out(std::make_move_iterator(state_->events.begin()),
                                std::make_move_iterator(state_->events.end()));
  state_->events.clear();
  return out;
}

bool StreamRun::done() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->finished == state_->choices && state_->events.empty();
}

void StreamRun::Cancel() {
  bool running;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    running = state_->finished < state_->choices;
  }
  if (running) llm_->engine().Cancel(id_);
}

}  // namespace stet::python

// The endpoint handlers: body -> parsed request -> engine parameters (one
// RequestParams per prompt, validated by the engine's ValidateRequest, all
// sharing one seed, the engine's NewSeed when the client gave none) -> Run;
// and the small GET endpoints. The seed and the engine's
// fingerprint go into every response so the answer can be reproduced; with
// --record, everything else that shaped it goes into the record.
#include "http/json_fields.h"
#include "server/intake.h"
#include "server/openai/request_parse.h"
#include "server/server_internal.h"
#include "server/structured/structured_output.h"

namespace stet::server {

using httplib::Request;
using httplib::Response;

namespace {

constexpr int kCompletionDefaultMaxTokens = 16;  // as OpenAI's /v1/completions

}  // namespace

ResponseMeta Server::Impl::Meta(uint64_t seed) const {
  ResponseMeta m;
  m.id = CurrentRecord().id;
  m.created = static_cast<int64_t>(std::time(nullptr));
  m.model = info.names.id;
  m.fingerprint = engine->fingerprint();
  m.seed = seed;
  return m;
}

std::shared_ptr<RecordContext> Server::Impl::NewRecord(const Json& body,
                                                       const std::string& endpoint,
                                                       std::string received_at, uint64_t seed,
                                                       bool seed_generated) const {
  auto c = std::make_shared<RecordContext>();
  c->request = body;
  c->id = CurrentRecord().id;
  c->endpoint = endpoint;
  c->received_at = std::move(received_at);
  c->seed = seed;
  c->seed_generated = seed_generated;
  c->model = info.names.id;
  c->fingerprint = engine->fingerprint();
  c->fingerprint_descriptor = engine->fingerprint_descriptor();
  c->model_sha256 = engine->model_sha256();
  return c;
}

RecordFn Server::Impl::ChatRecord(std::shared_ptr<RecordContext> ctx, int64_t now_unix,
                                  bool clock_from_client, std::string rendered,
                                  const std::vector<RequestParams>& params) const {
  ctx->chat = true;
  ctx->clock_unix = now_unix;
  ctx->clock_from_client = clock_from_client;
  ctx->template_sha256 = chat_template_sha256;
  ctx->template_fallback = chat->is_fallback();
  ctx->rendered_prompt = std::move(rendered);
  ctx->params = params;
  return [ctx](const std::vector<ChoiceResult>& choices, const UsageCounts& u) {
    return BuildRecord(*ctx, choices, u);
  };
}

ToolParseFn Server::Impl::ToolParser(const Json& tools, uint64_t seed) const {
  // Parsed from the tokens with special tokens written out: markers such as
  // <|python_tag|> and [TOOL_CALLS] are control tokens the text leaves out.
  const Tokenizer* tok = &engine->tokenizer();
  return [tok, fmt = tool_format, tools, seed](int index, const ChoiceResult& c) {
    std::string raw;
    for (const TokenOut& t : c.tokens) raw += tok->TokenToPiece(t.id, /*render_special=*/true);
    return ParseToolCalls(*fmt, raw, c.text, tools, seed, index);
  };
}

PieceFn Server::Impl::Piece() const {
  const Tokenizer* tok = &engine->tokenizer();
  return [tok](int32_t id) { return tok->TokenToPiece(id); };
}

void Server::Impl::HandleCompletions(const Request& req, Response& res) {
  Intake<CompletionRequest> in(
      *this, req, res, [this](const Json& b) { return ParseCompletionRequest(b, info.names); });
  if (!in.ok()) return;
  ApiOr<Json>& body = in.body;
  std::optional<CompletionRequest>& r = in.request;
  const std::string& received_at = in.received_at;
  const bool return_token_ids = in.return_token_ids;
  const bool seed_generated = in.seed_generated;
  const uint64_t seed = in.seed;
  const Tokenizer& tok = engine->tokenizer();
  const RequestLimits limits = engine->limits();
  CommonFields& s = r->s;
  s.params.cache_salt = CacheSalt(req, s.cache_salt);
  RequestRecord& rec = CurrentRecord();
  rec.stream = s.stream;
  rec.seed = seed;

  // Cheap checks before expensive work: a prompt text too long for any
  // tokenization to fit the context is refused by its size.
  for (const PromptInput& p : r->prompts) {
    if (!p.is_text) continue;
    if (auto e = CheckPromptBytes(p.text.size(), "prompt")) return SendError(res, *e);
  }
  std::vector<RequestParams> params;
  std::vector<std::string> echo_text;  // per prompt
  for (const PromptInput& p : r->prompts) {
    std::vector<int32_t> ids =
        p.is_text ? tok.Encode(p.text, /*add_special=*/true, /*parse_special=*/true) : p.ids;
    auto rp = BuildParams(s, ids, limits, kCompletionDefaultMaxTokens, "prompt");
    if (!rp.ok()) return SendError(res, rp.error());
    if (r->echo) echo_text.push_back(p.is_text ? p.text : tok.Decode(ids));
    params.push_back(std::move(*rp));
  }
  std::vector<std::vector<int32_t>> prompt_ids;
  if (return_token_ids) {
    for (const RequestParams& p : params) prompt_ids.push_back(p.prompt);
  }
  RecordFn record;
  if (opts.recorder) {
    auto ctx = NewRecord(*body, "/v1/completions", received_at, seed, seed_generated);
    ctx->params = params;
    record = [ctx](const std::vector<ChoiceResult>& choices, const UsageCounts& u) {
      return BuildRecord(*ctx, choices, u);
    };
  }
  const int n = s.params.n;
  const std::optional<int> logprobs = r->logprobs;
  const std::optional<int> prompt_lp = r->prompt_logprobs;
  const bool echo = r->echo;
  const ResponseMeta meta = Meta(seed);
  const PieceFn piece = Piece();

  std::shared_ptr<Stream> hooks;
  if (s.stream) {
    hooks = std::make_shared<Stream>();
    auto cs = std::make_shared<CompletionStream>(meta, static_cast<int>(params.size()) * n,
                                                 logprobs, s.include_usage, piece);
    if (return_token_ids) cs->SetTokenIds(prompt_ids, n);
    if (prompt_lp) cs->SetPromptLogprobs(*prompt_lp);
    hooks->start = [cs, echo, echo_text, logprobs, n] {
      std::string out;
      if (echo && !logprobs) {  // with logprobs the echo waits for the prompt's scores
        for (size_t p = 0; p < echo_text.size(); ++p) {
          for (int c = 0; c < n; ++c)
            out += cs->Echo(static_cast<int>(p) * n + c, echo_text[p], {});
        }
      }
      return out;
    };
    hooks->event = [cs, echo_text, logprobs, prompt_lp](int idx, const Job::Item& it,
                                                        bool shown) -> std::string {
      switch (it.ev.kind) {
        case RequestEvent::Kind::kPromptScored:
          if (!echo_text.empty() && logprobs)  // the echo waited for these scores
            return cs->Echo(idx, echo_text[it.prompt], it.ev.prompt_tokens);
          return prompt_lp ? cs->PromptScores(idx, it.ev.prompt_tokens) : "";
        case RequestEvent::Kind::kToken:
          return cs->Token(idx, it.ev.text_delta, shown ? &it.ev.token : nullptr);
        case RequestEvent::Kind::kFinished:
          return cs->Finish(idx, it.ev.text_delta, it.ev.finish);
      }
      return "";
    };
    hooks->usage = [cs](const UsageCounts& u) { return cs->Usage(u); };
  }
  auto build = [meta, echo_text, n, logprobs, prompt_lp, piece, prompt_ids, return_token_ids](
                   std::vector<ChoiceResult>& choices, const UsageCounts& u) {
    std::vector<std::string> per_choice;
    if (!echo_text.empty()) {
      for (size_t i = 0; i < choices.size(); ++i) per_choice.push_back(echo_text[i / n]);
    }
    Json j = CompletionResponse(meta, choices, per_choice, logprobs, u, piece);
    if (prompt_lp) {
      for (size_t i = 0; i < choices.size(); ++i)
        j["choices"][i]["prompt_logprobs"] =
            PromptLogprobsJson(choices[i].prompt_tokens, *prompt_lp, piece);
    }
    if (return_token_ids) AddTokenIds(&j, choices, prompt_ids, n, /*chat=*/false);
    return j;
  };
  Run(std::move(in.slot), std::move(params), s.stream, hooks, build, "prompt", res,
      std::move(record));
}

void Server::Impl::HandleChat(const Request& req, Response& res) {
  Intake<ChatRequest> in(*this, req, res,
                         [this](const Json& b) { return ParseChatRequest(b, info.names); });
  if (!in.ok()) return;
  ApiOr<Json>& body = in.body;
  std::optional<ChatRequest>& r = in.request;
  const std::string& received_at = in.received_at;
  const bool return_token_ids = in.return_token_ids;
  const bool seed_generated = in.seed_generated;
  const uint64_t seed = in.seed;
  const int64_t now_unix = in.clock.value_or(ChatTemplateOptions{}.now_unix);
  const RequestLimits limits = engine->limits();
  CommonFields& s = r->s;
  if (!r->forced_tool.empty()) {  // tool_choice "required" / named: calls in the template's format
    if (auto e = ForceToolCalls(*tool_format, r->tools, r->forced_tool == "*" ? "" : r->forced_tool,
                                r->parallel_tool_calls, &s.params))
      return SendError(res, *e);
  }
  for (const std::string& stop : chat->extra_stops()) s.params.stop.push_back(stop);
  s.params.cache_salt = CacheSalt(req, s.cache_salt);
  RequestRecord& rec = CurrentRecord();
  rec.stream = s.stream;
  rec.seed = seed;

  std::string rendered;
  std::vector<int32_t> prompt;
  if (r->prompt_ids) {  // token in: the client rendered the prompt itself
    prompt = std::move(*r->prompt_ids);
  } else {
    auto ids = chat->Build(r->messages, r->tools, opts.recorder ? &rendered : nullptr, now_unix,
                           max_prompt_bytes);
    if (!ids.ok()) return SendError(res, ids.error());
    prompt = std::move(*ids);
  }
  auto rp = BuildParams(s, std::move(prompt), limits, limits.n_ctx,
                        r->prompt_ids ? "prompt_token_ids" : "messages");
  if (!rp.ok()) return SendError(res, rp.error());
  std::vector<RequestParams> params;
  params.push_back(std::move(*rp));
  std::vector<std::vector<int32_t>> prompt_ids;
  if (return_token_ids) prompt_ids.push_back(params[0].prompt);
  RecordFn record;
  if (opts.recorder) {
    record = ChatRecord(NewRecord(*body, "/v1/chat/completions", received_at, seed, seed_generated),
                        now_unix, in.clock.has_value(), std::move(rendered), params);
  }

  const bool logprobs = r->logprobs;
  const int top = r->top_logprobs;
  const int n = s.params.n;
  const ResponseMeta meta = Meta(seed);
  const PieceFn piece = Piece();
  ToolParseFn tool_parse;
  if (r->parse_tool_calls) tool_parse = ToolParser(r->tools, seed);
  std::shared_ptr<Stream> hooks;
  if (s.stream) {
    hooks = std::make_shared<Stream>();
    auto cs = std::make_shared<ChatStream>(meta, logprobs, top, s.include_usage, piece);
    if (return_token_ids) cs->SetTokenIds(prompt_ids[0]);
    if (tool_parse) cs->SetToolParsing(tool_parse);
    hooks->start = [cs, n] {
      std::string out;
      for (int c = 0; c < n; ++c) out += cs->Start(c);
      return out;
    };
    hooks->event = [cs](int idx, const Job::Item& it, bool shown) -> std::string {
      switch (it.ev.kind) {
        case RequestEvent::Kind::kPromptScored:
          return "";
        case RequestEvent::Kind::kToken:
          return cs->Token(idx, it.ev.text_delta, shown ? &it.ev.token : nullptr);
        case RequestEvent::Kind::kFinished:
          return cs->Finish(idx, it.ev.text_delta, it.ev.finish);
      }
      return "";
    };
    hooks->usage = [cs](const UsageCounts& u) { return cs->Usage(u); };
  }
  auto build = [meta, logprobs, top, piece, prompt_ids, return_token_ids, n, tool_parse](
                   std::vector<ChoiceResult>& choices, const UsageCounts& u) {
    Json j = ChatResponse(meta, choices, logprobs, top, u, piece, tool_parse);
    if (return_token_ids) AddTokenIds(&j, choices, prompt_ids, n, /*chat=*/true);
    return j;
  };
  Run(std::move(in.slot), std::move(params), s.stream, hooks, build,
      r->prompt_ids ? "prompt_token_ids" : "messages", res, std::move(record));
}

Json Server::Impl::ModelJson() const {
  Json m = Json::object();
  m["id"] = info.names.id;
  m["object"] = "model";
  m["created"] = created;
  m["owned_by"] = "stet";
  m["max_model_len"] = engine->n_ctx();
  m["system_fingerprint"] = engine->fingerprint();
  return m;
}

void Server::Impl::HandleModels(const Request& req, Response& res) {
  if (req.matches.size() > 1) {
    const std::string name = req.matches[1];
    if (!info.names.Matches(name)) return SendError(res, ModelNotFound(name));
    return SendJson(res, 200, ModelJson());
  }
  Json list = Json::object();
  list["object"] = "list";
  list["data"] = Json::array({ModelJson()});
  SendJson(res, 200, list);
}

void Server::Impl::HandleHealth(const Request&, Response& res) {
  Json j = Json::object();
  if (draining) {
    j["status"] = "draining";
    return SendJson(res, 503, j);
  }
  if (!ready) {
    j["status"] = "loading";
    res.set_header("Retry-After", "1");
    return SendJson(res, 503, j);
  }
  j["status"] = "ok";
  SendJson(res, 200, j);
}

void Server::Impl::HandleMetrics(const Request&, Response& res) {
  ServerGauges g;
  g.ready = ready;
  g.draining = draining;
  {
    std::lock_guard<std::mutex> lock(jobs_mu);
    g.requests_in_flight = admitted;
  }
  std::optional<EngineStats> stats;
  if (ready) {
    stats = engine->stats();
    g.model_id = info.names.id;
    g.fingerprint = engine->fingerprint();
  }
  res.status = 200;
  res.set_content(metrics.Render(g, stats ? &*stats : nullptr),
                  "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace stet::server

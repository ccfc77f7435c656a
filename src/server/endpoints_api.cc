// Handlers of the endpoints beyond Completions and Chat: /v1/responses
// (shapes in responses_api.cc) and the tokenizer and template endpoints
// (bodies in tokenize_api.cc). They run behind the same gate as /v1/* (key,
// body limit, readiness) and render chat templates under the same budget, on
// the request's own worker; /v1/responses generates through the same Run.
#include <algorithm>

#include "http/json_fields.h"
#include "server/intake.h"
#include "server/openai/responses_api.h"
#include "server/openai/tokenize_api.h"
#include "server/record_builder.h"
#include "server/server_internal.h"
#include "server/structured/structured_output.h"

namespace stet::server {

using httplib::Request;
using httplib::Response;

namespace {

using BodyFn = std::function<ApiOr<Json>(const Json& body, std::optional<int64_t> now_unix)>;

// Parses the body and the template clock, answers what `fn` makes of them.
void Answer(const Request& req, Response& res, const BodyFn& fn) {
  auto body = ParseBody(req.body);
  const ReleaseOnExit release(body);
  if (!body.ok()) return SendError(res, body.error());
  auto clock = ReadStetClock(*body);
  if (!clock.ok()) return SendError(res, clock.error());
  auto out = fn(*body, *clock);
  if (!out.ok()) return SendError(res, out.error());
  SendJson(res, 200, *out);
}

}  // namespace

void Server::Impl::HandleResponses(const Request& req, Response& res) {
  Intake<ResponsesRequest> in(
      *this, req, res, [this](const Json& b) { return ParseResponsesRequest(b, info.names); });
  if (!in.ok()) return;
  ApiOr<Json>& body = in.body;
  std::optional<ResponsesRequest>& r = in.request;
  const std::string& received_at = in.received_at;
  const bool return_token_ids = in.return_token_ids;
  const bool seed_generated = in.seed_generated;
  const uint64_t seed = in.seed;
  const int64_t now_unix = in.clock.value_or(ChatTemplateOptions{}.now_unix);
  const RequestLimits limits = engine->limits();
  CommonFields& s = r->s;
  const ResponsesTools& tools = r->tools;
  if (!tools.forced.empty()) {  // tool_choice "required" / named: calls in the template's format
    if (auto e = ForceToolCalls(*tool_format, tools.chat_tools,
                                tools.forced == "*" ? "" : tools.forced, tools.parallel, &s.params))
      return SendError(res, *e);
  }
  s.params.cache_salt = CacheSalt(req, s.cache_salt);  // the tenant's prefix-cache scope
  for (const std::string& stop : chat->extra_stops()) s.params.stop.push_back(stop);
  RequestRecord& rec = CurrentRecord();
  rec.stream = s.stream;
  rec.seed = seed;

  std::string rendered;
  auto ids = chat->Build(r->messages, tools.chat_tools, opts.recorder ? &rendered : nullptr,
                         now_unix, max_prompt_bytes);
  if (!ids.ok()) {
    ApiError e = ids.error();
    if (e.param == "messages") e.param = "input";
    return SendError(res, e);
  }
  auto rp = BuildParams(s, std::move(*ids), limits, limits.n_ctx, "input");
  if (!rp.ok()) return SendError(res, rp.error());
  std::vector<RequestParams> params;
  params.push_back(std::move(*rp));
  RecordFn record;
  if (opts.recorder) {
    record = ChatRecord(NewRecord(*body, "/v1/responses", received_at, seed, seed_generated),
                        now_unix, in.clock.has_value(), std::move(rendered), params);
  }

  ResponsesShape shape = r->shape;
  shape.meta = Meta(seed);
  const PieceFn piece = Piece();
  const ToolParseFn parse = tools.parse ? ToolParser(tools.chat_tools, seed) : nullptr;
  std::shared_ptr<Stream> hooks;
  if (s.stream) {
    hooks = std::make_shared<Stream>();
    hooks->done_marker = false;  // the Responses API ends with response.completed
    auto rs = std::make_shared<ResponsesStream>(shape, piece);
    if (parse) rs->SetToolParsing(parse);
    hooks->start = [rs] { return rs->Start(); };
    hooks->event = [rs](int, const Job::Item& it, bool shown) -> std::string {
      switch (it.ev.kind) {
        case RequestEvent::Kind::kPromptScored:
          return "";
        case RequestEvent::Kind::kToken:
          return rs->Token(it.ev.text_delta, shown ? &it.ev.token : nullptr);
        case RequestEvent::Kind::kFinished:
          return rs->Finish(it.ev.text_delta, it.ev.finish);
      }
      return "";
    };
    hooks->usage = [rs](const UsageCounts& u) { return rs->Done(u); };
  }
  std::vector<int32_t> prompt_ids;
  if (return_token_ids) prompt_ids = params[0].prompt;
  auto build = [shape, piece, parse, return_token_ids, prompt_ids](
                   std::vector<ChoiceResult>& choices, const UsageCounts& u) {
    Json j = ResponsesBody(shape, choices.at(0), u, piece, parse);
    if (return_token_ids) {
      j["prompt_token_ids"] = prompt_ids;
      Json ids = Json::array();
      for (const TokenOut& t : choices.at(0).tokens) ids.push_back(t.id);
      j["token_ids"] = std::move(ids);
    }
    return j;
  };
  Run(std::move(in.slot), std::move(params), s.stream, hooks, build, "input", res,
      std::move(record));
}

TokenizerView Server::Impl::TokenizerViewOf() const {
  TokenizerView v{engine->tokenizer(), *chat, info.names, engine->n_ctx()};
  // Never less than what could fit the context; at least 1 MiB, so documents can be counted.
  v.max_text_bytes = std::max<size_t>(max_prompt_bytes, size_t{1} << 20);
  v.max_tokens_returned = std::max<size_t>(16384, static_cast<size_t>(engine->n_ctx()) * 4);
  return v;
}

void Server::Impl::HandleTokenize(const Request& req, Response& res) {
  Slot slot = AdmitOrRefuse(res);  // under --max-queue, before any parsing or tokenizing
  if (!slot) return;
  const TokenizerView v = TokenizerViewOf();
  Answer(req, res,
         [&v](const Json& b, std::optional<int64_t> now) { return TokenizeBody(b, v, now); });
}

void Server::Impl::HandleDetokenize(const Request& req, Response& res) {
  Slot slot = AdmitOrRefuse(res);  // under --max-queue, before any parsing or tokenizing
  if (!slot) return;
  const TokenizerView v = TokenizerViewOf();
  Answer(req, res, [&v](const Json& b, std::optional<int64_t>) { return DetokenizeBody(b, v); });
}

void Server::Impl::HandleApplyTemplate(const Request& req, Response& res) {
  Slot slot = AdmitOrRefuse(res);  // under --max-queue, before any parsing or tokenizing
  if (!slot) return;
  const TokenizerView v = TokenizerViewOf();
  Answer(req, res,
         [&v](const Json& b, std::optional<int64_t> now) { return ApplyTemplateBody(b, v, now); });
}

void Server::Impl::HandleTokenizerInfo(const Request&, Response& res) {
  Slot slot = AdmitOrRefuse(res);
  if (!slot) return;
  const TokenizerView v = TokenizerViewOf();
  SendJson(res, 200, TokenizerInfo(v, chat_template_sha256));
}

}  // namespace stet::server

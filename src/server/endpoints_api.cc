// Handlers of the endpoints beyond Completions and Chat: /v1/responses (its
// parser handed to the one generation path, Serve) and the tokenizer and
// template endpoints (bodies in tokenize_api.cc). They run behind the same
// gate as /v1/* (key, body limit, readiness) and render chat templates under
// the same budget, on the request's own worker.
#include <algorithm>

#include "http/json_fields.h"
#include "server/openai/responses_api.h"
#include "server/openai/tokenize_api.h"
#include "server/server_internal.h"

namespace stet::server {

using httplib::Request;
using httplib::Response;

namespace {

using BodyFn = std::function<ApiOr<Json>(const Json& body, std::optional<int64_t> now_unix)>;

// Parses the body and the template clock, answers what `fn` makes of them.
void Respond(const Request& req, Response& res, const BodyFn& fn) {
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
  Serve(req, res, [this](const Json& b) { return ParseResponsesRequest(b, info.names); });
}

TokenizerView Server::Impl::TokenizerViewOf() const {
  TokenizerView v{engine->tokenizer(), *chat, info.names, engine->n_ctx()};
  // Never less than what could fit the context; at least 1 MiB, so documents can be counted.
  v.max_text_bytes = std::max<size_t>(model.max_prompt_bytes, size_t{1} << 20);
  v.max_tokens_returned = std::max<size_t>(16384, static_cast<size_t>(engine->n_ctx()) * 4);
  return v;
}

void Server::Impl::AnswerWithTokenizer(const Request& req, Response& res,
                                       const TokenizerBodyFn& body) {
  Slot slot = AdmitOrRefuse(res);  // under --max-queue, before any parsing or tokenizing
  if (!slot) return;
  const TokenizerView v = TokenizerViewOf();
  Respond(req, res, [&](const Json& b, std::optional<int64_t> now) { return body(b, v, now); });
}

void Server::Impl::HandleTokenize(const Request& req, Response& res) {
  AnswerWithTokenizer(req, res, TokenizeBody);
}

void Server::Impl::HandleDetokenize(const Request& req, Response& res) {
  AnswerWithTokenizer(req, res, [](const Json& b, const TokenizerView& v, std::optional<int64_t>) {
    return DetokenizeBody(b, v);
  });
}

void Server::Impl::HandleApplyTemplate(const Request& req, Response& res) {
  AnswerWithTokenizer(req, res, ApplyTemplateBody);
}

void Server::Impl::HandleTokenizerInfo(const Request&, Response& res) {
  Slot slot = AdmitOrRefuse(res);
  if (!slot) return;
  const TokenizerView v = TokenizerViewOf();
  SendJson(res, 200, TokenizerInfo(v, model.template_sha256));
}

}  // namespace stet::server

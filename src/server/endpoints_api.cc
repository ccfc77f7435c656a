// Handlers of the endpoints beyond Completions and Chat: the tokenizer and
// template endpoints (bodies in tokenize_api.cc). They run behind the same
// gate as /v1/* (key, body limit, readiness) and render chat templates under
// the same budget, on the request's own worker.
#include "server/json_fields.h"
#include "server/record_builder.h"
#include "server/server_internal.h"
#include "server/tokenize_api.h"

namespace stet::server {

using httplib::Request;
using httplib::Response;

namespace {

using BodyFn = std::function<ApiOr<Json>(const Json& body, std::optional<int64_t> now_unix)>;

// Parses the body and the template clock, answers what `fn` makes of them.
void Answer(const Request& req, Response& res, const BodyFn& fn) {
  auto body = ParseBody(req.body);
  if (!body.ok()) return SendError(res, body.error());
  auto clock = ReadStetClock(*body);
  if (!clock.ok()) return SendError(res, clock.error());
  auto out = fn(*body, *clock);
  if (!out.ok()) return SendError(res, out.error());
  SendJson(res, 200, *out);
}

}  // namespace

void Server::Impl::HandleTokenize(const Request& req, Response& res) {
  const TokenizerView v{engine->tokenizer(), *chat, info.names, engine->n_ctx()};
  Answer(req, res,
         [&v](const Json& b, std::optional<int64_t> now) { return TokenizeBody(b, v, now); });
}

void Server::Impl::HandleDetokenize(const Request& req, Response& res) {
  const TokenizerView v{engine->tokenizer(), *chat, info.names, engine->n_ctx()};
  Answer(req, res, [&v](const Json& b, std::optional<int64_t>) { return DetokenizeBody(b, v); });
}

void Server::Impl::HandleApplyTemplate(const Request& req, Response& res) {
  const TokenizerView v{engine->tokenizer(), *chat, info.names, engine->n_ctx()};
  Answer(req, res,
         [&v](const Json& b, std::optional<int64_t> now) { return ApplyTemplateBody(b, v, now); });
}

void Server::Impl::HandleTokenizerInfo(const Request&, Response& res) {
  const TokenizerView v{engine->tokenizer(), *chat, info.names, engine->n_ctx()};
  SendJson(res, 200, TokenizerInfo(v, chat_template_sha256));
}

}  // namespace stet::server

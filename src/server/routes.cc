// The route table and what reads it before a handler runs: the gate (host,
// method, key, framing, Content-Type, before any body byte), the body read
// under its limits, readiness, and the registration with httplib.
#include "server/routes.h"

#include <cctype>
#include <string_view>

#include "base/random_id.h"
#include "http/json_fields.h"

namespace stet::server {

using httplib::Request;
using httplib::Response;
using HandlerResponse = httplib::Server::HandlerResponse;
using Impl = Server::Impl;

const std::vector<Route>& RouteTable() {
  using A = RouteAccess;
  static const std::vector<Route> kRoutes = {
      {"POST", "/v1/chat/completions", A::kKeyed, true, "chatcmpl-", &Impl::HandleChat,
       "chat with the model's own chat template; `stream: true` for SSE; tool calls parsed out of "
       "the answer"},
      {"POST", "/v1/completions", A::kKeyed, true, "cmpl-", &Impl::HandleCompletions,
       "text completion; `stream: true` for SSE"},
      {"POST", "/v1/responses", A::kKeyed, true, "resp_", &Impl::HandleResponses,
       "OpenAI's Responses API over the same chat template (see [The Responses "
       "API](#the-responses-api))"},
      {"POST", "/tokenize", A::kKeyed, false, "req-", &Impl::HandleTokenize,
       "vLLM's and llama.cpp's tokenizer endpoint (see [Tokenizer and template "
       "endpoints](#tokenizer-and-template-endpoints))"},
      {"POST", "/detokenize", A::kKeyed, false, "req-", &Impl::HandleDetokenize,
       "token ids back to text, in vLLM's and llama.cpp's shapes (same section)"},
      {"POST", "/apply-template", A::kKeyed, false, "req-", &Impl::HandleApplyTemplate,
       "llama.cpp's: messages → the exact prompt text the chat endpoint renders"},
      {"GET", "/tokenizer_info", A::kKeyed, false, "req-", &Impl::HandleTokenizerInfo,
       "the vocabulary's kind, size and special tokens, the context length, the chat template"},
      {"GET", "/v1/models", A::kKeyed, false, "req-", &Impl::HandleModels,
       "the served model (`id`, `owned_by: \"stet\"`, `max_model_len`, `system_fingerprint`, "
       "`chat_template`: `{\"builtin\", \"name\"}`)"},
      {"GET", "/v1/models/{id}", A::kKeyed, false, "req-", &Impl::HandleModels,
       "the served model by its id; another id is 404 `model_not_found`"},
      {"GET", "/health", A::kOpen, false, "req-", &Impl::HandleHealth,
       "200 ready, 503 loading, draining or failed (a tensor-parallel rank lost); never needs a "
       "key"},
      {"GET", "/metrics", A::kMetrics, false, "req-", &Impl::HandleMetrics,
       "Prometheus text format 0.0.4; needs the key when the server has one, unless "
       "`--metrics-public`"},
  };
  return kRoutes;
}

namespace {

const Route* FindExact(const std::string& path) {
  for (const Route& r : RouteTable()) {
    const std::string_view p = r.path;
    const size_t open = p.find("{id}");
    if (open == std::string_view::npos
            ? path == p
            : path.size() > open && path.compare(0, open, p.substr(0, open)) == 0) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace

// "/chat/completions" is "/v1/chat/completions" (llama.cpp serves both).
const Route* FindRoute(const std::string& path) {
  if (const Route* r = FindExact(path)) return r;
  if (path.rfind("/v1/", 0) == 0 || path.empty() || path[0] != '/') return nullptr;
  const Route* r = FindExact("/v1" + path);
  return r && std::string_view(r->path).rfind("/v1/", 0) == 0 ? r : nullptr;
}

std::string EndpointLabel(const std::string& path) {
  const Route* r = FindRoute(path);
  return r ? r->path : "other";
}

namespace {

bool IsPost(const Route& r) { return std::string_view(r.method) == "POST"; }

// Every /v1/* path, known or not, is keyed (an unknown one answers 404 only to a keyed caller).
bool NeedsKey(const std::string& path, const Route* r, bool metrics_public) {
  if (path.rfind("/v1/", 0) == 0) return true;
  if (!r) return false;
  return r->access == RouteAccess::kKeyed ||
         (r->access == RouteAccess::kMetrics && !metrics_public);
}

// Refused with 503 while the model loads or the server drains.
bool NeedsReady(const std::string& path, const Route* r) {
  return path.rfind("/v1/", 0) == 0 || (r && r->access == RouteAccess::kKeyed);
}

// The request's Origin when --cors-origin allows it, else "".
std::string AllowedOrigin(const Request& req, const std::vector<std::string>& allowed) {
  if (allowed.empty() || req.get_header_value_count("Origin") != 1) return "";
  const std::string origin = req.get_header_value("Origin");
  for (const std::string& a : allowed) {
    if (a == "*" || a == origin) return origin;
  }
  return "";
}

// A preflight's Access-Control-Request-Headers, echoed when it is a plain list
// of header names (the openai JS client sends its own x-stainless-* headers).
std::string RequestedHeaders(const Request& req) {
  const std::string h = req.get_header_value("Access-Control-Request-Headers");
  if (h.size() > 1024) return "Authorization, Content-Type";
  for (char c : h) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ',' ||
          c == ' '))
      return "Authorization, Content-Type";
  }
  return h.empty() ? "Authorization, Content-Type" : h;
}

// "/v1/models/{id}" -> httplib's regex "/v1/models/(.+)".
std::string HttplibPattern(const char* path) {
  std::string p = path;
  const size_t open = p.find("{id}");
  if (open != std::string::npos) p.replace(open, 4, "(.+)");
  return p;
}

}  // namespace

std::optional<ApiError> Server::Impl::Gate(const Request& req) const {
  if (auto e = CheckHost(req, hosts)) return e;
  if (req.method != "GET" && req.method != "HEAD" && req.method != "POST") {
    return MakeError(405, "invalid_request_error", "method_not_allowed",
                     "Method " + SanitizeUtf8(req.method) + " is not supported (GET, HEAD, POST).");
  }
  if (auto e = CheckAuthorizationHeader(req)) return e;
  const Route* route = FindRoute(req.path);
  if (NeedsKey(req.path, route, opts.metrics_public) && !Authorized(req)) {
    return MakeError(401, "invalid_request_error", "invalid_api_key",
                     "Incorrect or missing API key: send 'Authorization: Bearer <key>'.");
  }
  if (auto e = CheckFraming(req, opts.max_body_bytes)) return e;
  if (req.method == "POST") {
    if (!route || !IsPost(*route)) {
      if (route) {
        return MakeError(405, "invalid_request_error", "method_not_allowed",
                         "Use GET for " + req.path + ".");
      }
      return MakeError(404, "invalid_request_error", "unknown_url",
                       "Unknown endpoint: POST " + SanitizeUtf8(req.path));
    }
    if (auto e = CheckJsonContentType(req)) return e;
  }
  return std::nullopt;
}

void Server::Impl::WithBody(const Request& req, Response& res, const httplib::ContentReader& read,
                            void (Impl::*handle)(const Request&, Response&)) {
  std::string body;
  if (req.has_header("Content-Length"))
    body.reserve(req.get_header_value<uint64_t>("Content-Length"));
  // Gate refused any Content-Encoding: the count is of the bytes sent.
  const BodyRead got = ReadBody(read, opts.max_body_bytes, &body);
  if (got != BodyRead::kComplete) {
    CloseAfter(res);
    if (got == BodyRead::kTooLarge) {
      return SendError(
          res, MakeError(413, "invalid_request_error", "request_too_large",
                         "The request body is larger than this server accepts (--max-body-bytes " +
                             std::to_string(opts.max_body_bytes) + ")."));
    }
    if (CurrentConnRequest().deadline_hit) {
      return SendError(
          res,
          MakeError(408, "invalid_request_error", "request_timeout",
                    "The request body did not arrive in time (--body-timeout " +
                        std::to_string(opts.body_timeout_s) + " s, --read-timeout " +
                        std::to_string(opts.read_timeout_s) +
                        " s between reads, at least --body-min-rate " +
                        std::to_string(opts.body_min_rate) + " bytes/s after the first 5 s)."));
    }
    return SendError(
        res, BadRequest("The request body is incomplete or its chunked framing is malformed."));
  }
  Request full = req;
  full.body = std::move(body);
  (this->*handle)(full, res);
}

void Server::Impl::Routes() {
  http.Configure(opts.keep_alive_s, kMaxRequestsPerConnection, opts.max_body_bytes);

  const auto refuse = [](const Request& req, Response& res, const ApiError& e) {
    if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
    if (e.status == 405) {
      const Route* route = FindRoute(req.path);
      res.set_header("Allow", !route ? "GET, HEAD, POST" : IsPost(*route) ? "POST" : "GET, HEAD");
    }
    CloseAfter(res);
    SendError(res, e);
  };
  // curl sends "Expect: 100-continue" for large bodies: refuse before it sends one.
  http.set_expect_100_continue_handler([this, refuse](const Request& req, Response& res) {
    if (auto e = Gate(req)) {
      refuse(req, res, *e);
      return e->status;
    }
    return 100;
  });
  http.set_pre_routing_handler([this, refuse](const Request& req, Response& res) {
    RequestRecord& r = CurrentRecord();
    const Route* route = FindRoute(req.path);
    r = RequestRecord{};
    r.active = true;
    r.start = Clock::now();
    r.endpoint = EndpointLabel(req.path);
    r.id = (route ? route->id_prefix : "req-") + RandomHex(24);
    res.set_header("X-Request-Id", r.id);
    if (const std::string origin = AllowedOrigin(req, opts.cors_origins); !origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", origin);  // errors too: a page reads them
      res.set_header("Vary", "Origin");
      res.set_header("Access-Control-Expose-Headers", "X-Request-Id");
      if (req.method == "OPTIONS" && req.has_header("Access-Control-Request-Method")) {
        if (auto e = CheckHost(req, hosts)) {
          refuse(req, res, *e);
          return HandlerResponse::Handled;
        }
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", "GET, HEAD, POST");
        res.set_header("Access-Control-Allow-Headers", RequestedHeaders(req));
        res.set_header("Access-Control-Max-Age", "600");
        return HandlerResponse::Handled;
      }
    }
    if (auto e = Gate(req)) {
      refuse(req, res, *e);
      return HandlerResponse::Handled;
    }
    if (!NeedsReady(req.path, route)) return HandlerResponse::Unhandled;
    if (draining) {
      CloseAfter(res);
      SendError(res,
                MakeError(503, "server_error", "shutting_down", "The server is shutting down."));
      return HandlerResponse::Handled;
    }
    if (!ready) {
      res.set_header("Retry-After", "1");
      CloseAfter(res);
      SendError(res,
                MakeError(503, "server_error", "model_loading", "The model is still loading."));
      return HandlerResponse::Handled;
    }
    return HandlerResponse::Unhandled;
  });
  // Runs after httplib added its connection headers: an answer that closes its
  // connection says so once, without a Keep-Alive promise.
  http.set_post_routing_handler([](const Request&, Response& res) {
    if (!CurrentConnRequest().close_after) return;
    res.headers.erase("Keep-Alive");
    res.headers.erase("Connection");
    res.set_header("Connection", "close");
  });
  http.set_logger([this](const Request& req, const Response& res) { LogRequest(req, res); });
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const Request& req,
                                                                 Response& res) {
    if (!res.body.empty()) return HandlerResponse::Unhandled;
    // httplib's own refusals: a request it could not parse, or whose body it did not read.
    if (res.status != 404 || (req.method != "GET" && req.method != "HEAD")) CloseAfter(res);
    switch (res.status) {
      case 404:
        SendError(res, MakeError(404, "invalid_request_error", "unknown_url",
                                 "Unknown endpoint: " + req.method + " " + SanitizeUtf8(req.path)));
        break;
      case 413:
        SendError(
            res,
            MakeError(413, "invalid_request_error", "request_too_large",
                      "The request body is larger than this server accepts (--max-body-bytes)."));
        break;
      case 400:
        SendError(res, MakeError(400, "invalid_request_error", "", "Malformed HTTP request."));
        break;
      default:
        SendError(
            res, MakeError(res.status, res.status >= 500 ? "server_error" : "invalid_request_error",
                           "", "HTTP status " + std::to_string(res.status)));
    }
    return HandlerResponse::Handled;
  }));
  // Out of memory for one request: the process goes on; the client may retry later.
  http.OnHandlerException(
      [](Response& res) {
        SendError(res, MakeError(503, "server_error", "out_of_memory",
                                 "the server ran out of memory for this request; it was dropped "
                                 "and the server goes on. Retry later or send a smaller request."));
      },
      [](Response& res, const std::string& what) {
        SendError(res, MakeError(500, "server_error", "internal_error", "internal error: " + what));
      });

  // POST rows read their body through a content reader: httplib hands it over
  // as it arrives instead of buffering all of it (chunked without limit).
  const auto not_allowed = [](const Request& q, Response& r) {
    r.set_header("Allow", "POST");
    SendError(r, MakeError(405, "invalid_request_error", "method_not_allowed",
                           "Use POST for " + q.path + "."));
  };
  for (const Route& route : RouteTable()) {
    const std::string path = route.path;
    std::vector<std::string> patterns = {HttplibPattern(route.path)};
    if (path.rfind("/v1/", 0) == 0) patterns.push_back(HttplibPattern(route.path + 3));
    const Route::Handler handle = route.handle;
    for (const std::string& pattern : patterns) {
      if (IsPost(route)) {
        http.Post(pattern, [this, handle](const Request& q, Response& r,
                                          const httplib::ContentReader& read) {
          WithBody(q, r, read, handle);
        });
        http.Get(pattern, not_allowed);
      } else {
        http.Get(pattern, [this, handle](const Request& q, Response& r) { (this->*handle)(q, r); });
      }
    }
  }
}

}  // namespace stet::server

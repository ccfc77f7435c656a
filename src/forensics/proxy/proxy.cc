// The listening side of `stet proxy`, on stet serve's transport (http_conn's
// connection loop under httplib's parser, http_gate's header checks): routes,
// the checks made before any body byte is read, /health on reserved workers,
// one JSON log line per relayed request, and the drain on shutdown.
#include <cmath>
#include <cstdio>
#include <new>
#include <thread>

#include "base/utc_time.h"
#include "forensics/proxy/proxy_internal.h"

namespace stet::forensics {

using httplib::Request;
using httplib::Response;
using HandlerResponse = httplib::Server::HandlerResponse;
using server::CloseAfter;

namespace {

constexpr int kLightWorkers = 4;  // /health
constexpr int kMaxRequestsPerConnection = 1000;

std::string UpstreamBase(std::string u) {
  while (!u.empty() && u.back() == '/') u.pop_back();
  if (u.size() >= 3 && u.compare(u.size() - 3, 3, "/v1") == 0) u.resize(u.size() - 3);
  return u;
}

}  // namespace

Status CheckProxyOptions(const ProxyOptions& o) {
  if (o.upstream.rfind("http://", 0) != 0 && o.upstream.rfind("https://", 0) != 0) {
    return InvalidArgument("--upstream must be an http:// or https:// URL, not '" + o.upstream +
                           "'");
  }
  if (UpstreamBase(o.upstream).find('/', o.upstream.find("://") + 3) == std::string::npos &&
      UpstreamBase(o.upstream).size() <= o.upstream.find("://") + 3) {
    return InvalidArgument("--upstream '" + o.upstream + "' names no host");
  }
  if (o.port < 0 || o.port > 65535) return InvalidArgument("--port must be in [0, 65535]");
  if (!(o.logprob_sample >= 0 && o.logprob_sample <= 1)) {
    return InvalidArgument("--logprob-sample must be in [0, 1]");
  }
  if (o.top_logprobs < 1 || o.top_logprobs > 20)
    return InvalidArgument("--top-logprobs must be in [1, 20]");
  if (o.workers < 1) return InvalidArgument("--workers must be >= 1");
  if (o.limits.timeout_ms < 1 || o.limits.connect_timeout_ms < 1) {
    return InvalidArgument("--upstream-timeout and --connect-timeout must be positive");
  }
  if (o.max_body_bytes < 1024) return InvalidArgument("--max-body-bytes must be >= 1024");
  if (!o.api_keys.empty() && o.upstream_key.empty()) {
    return InvalidArgument(
        "--api-key needs --upstream-key-env: the client's Authorization carries the proxy's key, "
        "so the "
        "upstream needs its own");
  }
  for (const std::string& k : o.api_keys) {
    if (k.empty()) return InvalidArgument("--api-key must not be empty");
  }
  auto hosts = server::MakeHostPolicy(o.host, o.allowed_hosts);
  return hosts.ok() ? Status::Ok() : hosts.status();
}

void Proxy::Impl::SendError(Response& res, int status, const std::string& type,
                            const std::string& code, const std::string& message) {
  server::ApiError e;
  e.status = status;
  e.type = type;
  e.code = code;
  e.message = message;
  res.status = status;
  res.set_content(server::ErrorBody(e), "application/json");
}

std::optional<server::ApiError> Proxy::Impl::Gate(const Request& req) const {
  const auto error = [](int status, std::string code, std::string message) {
    server::ApiError e;
    e.status = status;
    e.code = std::move(code);
    e.message = std::move(message);
    return e;
  };
  if (auto e = server::CheckHost(req, hosts)) return e;
  if (req.method != "GET" && req.method != "HEAD" && req.method != "POST" &&
      req.method != "DELETE") {
    return error(405, "method_not_allowed",
                 "Method not supported by stet proxy (GET, HEAD, POST, DELETE).");
  }
  if (auto e = server::CheckAuthorizationHeader(req)) return e;
  if (!keys.empty() && req.path != "/health") {
    const std::string key = server::BearerKey(req);
    if (key.empty() || keys.Find(key) < 0)
      return error(401, "invalid_api_key", "Incorrect or missing API key for this proxy.");
  }
  if (auto e = server::CheckFraming(req, opts.max_body_bytes)) return e;
  if (req.method == "POST") {
    if (auto e = server::CheckJsonContentType(req)) return e;
  }
  return std::nullopt;
}

void Proxy::Impl::Log(const Relay& r) {
  if (!opts.log_requests) return;
  WireJson j = WireJson::object();
  j["ts"] = NowIso8601();
  j["id"] = r.id;
  j["method"] = r.method;
  j["path"] = r.path;
  j["status"] = r.client_status;
  j["upstream_status"] = r.upstream_status > 0 ? WireJson(r.upstream_status) : WireJson();
  j["stream"] = r.streamed;
  j["total_ms"] =
      std::round(std::chrono::duration<double, std::milli>(ProxyClock::now() - r.start).count() *
                 10) /
      10;
  if (r.ttft_ms >= 0) j["ttft_ms"] = std::round(r.ttft_ms * 10) / 10;
  if (r.draw) j["logprobs_sampled"] = r.draw->sampled;
  j["recorded"] = r.recorded_path && opts.store && r.record_ok;
  if (r.outcome != "ok") j["outcome"] = r.outcome;
  if (!r.error.empty()) j["error"] = r.error;
  const std::string line = j.dump(-1, ' ', false, WireJson::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(log_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

void Proxy::Impl::Routes() {
  http.Configure(opts.keep_alive_s, kMaxRequestsPerConnection, opts.max_body_bytes);
  const auto refuse = [this](Response& res, const server::ApiError& e) {
    if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
    CloseAfter(res);
    res.status = e.status;
    res.set_content(server::ErrorBody(e), "application/json");
  };
  http.set_expect_100_continue_handler([this, refuse](const Request& req, Response& res) {
    if (auto e = Gate(req)) {
      refuse(res, *e);
      return e->status;
    }
    return 100;
  });
  http.set_pre_routing_handler([this, refuse](const Request& req, Response& res) {
    if (auto e = Gate(req)) {
      refuse(res, *e);
      return HandlerResponse::Handled;
    }
    if (draining && req.path != "/health") {
      CloseAfter(res);
      SendError(res, 503, "server_error", "shutting_down", "The proxy is shutting down.");
      return HandlerResponse::Handled;
    }
    return HandlerResponse::Unhandled;
  });
  http.set_post_routing_handler([](const Request&, Response& res) {
    if (!server::CurrentConnRequest().close_after) return;
    res.headers.erase("Keep-Alive");
    res.headers.erase("Connection");
    res.set_header("Connection", "close");
  });
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([this](const Request& req, Response& res) {
        if (!res.body.empty()) return HandlerResponse::Handled;
        if (res.status != 404) CloseAfter(res);
        SendError(res, res.status, res.status >= 500 ? "server_error" : "invalid_request_error", "",
                  res.status == 413
                      ? "The request body is larger than this proxy accepts (--max-body-bytes)."
                      : "HTTP status " + std::to_string(res.status) + " for " + req.method + " " +
                            req.path);
        return HandlerResponse::Handled;
      }));
  http.OnHandlerException(
      [this](Response& res) {
        SendError(
            res, 503, "server_error", "out_of_memory",
            "stet proxy: out of memory for this exchange; it was dropped and the proxy goes on. "
            "Retry later.");
      },
      [this](Response& res, const std::string& what) {
        SendError(res, 500, "server_error", "internal_error",
                  "stet proxy: internal error: " + what);
      });

  http.Get("/health", [this](const Request&, Response& res) {
    WireJson j = {{"status", draining ? "draining" : "ok"},
                  {"upstream", upstream_shown},
                  {"store", opts.store ? WireJson(opts.store->Describe()) : WireJson()},
                  {"recorded", recorded.load()},
                  {"in_flight", in_flight.load()}};
    res.set_content(j.dump(), "application/json");
  });
  // Bodies are read through a counting reader: at most --max-body-bytes, however framed.
  const auto with_body = [this](const Request& req, Response& res,
                                const httplib::ContentReader& read) {
    std::string body;
    const server::BodyRead got = server::ReadBody(read, opts.max_body_bytes, &body);
    if (got != server::BodyRead::kComplete) {
      CloseAfter(res);
      if (got == server::BodyRead::kTooLarge) {
        return SendError(res, 413, "invalid_request_error", "request_too_large",
                         "The request body is larger than this proxy accepts (--max-body-bytes " +
                             std::to_string(opts.max_body_bytes) + ").");
      }
      return SendError(res, server::CurrentConnRequest().deadline_hit ? 408 : 400,
                       "invalid_request_error", "incomplete_body",
                       "The request body did not arrive complete and in time.");
    }
    Handle(req, res, std::move(body));
  };
  http.Post(".*", with_body);
  http.Delete(".*", with_body);
  http.Get(".*", [this](const Request& req, Response& res) { Handle(req, res, ""); });
}

Result<std::unique_ptr<Proxy>> Proxy::Start(const ProxyOptions& options) {
  STET_RETURN_IF_ERROR(CheckProxyOptions(options));
  STET_ASSIGN_OR_RETURN(server::HostPolicy hosts,
                        server::MakeHostPolicy(options.host, options.allowed_hosts));
  std::unique_ptr<Proxy> p(new Proxy());
  p->impl_ = std::make_unique<Impl>();
  Impl& I = *p->impl_;
  I.opts = options;
  I.hosts = std::move(hosts);
  I.keys = server::ApiKeyDigests(options.api_keys);
  I.upstream_base = UpstreamBase(options.upstream);
  I.upstream_shown = MaskUrlPassword(I.upstream_base);
  I.Routes();
  STET_ASSIGN_OR_RETURN(I.port, server::Listen(I.http, options.host, options.port));
  server::ConnLimits lim;
  lim.header_timeout = std::chrono::seconds(options.header_timeout_s);
  lim.body_timeout = std::chrono::seconds(options.body_timeout_s);
  lim.idle_timeout = std::chrono::seconds(options.keep_alive_s);
  lim.io_timeout = std::chrono::seconds(options.read_timeout_s);
  lim.workers = options.workers;
  lim.light_workers = kLightWorkers;
  lim.max_requests_per_connection = kMaxRequestsPerConnection;
  // Only /health is light: a pass-through GET waits on the upstream like a POST.
  lim.light = [](std::string_view line) {
    return line.rfind("GET /health ", 0) == 0 || line.rfind("HEAD /health ", 0) == 0;
  };
  I.conns = server::StartServing(I.http, lim, nullptr);
  return p;
}

Proxy::~Proxy() {
  if (impl_) Shutdown(0);
}

int Proxy::port() const { return impl_->port; }
int64_t Proxy::recorded() const { return impl_->recorded.load(); }

void Proxy::Shutdown(int drain_s) {
  Impl& I = *impl_;
  std::call_once(I.shutdown_once, [&I, drain_s] {
    I.draining = true;
    if (I.conns) I.conns->StopAccepting();
    const auto until = ProxyClock::now() + std::chrono::seconds(drain_s);
    while (I.in_flight.load() > 0 && ProxyClock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (I.conns) I.conns->Stop();
    I.http.CloseListenSocket();
  });
}

}  // namespace stet::forensics

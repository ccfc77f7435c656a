// Internals shared by proxy.cc (listening side: routes, checks, lifecycle,
// logs) and proxy_relay.cc (one exchange: upstream call, streaming relay,
// record). Not part of the proxy's API.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "forensics/client/answer_shaping.h"
#include "forensics/proxy/proxy.h"
#include "forensics/proxy/proxy_path.h"
#include "http/api_error.h"
#include "http/http_conn.h"
#include "http/http_gate.h"
#include "http/http_server.h"
#include "wire/stream_fold.h"

namespace stet::forensics {

// Read through the OpenAI wire module (src/wire).
using wire::ApiKind;
using wire::ApiKindOfPath;
using wire::IsTerminalEvent;
using wire::SseEvent;
using wire::SseParser;
using wire::StreamFold;

using ProxyClock = std::chrono::steady_clock;

// One request the proxy relays, from its arrival to its record.
struct Relay {
  ApiKind kind = ApiKind::kOther;
  bool recorded_path = false;  // chat / completions / responses: recorded
  std::string id;              // "pxy-...", also sent as X-Stet-Exchange-Id
  std::string method, path, target;
  HeaderList forward_headers;
  std::string context_header;
  std::string client_body;  // as received
  WireJson request;         // parsed client body (null: not JSON)
  bool client_stream = false;
  std::string sent_body;  // what went upstream (logprobs added on a sampled request)
  WireJson injected;      // the fields added (null: none)
  std::optional<SampleDraw> draw;
  std::optional<long> sample_refused_status;
  std::string received_at;
  ProxyClock::time_point start;
  std::unique_ptr<UpstreamCall> call = std::make_unique<UpstreamCall>();
  long upstream_status = 0;
  int client_status = 0;
  bool streamed = false;
  double ttft_ms = -1, headers_ms = -1;
  std::optional<StreamFold> fold;
  std::string pending;         // streamed bytes not yet relayed (an incomplete event)
  size_t scan_from = 0;        // of `pending`, where the search for an event's end resumes
  size_t pending_counted = 0;  // of `pending`, the bytes already in streamed_bytes
  size_t streamed_bytes = 0;   // upstream stream bytes received so far
  bool truncated = false;      // the answer passed --max-response-bytes
  std::string response_text;
  WireJson response;                        // folded or parsed answer (null: none)
  std::optional<server::ApiError> refusal;  // a field the proxy reads is malformed: not relayed
  std::string outcome = "ok";
  std::string error;
  bool finished = false;  // recorded (or recording failed)
  bool record_ok = true;
};

struct Proxy::Impl {
  ProxyOptions opts;
  std::string upstream_base;   // no trailing "/" or "/v1"
  std::string upstream_shown;  // the base with any password masked (records, logs)
  server::HostPolicy hosts;
  server::ApiKeyDigests keys;  // opts.api_keys as digests
  server::HttpServer http;
  std::unique_ptr<server::ConnectionLoop> conns;
  int port = 0;
  std::atomic<uint64_t> sample_index{0};
  std::atomic<int64_t> recorded{0};
  std::atomic<int> in_flight{0};
  std::atomic<bool> draining{false};
  std::mutex log_mu;
  std::once_flag shutdown_once;

  // proxy.cc
  void Routes();
  std::optional<server::ApiError> Gate(const httplib::Request& req) const;
  void Log(const Relay& r);
  void SendError(httplib::Response& res, int status, const std::string& type,
                 const std::string& code, const std::string& message);
  // proxy_relay.cc
  void Handle(const httplib::Request& req, httplib::Response& res, std::string body);
  void Prepare(const httplib::Request& req, const ProxyTarget& target, std::string body, Relay& r);
  bool StartUpstream(Relay& r);
  void AnswerWhole(std::shared_ptr<Relay> r, httplib::Response& res);
  void AnswerStream(std::shared_ptr<Relay> r, httplib::Response& res);
  bool RelayEvents(Relay& r, httplib::DataSink& sink, bool final_read);
  bool StreamTooLarge(Relay& r);
  bool Record(Relay& r);
  WireJson BuildRecord(const Relay& r) const;
};

}  // namespace stet::forensics

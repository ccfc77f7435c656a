// `stet proxy`: a recording reverse proxy in front of any OpenAI-compatible
// endpoint. /v1/chat/completions, /v1/completions and /v1/responses are relayed
// (SSE streams event by event as the upstream sends them) and recorded as
// `stet.exchange/1` records; every other path passes through unrecorded;
// /health is the proxy's own. Invariants: an answer the client received in
// full (a non-streamed body, or a stream's final event) was recorded first, so
// kill -9 loses no acknowledged exchange; the upstream key and the client's
// Authorization never reach a record or a log line; a slow or dead upstream
// holds only the requests waiting on it, never /health.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "forensics/client/upstream.h"
#include "forensics/store/exchange.h"
#include "forensics/store/exchange_store.h"

namespace stet::forensics {

struct ProxyOptions {
  std::string host = "127.0.0.1";
  int port = 8090;                    // 0: any free port (see Proxy::port())
  std::string upstream;               // base URL: http(s)://host[:port][/prefix][/v1]
  std::string upstream_key;           // non-empty: sent as the Bearer key instead of the client's
  std::vector<std::string> api_keys;  // non-empty: clients must present one (needs upstream_key)
  std::shared_ptr<ExchangeStore> store;  // where exchanges go; null: nothing is recorded
  UpstreamLimits limits;
  double logprob_sample = 0;  // share of chat/completions requests given logprobs
  uint64_t sample_seed = 0;
  int top_logprobs = 5;
  std::vector<RedactPath> redact;
  std::vector<std::string> allowed_hosts;  // as `stet serve --allowed-hosts`
  size_t max_body_bytes = 16u << 20;
  // The largest upstream answer relayed and recorded (a non-streamed body, a
  // stream in all, one SSE event): past it, 502 (or an error event) and a record
  // marked truncated.
  size_t max_response_bytes = 64u << 20;
  int workers = 64;  // requests relayed at once
  int header_timeout_s = 10, body_timeout_s = 60, read_timeout_s = 30, keep_alive_s = 5;
  std::string context_header = "X-Stet-Context";
  bool log_requests = true;
};

// Checks what Start would refuse (URL shape, ranges, keys, hosts).
Status CheckProxyOptions(const ProxyOptions& o);

class Proxy {
 public:
  static Result<std::unique_ptr<Proxy>> Start(const ProxyOptions& options);
  ~Proxy();
  int port() const;
  // Stops accepting, lets relayed requests finish (up to `drain_s`), closes everything.
  void Shutdown(int drain_s = 30);
  int64_t recorded() const;  // exchanges stored since Start

 private:
  struct Impl;
  Proxy() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stet::forensics

// `stet replay STORE` on exchanges `stet proxy` recorded: each recorded
// request is sent again, as it went upstream (the client's body plus any
// logprobs the proxy added; non-streamed), and its answer compared with the
// recorded one: choices, text or tool calls, token by token where both sides
// carry logprobs, finish reason; the answered model and system_fingerprint
// are compared too. Requests are grouped into sessions (a later chat request
// whose messages extend an earlier one's, as an agent's do with tool results),
// and the report names each session's first request and token where the
// replay departs. Invariant: the recorded messages are what is sent — no tool
// runs again, and an earlier departure never changes a later request.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "forensics/store/exchange_store.h"

namespace stet::forensics {

struct ProxyReplayOptions {
  std::string endpoint;
  std::string api_key;
  std::string model;      // non-empty: sent instead of the recorded model name
  bool logprobs = false;  // ask for logprobs (top 5) where the recorded request did not
  // The recorded instant (received_at) pinned on each request: as stet's own
  // metadata.stet_clock (what stet serve's chat template clock reads), and, on
  // request, also as a first system message / instructions line for endpoints
  // that have no such field. kNone sends the request as it went upstream.
  enum class Clock { kNone, kRecorded, kRecordedNote };
  Clock clock = Clock::kNone;
  int concurrency = 1;
  int64_t timeout_ms = 300000;
};

// Where a replayed answer first departs from the recorded one.
struct ExchangeDeparture {
  int choice = 0;
  std::string kind;   // "choices", "token", "text", "tool_calls", "finish_reason", "status"
  int position = -1;  // token index ("token"), byte offset ("text")
  std::string recorded, replayed;  // the token texts / values there
  std::optional<double> recorded_logprob, replayed_logprob;
  std::string context;  // recorded text before the departure (tail)
};

struct ExchangeReplay {
  std::string id, endpoint, received_at;
  int session = 0;      // 1-based session number
  int turn = 0;         // 1-based position in its session
  std::string verdict;  // "identical", "diverged", "error"
  std::string message;  // error text
  std::string recorded_model, replayed_model, recorded_fingerprint, replayed_fingerprint;
  bool compared_tokens = false;
  std::optional<ExchangeDeparture> departure;
};

struct ProxyReplayReport {
  std::vector<ExchangeReplay> outcomes;  // in record order
  int identical = 0, diverged = 0, errors = 0,
      skipped = 0;  // skipped: errors or no JSON request recorded
  int sessions = 0;
  bool model_changed = false, fingerprint_changed = false;
  int exit_code = 2;
  std::string summary;
};

// The body replay sends for an exchange record (null when it cannot be replayed).
nlohmann::ordered_json ProxyReplayBody(const ExchangeJson& record, const ProxyReplayOptions& o);
// Compares a recorded answer with a replayed one (either endpoint shape, or /v1/responses).
std::optional<ExchangeDeparture> CompareAnswers(const std::string& endpoint,
                                                const nlohmann::ordered_json& recorded,
                                                const nlohmann::ordered_json& replayed,
                                                bool* compared_tokens);
// Session number per record (1-based, in order of first appearance).
std::vector<int> SessionsOf(const std::vector<ExchangeJson>& records);

Result<ProxyReplayReport> RunProxyReplay(ExchangeStore& store, const ExchangeQuery& q,
                                         const ProxyReplayOptions& o);
std::string ProxyReplayText(const ProxyReplayReport& r);
nlohmann::json ProxyReplayJson(const ProxyReplayReport& r);

}  // namespace stet::forensics

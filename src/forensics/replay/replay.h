// `stet replay`: re-executes recorded requests (src/forensics/store/record_store.h)
// against an endpoint with everything that shaped them pinned — the recorded
// seed made explicit, the chat template's clock via metadata.stet_clock — and
// says per record whether the answer is identical (text, token ids, and every
// logprob bit for bit where the answer carries them) or where it first forks.
// Invariant: a replay against an endpoint whose system_fingerprint differs
// from the record's is refused, never reported as "identical" or "diverged",
// unless the caller allowed the change.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "forensics/store/record_store.h"

namespace stet::forensics {

struct ReplayOptions {
  std::string endpoint;
  std::string api_key;
  std::string model;                      // non-empty: sent instead of the recorded model name
  bool allow_fingerprint_change = false;  // replay and compare anyway
  bool force_logprobs = false;            // ask for logprobs where the recorded request did not
  int concurrency = 1;
  int64_t timeout_ms = 300000;
  bool progress = true;
};

enum class ReplayVerdict { kIdentical, kDiverged, kRefused, kError };
const char* ReplayVerdictName(ReplayVerdict v);  // "identical", "diverged", "refused", "error"

// Where a replay first departs from its record.
struct ReplayDivergence {
  int choice = 0;
  // "choices" (count), "prompt" (prompt token ids), "token", "logprob",
  // "top_logprobs", "text", "finish_reason".
  std::string kind;
  int position = -1;  // token position (prompt position for "prompt"); -1 when n/a
  std::optional<int64_t> recorded_id, replayed_id;
  std::string recorded_token, replayed_token;  // token texts when known
  std::optional<double> recorded_logprob, replayed_logprob;
  std::string recorded_value, replayed_value;  // for "choices" / "finish_reason" / "text"
  // Text around the fork: common prefix (tail), then each side's continuation.
  std::string context, recorded_continuation, replayed_continuation;
};

struct ReplayOutcome {
  std::string id;
  std::string endpoint;
  std::string received_at;
  ReplayVerdict verdict = ReplayVerdict::kError;
  std::string recorded_fingerprint, replayed_fingerprint;
  int choices = 0;
  int64_t tokens = 0;  // recorded generated tokens, all choices
  bool token_ids_compared = false;
  bool logprobs_compared = false;
  std::optional<ReplayDivergence> divergence;
  std::string message;  // refusal or error text
  double seconds = 0;
};

struct ReplayReport {
  std::string endpoint;
  std::string endpoint_fingerprint;     // from /v1/models when the endpoint says; else empty
  std::vector<ReplayOutcome> outcomes;  // in record order
  int identical = 0, diverged = 0, refused = 0, errors = 0;
  int exit_code = 2;  // 0 all identical, 1 a divergence, 2 error or refusal
  std::string summary;
};

// Replays the selected records. Errors before any replay (unreadable store,
// unreachable endpoint, nothing selected, fingerprint refusal) come back as
// the report's exit code 2 with `summary` saying why, or as a Status.
Result<ReplayReport> RunReplay(RecordStore& store, const RecordQuery& query,
                               const ReplayOptions& options);

// Compares one record with the endpoint's (non-streamed) answer to its replay
// request; exposed for tests.
ReplayOutcome CompareReplay(const RecordJson& record, const nlohmann::ordered_json& response);

// The request body replay sends for `record`.
nlohmann::ordered_json ReplayRequestBody(const RecordJson& record, const ReplayOptions& options);

std::string ReplayOutcomeText(const ReplayOutcome& o);  // one or two lines
std::string ReplaySummaryText(const ReplayReport& r);   // every outcome, then the totals
nlohmann::json ReplayToJson(const ReplayReport& r);

}  // namespace stet::forensics

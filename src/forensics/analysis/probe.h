// `stet probe`: the same request N times at each concurrency level, with
// companion traffic (other prompts, other lengths) so a batching server really
// batches; then the divergence analysis and a verdict per level and overall.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "forensics/analysis/divergence.h"
#include "forensics/client/openai.h"

namespace stet::forensics {

enum class LogprobMode { kAuto, kRequire, kOff };

struct ProbeOptions {
  std::string endpoint;
  std::string api_key;
  CompletionRequest request;  // model, prompt or messages, max_tokens, temperature, seed
  int runs = 10;
  std::vector<int> levels = {1, 8, 32};
  LogprobMode logprobs = LogprobMode::kAuto;
  int top_logprobs = 5;
  bool companion = true;  // send companion traffic at levels > 1
  int64_t timeout_ms = 300000;
  uint64_t companion_seed = 0x5EED;  // chooses the companion prompts and lengths
  bool progress = true;
};

struct LevelResult {
  int concurrency = 1;
  int probe_workers = 1;
  int companion_workers = 0;
  std::vector<Completion> runs;  // successful probe runs, in completion order
  int errors = 0;
  std::vector<std::string> error_messages;  // the first few
  int companion_requests = 0;
  int companion_errors = 0;
  double seconds = 0;
  DivergenceReport analysis;
};

struct ProbeResult {
  ProbeOptions options;
  std::string timestamp;  // UTC, ISO 8601
  bool logprobs_used = false;
  std::string logprobs_note;  // why logprobs are absent, when they are
  std::vector<LevelResult> levels;
  DivergenceReport overall;  // all levels pooled
  bool fingerprint_changed = false;
  int exit_code = 0;  // 0 deterministic, 1 divergence, 2 void / errors
  std::string verdict;
  std::vector<std::string> notes;
};

Result<ProbeResult> RunProbe(const ProbeOptions& options);

// Fills verdict, notes, fingerprint_changed and exit_code from the levels
// (separate from RunProbe so it can be tested on synthetic runs).
void Judge(ProbeResult* r);

nlohmann::json ProbeToJson(const ProbeResult& r);
std::string ProbeToHtml(const ProbeResult& r);
// The plain-text summary printed on stdout.
std::string ProbeSummary(const ProbeResult& r);

// Current UTC time as "2025-01-31T12:34:56Z".
std::string UtcTimestamp();

}  // namespace stet::forensics

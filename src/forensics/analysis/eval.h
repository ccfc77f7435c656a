// `stet eval`: every dataset item `repeats` times against an endpoint; per-item
// pass rates, the pooled rate with a Wilson interval, the mean of per-item rates
// with a seeded cluster bootstrap interval, flaky items; and `stet eval
// compare`: paired differences between two results files. Every score carries
// the fingerprint(s), concurrency, seed policy, model, endpoint and timestamp.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "forensics/client/openai.h"

namespace stet::forensics {

enum class Metric { kExact, kContains, kRegex, kJson };
Result<Metric> ParseMetric(const std::string& name);
const char* MetricName(Metric m);

enum class SeedPolicy { kFixed, kPerRepeat, kNone };
Result<SeedPolicy> ParseSeedPolicy(const std::string& name);
const char* SeedPolicyName(SeedPolicy p);

struct EvalItem {
  std::string id;
  std::optional<std::string> prompt;
  std::optional<nlohmann::json> messages;
  nlohmann::json expected;  // a string; for kJson the parsed JSON value
  Metric metric = Metric::kExact;
  std::optional<int> max_tokens;
};

// Reads JSONL: {"id", "prompt" | "messages", "expected", optional "metric",
// optional "max_tokens"}. Checks every line (ids unique, regexes compile, JSON
// expectations parse) before anything is sent.
Result<std::vector<EvalItem>> LoadDataset(const std::string& path, Metric default_metric);

// Scores one output against an item's expectation.
bool Score(const EvalItem& item, const std::string& output);
// For kJson: the first JSON value in `text` (whole text, a ```json fence, or the
// first balanced {...} / [...] that parses).
std::optional<nlohmann::json> ExtractJson(const std::string& text);

struct EvalOptions {
  std::string endpoint;
  std::string api_key;
  std::string model;
  std::string dataset;
  int repeats = 5;
  Metric metric = Metric::kExact;
  int concurrency = 1;
  double temperature = 0;
  SeedPolicy seed_policy = SeedPolicy::kFixed;
  int64_t seed = 0;
  int max_tokens = 64;
  int bootstrap_resamples = 10000;
  uint64_t bootstrap_seed = 0;
  int64_t timeout_ms = 300000;
};

// Runs the evaluation and returns the results document (the results.json schema,
// see docs/forensics.md).
Result<nlohmann::json> RunEval(const EvalOptions& options, const std::vector<EvalItem>& items);

// Recomputes "items[].pass_rate/flaky" and "summary" from the per-run results
// (used by RunEval; exposed for tests).
void Summarize(nlohmann::json* results, int bootstrap_resamples, uint64_t bootstrap_seed);

std::string EvalToHtml(const nlohmann::json& results);
std::string EvalSummaryText(const nlohmann::json& results);

// `stet eval compare`: B minus A over the items both contain.
Result<nlohmann::json> CompareResults(const nlohmann::json& a, const nlohmann::json& b,
                                      int resamples, uint64_t seed);
std::string CompareSummaryText(const nlohmann::json& comparison);

}  // namespace stet::forensics

// Canary drift monitoring (`stet drift watch`, `stet proxy --canary`): a fixed
// prompt set sent greedily with logprobs on a schedule, every answer recorded
// as a `kind: canary` exchange, and each round tested against the first runs
// (the baseline). A round is flagged when its system_fingerprint or answered
// model is new, when its greedy path leaves one the baseline always took, or
// when its top-1 logprobs moved more than the baseline's own run-to-run spread
// allows: an exact permutation test on per-position top-1 logprobs (see
// AnalyzeCanary). Invariant: the analysis is a pure function of the stored
// records and its options, so `stet drift report` recomputes any round.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "forensics/analysis/drift.h"
#include "forensics/client/upstream.h"
#include "forensics/store/exchange_store.h"

namespace stet::forensics {

struct CanaryOptions {
  std::string endpoint;  // base URL
  std::string api_key;   // Bearer key; never recorded
  std::string model;
  std::string api = "chat";  // "chat" or "completions"
  int max_tokens = 16;
  int top_logprobs = 5;
  int repeats = 3;        // runs of the prompt set per round
  int baseline_runs = 9;  // the first round sends this many runs when the store has none
  UpstreamLimits limits;
};

// Identifies a canary: the prompts, model, api, max_tokens and top_logprobs (16 hex digits).
std::string CanarySetId(const std::vector<DriftPrompt>& prompts, const CanaryOptions& o);

struct CanaryRoundResult {
  int round = 0;  // 1-based, per set
  int runs = 0;   // runs sent this round
  int requests = 0;
  int failed = 0;  // requests that got no 2xx answer (recorded too)
};

// Sends one round (repeats runs, or baseline_runs if the set has fewer runs
// stored) and records every exchange in `store`.
Result<CanaryRoundResult> RunCanaryRound(ExchangeStore& store, const CanaryOptions& o,
                                         const std::vector<DriftPrompt>& prompts);

struct CanaryTestOptions {
  int baseline_runs = 9;
  double alpha = 0.01;
  int64_t max_permutations = 20000;  // exact enumeration up to this many subsets, else Monte Carlo
  std::string set;                   // empty: the set of the latest canary record
};

struct CanaryCheck {
  int round = 0;
  std::string time;  // first exchange of the round
  int runs = 0;
  bool baseline = false;  // every run of the round is a baseline run: not tested
  std::vector<std::string> fingerprints, models;
  int positions = 0;  // (prompt, token) positions compared
  double statistic = std::numeric_limits<double>::quiet_NaN();  // mean |mean_round - mean_rest|
  double p_value = std::numeric_limits<double>::quiet_NaN();
  int64_t permutations = 0;
  bool exact = true;
  double mean_top1 =
      std::numeric_limits<double>::quiet_NaN();  // over the round's compared positions
  std::vector<std::string> flags;                // "fingerprint", "model", "token", "logprobs"
  std::vector<std::string> notes;
};

struct CanaryAnalysis {
  std::string set;
  int baseline_runs = 0, total_runs = 0;
  double alpha = 0;
  std::vector<CanaryCheck> rounds;
  int tested = 0, flagged = 0;
};

// The test, per tested round with R runs against the B baseline runs: for each
// prompt, the positions where all B + R runs chose the same top-1 token; x[r][k]
// = run r's top-1 logprob at position k; T(S) = mean_k |mean_{r in S} x[r][k] -
// mean_{r not in S} x[r][k]|; p = share of the C(B+R, R) run subsets S with
// T(S) >= T(round) (Monte Carlo with Philox draws past max_permutations, p =
// (1 + hits) / (1 + draws)). Under no drift the runs are exchangeable and
// P(p <= alpha) <= alpha.
Result<CanaryAnalysis> AnalyzeCanary(const std::vector<ExchangeJson>& records,
                                     const CanaryTestOptions& o);

// One run's top-1 logprobs for the permutation test, exposed for tests:
// p-value of `current` (indices into runs) given values[run][position].
double PermutationPValue(const std::vector<std::vector<double>>& values,
                         const std::vector<int>& current, int64_t max_permutations, uint64_t seed,
                         int64_t* permutations, bool* exact, double* statistic);

std::string CanaryText(const CanaryAnalysis& a);
nlohmann::json CanaryJson(const CanaryAnalysis& a);
std::string CanaryHtml(const CanaryAnalysis& a);

}  // namespace stet::forensics

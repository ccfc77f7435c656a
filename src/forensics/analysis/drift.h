// `stet drift`: greedy top-k logprob fingerprints of a fixed prompt set, and
// their comparison between two captures (a saved baseline, or a second
// endpoint). Positions are compared up to and including the first token where
// the two greedy paths part: after it the contexts differ and so would any
// distribution, which says nothing more about drift.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace stet::forensics {

struct DriftPrompt {
  std::string id;
  std::string prompt;
};

// JSONL lines {"id", "prompt"} or, when the file does not start with '{', one
// plain-text prompt per non-empty line (ids "1", "2", ... by line number).
Result<std::vector<DriftPrompt>> LoadDriftPrompts(const std::string& path);

struct DriftCaptureOptions {
  std::string endpoint;
  std::string api_key;
  std::string model;
  int top_k = 5;
  int max_tokens = 16;
  int concurrency = 1;
  int64_t timeout_ms = 300000;
};

// Sends each prompt to /v1/completions at temperature 0 with logprobs = top_k.
Result<nlohmann::json> CaptureDrift(const DriftCaptureOptions& o,
                                    const std::vector<DriftPrompt>& prompts);

// Checks a capture document read from a file (schema, shapes) before use.
Status ValidateCapture(const nlohmann::json& doc, const std::string& name);

// Compares `current` with `baseline`; "drift" = max(1 - top-1 agreement, mean
// TV) over all compared positions, "exceeded" = drift > threshold.
Result<nlohmann::json> CompareDrift(const nlohmann::json& baseline, const nlohmann::json& current,
                                    double threshold);

std::string DriftSummaryText(const nlohmann::json& comparison);

}  // namespace stet::forensics

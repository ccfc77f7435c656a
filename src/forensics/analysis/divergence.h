// Divergence analysis of repeated identical requests: group the outputs, take
// the most common one as the reference, and for every other output find where
// it forks (first differing token, or byte when the server gave no tokens),
// which two tokens competed there, and how near their logprobs were.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "forensics/client/openai.h"

namespace stet::forensics {

struct Fork {
  int token_index = -1;         // first differing token; -1 when tokens are unknown
  int byte_offset = -1;         // first differing byte of the text
  std::string reference_token;  // the most common output's token there ("" past its end)
  std::string variant_token;
  // lp(reference token) - lp(variant token) in the reference run's top list and
  // in the variant run's (the latter is usually <= 0); absent when a token is not
  // in that top list, in which case *_bound holds a lower bound on |gap|.
  std::optional<double> gap_reference;
  std::optional<double> gap_variant;
  std::optional<double> gap_bound;
};

struct Variant {
  std::string text;
  int count = 0;
  std::vector<int> runs;     // indices into the analysed runs
  std::optional<Fork> fork;  // absent for the reference (most common) output
};

struct DivergenceReport {
  int runs = 0;
  std::vector<Variant> variants;       // most common first; ties by first appearance
  int distinct_logprob_traces = 0;     // distinct (text, exact logprobs) pairs; 0 without logprobs
  std::set<std::string> fingerprints;  // non-empty system_fingerprint values seen
  bool has_logprobs = false;

  int distinct() const { return static_cast<int>(variants.size()); }
  // The earliest fork among the variants (by token, else byte), if any.
  std::optional<Fork> EarliestFork() const;
  // Token index of each non-reference run's fork (byte offset when no tokens).
  std::vector<int> ForkPositions() const;
};

// Where `variant` first departs from `reference`.
Fork FindFork(const Completion& reference, const Completion& variant);

DivergenceReport AnalyzeRuns(const std::vector<Completion>& runs);

// "gap 0.0123" / "gap >= 2.1 (token outside top-k)" / "gap unknown (no logprobs)".
std::string DescribeGap(const Fork& f);

}  // namespace stet::forensics

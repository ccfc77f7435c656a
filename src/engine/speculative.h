// Speculative decoding that cannot change a byte: the prompt-lookup drafter
// (the draft-model drafter is engine/draft_model.h) and the acceptance rule. A draft token is kept
// only when it equals what the sampler picks from the target model's logits at its position — the
// same pick, keyed by (seed, choice, position), that decoding without speculation makes — so the
// emitted tokens, logprobs and text are identical by construction; drafts and k only change how
// many positions one step verifies.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace stet {

// kLookup drafts by prompt lookup, kDraft by a draft model (SpecOptions::draft_model).
enum class SpecMode { kOff, kLookup, kDraft };

constexpr int kMaxSpecK = 32;  // draft tokens per sequence per step
constexpr int kMaxSpecNgram = 16;
// Decode rows (one per decoding sequence, plus the drafts) a step verifies at
// most: up to 15 rows the small-batch matmul kernels read each weight once for
// all rows, so drafts there cost little; past it a step is compute-bound and
// drafts that fail cost what they add. Sequences share what their decode rows
// leave.
constexpr int kSpecRowBudget = 16;

struct SpecOptions {
  SpecMode mode = SpecMode::kOff;  // the default for requests that do not say
  int k = 4;                       // most draft tokens per step (adaptive below it)
  int ngram_min = 2;               // prompt lookup matches the last ngram_max .. ngram_min tokens
  int ngram_max = 4;
  // A GGUF with the target's tokenizer (checked at load). When set, it is the
  // drafter of every speculating request, so mode is kDraft, or kOff (loaded,
  // for requests that turn speculation on); kDraft requires it.
  std::string draft_model;
};

Result<SpecMode> ParseSpecMode(const std::string& name);  // "off", "lookup", "draft"
const char* SpecModeName(SpecMode m);
// InvalidArgument naming the field when k or the n-gram sizes are out of range,
// or the mode and draft_model disagree.
Status ValidateSpecOptions(const SpecOptions& o);

// Prompt lookup: the continuation, up to k tokens, of the latest earlier
// occurrence of the last g tokens (g from ngram_max down to ngram_min) that
// still has k tokens after it, else of the earliest one; empty when none of
// the n-grams occurs earlier.
std::vector<int32_t> PromptLookupDraft(const std::vector<int32_t>& tokens, int k, int ngram_min,
                                       int ngram_max);

// One emitted token during verification: its id, and whether it ended the
// choice (end marker, stop id or string, max_tokens).
struct Emitted {
  int32_t id = 0;
  bool ended = false;
};
struct Verdict {
  int emitted = 0;   // tokens emitted this step (1 .. k+1)
  int accepted = 0;  // draft tokens equal to the emitted token at their position
  bool ended = false;
};
// The acceptance rule. Row j of a verification step holds the target's logits
// after draft[0..j-1]; emit(j) samples row j exactly as plain decoding would
// (history = everything emitted before) and emits it. Row j+1 is valid only
// when the token emitted from row j equals draft[j]; verification stops at the
// first mismatch (that emitted token is the correction), at the end of the
// choice, or after row k (the bonus token).
Verdict VerifyDraft(const std::vector<int32_t>& draft, const std::function<Emitted(int row)>& emit);

// The most draft tokens each of `speculating` sequences may carry in a step
// with `decoding` decode rows (kSpecRowBudget): 0 once the rows fill it.
int DraftShare(int decoding, int speculating);

// Adaptive k for one sequence: grows by 2 after a fully accepted draft (up to
// k_max), falls to one more than the accepted count after a rejection. It
// changes only how much one step verifies, never a result.
int NextSpecK(int k_cur, int k_max, int drafted, int accepted);

}  // namespace stet

// The one validation of a request and the one source of seeds. Invariant:
// every range a request field must satisfy is written here once; the server's
// parser checks JSON types and the OpenAI API's own policy only, and the
// forward pass trusts what passed (STET_CHECK for programmer errors).
#include "engine/request.h"

#include <cmath>
#include <cstdio>
#include <random>

#include "base/enum_names.h"
#include "engine/grammar_matcher.h"

namespace stet {

namespace {

constexpr EnumName<FinishReason> kFinishReasonNames[] = {{FinishReason::kStop, "stop"},
                                                         {FinishReason::kLength, "length"},
                                                         {FinishReason::kCancelled, "cancelled"},
                                                         {FinishReason::kError, "error"}};

}  // namespace

const char* FinishReasonName(FinishReason r) { return NameOf(kFinishReasonNames, r, "none"); }

uint64_t NewSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Records the field and builds the error; messages start with the field.
struct Refusal {
  std::string* field;
  Status operator()(const char* name, std::string rest,
                    StatusCode code = StatusCode::kInvalidArgument) const {
    if (field) *field = name;
    return Status(code, std::string(name) + " " + rest);
  }
};

bool InRange(float v, float lo, float hi) { return std::isfinite(v) && v >= lo && v <= hi; }

std::string Vocab(int n_vocab) { return "the vocabulary [0, " + std::to_string(n_vocab) + ")"; }

Status ValidatePrompt(const RequestParams& p, const RequestLimits& lim, const Refusal& refuse) {
  if (p.prompt.empty()) return refuse("prompt", "has no tokens");
  for (int32_t id : p.prompt) {
    if (id < 0 || id >= lim.n_vocab)
      return refuse("prompt",
                    "token id " + std::to_string(id) + " is outside " + Vocab(lim.n_vocab));
  }
  if (static_cast<int64_t>(p.prompt.size()) >= lim.n_ctx) {
    return refuse("prompt",
                  "has " + std::to_string(p.prompt.size()) +
                      " tokens, but this model's maximum context length is " +
                      std::to_string(lim.n_ctx) +
                      " tokens (the prompt and at least one generated token must fit)",
                  StatusCode::kResourceExhausted);
  }
  return Status::Ok();
}

Status ValidateSampling(const SamplingParams& s, int n_vocab, const Refusal& refuse) {
  if (!(std::isfinite(s.temperature) && s.temperature >= 0.0f))
    return refuse("temperature", "must be a finite number >= 0, not " + Num(s.temperature));
  if (s.top_k < 0) return refuse("top_k", "must be >= 0 (0: off), not " + std::to_string(s.top_k));
  if (!(InRange(s.top_p, 0.0f, 1.0f) && s.top_p > 0.0f))
    return refuse("top_p", "must be in (0, 1], not " + Num(s.top_p));
  if (!InRange(s.min_p, 0.0f, 1.0f))
    return refuse("min_p", "must be in [0, 1], not " + Num(s.min_p));
  for (const auto& [id, bias] : s.logit_bias) {
    if (id < 0 || id >= n_vocab)
      return refuse("logit_bias",
                    "token id " + std::to_string(id) + " is outside " + Vocab(n_vocab));
    if (!InRange(bias, -100.0f, 100.0f)) {
      return refuse("logit_bias", "values must be in [-100, 100], not " + Num(bias) +
                                      " (token id " + std::to_string(id) + ")");
    }
  }
  if (!(InRange(s.repetition_penalty, 0.0f, 10.0f) && s.repetition_penalty > 0.0f))
    return refuse("repetition_penalty", "must be in (0, 10], not " + Num(s.repetition_penalty));
  if (!InRange(s.presence_penalty, -2.0f, 2.0f))
    return refuse("presence_penalty", "must be in [-2, 2], not " + Num(s.presence_penalty));
  if (!InRange(s.frequency_penalty, -2.0f, 2.0f))
    return refuse("frequency_penalty", "must be in [-2, 2], not " + Num(s.frequency_penalty));
  return Status::Ok();
}

}  // namespace

Status ValidateRequest(const RequestParams& p, const RequestLimits& limits, std::string* field) {
  const Refusal refuse{field};
  STET_RETURN_IF_ERROR(ValidatePrompt(p, limits, refuse));
  if (p.max_tokens < 0)
    return refuse("max_tokens", "must be >= 0, not " + std::to_string(p.max_tokens));
  if (p.min_tokens < 0)
    return refuse("min_tokens", "must be >= 0, not " + std::to_string(p.min_tokens));
  if (p.n < 1 || p.n > kMaxChoices) {
    return refuse(
        "n", "must be in [1, " + std::to_string(kMaxChoices) + "], not " + std::to_string(p.n));
  }
  STET_RETURN_IF_ERROR(ValidateSampling(p.sampling, limits.n_vocab, refuse));
  for (int32_t id : p.stop_ids) {
    if (id < 0 || id >= limits.n_vocab)
      return refuse("stop_ids",
                    "token id " + std::to_string(id) + " is outside " + Vocab(limits.n_vocab));
  }
  if (p.top_logprobs < 0 || p.top_logprobs > kMaxTopLogprobs) {
    return refuse("top_logprobs", "must be in [0, " + std::to_string(kMaxTopLogprobs) + "], not " +
                                      std::to_string(p.top_logprobs));
  }
  if (p.grammar) {
    GrammarMatcher m(p.grammar);
    Status st = m.Init();
    if (!st.ok()) return refuse("grammar", st.message());
    if (const TokenTrie* trie = limits.vocab_trie ? limits.vocab_trie() : nullptr) {
      st = ProbeFirstMask(p.grammar, *trie);  // once per grammar, not per prompt or call
      if (!st.ok()) return refuse("grammar", st.message() + " (at the first token)");
    }
  }
  return Status::Ok();
}

}  // namespace stet

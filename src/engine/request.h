// What a client asks the engine for and what it gets back, and the one
// validation of a request (ValidateRequest). Reported logprobs are the model's
// log-softmax over the full vocabulary, before temperature, penalties and
// truncation (as the OpenAI API and vLLM report them), so they mean the same
// thing under every sampling setting.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/grammar.h"
#include "engine/sampler.h"

namespace stet {

constexpr int kMaxChoices = 128;     // RequestParams::n
constexpr int kMaxTopLogprobs = 20;  // RequestParams::top_logprobs

struct RequestParams {
  std::vector<int32_t> prompt;  // token ids (the caller tokenizes, chat templates included)
  int max_tokens = 16;          // 0: score the prompt only (needs prompt_logprobs)
  // vLLM's min_tokens: end-of-generation tokens (unless ignore_eos) and stop_ids are masked out
  // until a choice has this many tokens (stop strings still end it). Above max_tokens: no effect.
  int min_tokens = 0;
  int n = 1;                      // independent choices, each its own RNG stream
  SamplingParams sampling;        // how each token is drawn, seed included (engine/sampler.h)
  std::vector<std::string> stop;  // stop strings (matched across token boundaries)
  std::vector<int32_t> stop_ids;  // extra stop token ids
  bool ignore_eos = false;        // keep going past end-of-generation tokens
  int top_logprobs = 0;           // alternatives per generated token, 0..kMaxTopLogprobs
  bool prompt_logprobs = false;   // logprob of every prompt token after the first (echo/scoring)
  bool logits_hash = false;    // report an FNV-1a-64 of each step's full logits (tests, forensics)
  bool return_logits = false;  // copy each step's raw logits into TokenOut::logits (n_vocab floats)
  // Speculative decoding for this request: absent, the engine's default
  // (EngineOptions::spec.mode); false, off; true, prompt lookup with the
  // engine's k. Never changes a result, only the speed.
  std::optional<bool> speculative;
  // Prefix-cache scope: cached blocks are shared only among requests with the same salt (0: the
  // default scope). A server gives each tenant its own, so a hit cannot reveal another's prompt.
  // Hits never change output bits, so the salt changes only what is cached, never the answer.
  uint64_t cache_salt = 0;
  // Constrained decoding: each choice's tokens must spell a match of this
  // grammar. The sampler sees only tokens whose bytes the grammar accepts
  // (end-of-generation only where it may end); reported logprobs stay the raw
  // model's. The mask depends on the grammar state and the vocabulary alone,
  // so constrained outputs are as batch-invariant as free ones, and
  // speculation verifies each draft token under the same mask.
  std::shared_ptr<const Grammar> grammar;
};

// What a request is checked against: the model's vocabulary and the positions
// one sequence may hold (prompt + generated).
class TokenTrie;  // engine/grammar_matcher.h

struct RequestLimits {
  int n_vocab = 0;
  int n_ctx = 0;
  // The vocabulary's trie, for a grammar's probe: the first token mask is
  // computed at validation (on the submitting thread), so a grammar whose
  // mask exceeds GrammarLimits::max_mask_steps is refused before it queues.
  // Empty: no probe.
  std::function<const TokenTrie*()> vocab_trie;
};

// The one validation of a request; Engine::Submit runs it, and the server runs
// it before admitting a request so that its 400 can name the field. Errors:
// InvalidArgument, or ResourceExhausted for a prompt that leaves no room for a
// generated token. On failure `*field` (when given) is the field at fault,
// named as in RequestParams and SamplingParams ("prompt", "n", "max_tokens", "min_tokens",
// "temperature", "top_k", "top_p", "min_p", "logit_bias",
// "repetition_penalty", "presence_penalty", "frequency_penalty", "stop_ids",
// "top_logprobs", "grammar") — the OpenAI API's names too — and the message starts with it.
Status ValidateRequest(const RequestParams& p, const RequestLimits& limits,
                       std::string* field = nullptr);

// The one source of seeds for requests that name none: 64 bits from
// std::random_device. Engine::Submit calls it for a request without a seed;
// callers that must know the seed before submitting (the server, which shares
// one seed across a request's prompts; `stet run`, which prints it first) call
// it themselves.
uint64_t NewSeed();

struct TokenOut {
  int32_t id = 0;
  float logprob = 0;              // raw log-softmax of the chosen token
  std::vector<TokenLogprob> top;  // top_logprobs alternatives, best first (ties: lower id)
  std::string text;               // the token's decoded bytes (may be a partial UTF-8 char)
  uint64_t logits_hash = 0;       // with RequestParams::logits_hash: the step's raw logits
  std::vector<float> logits;      // with RequestParams::return_logits: the step's raw logits
};

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };
const char* FinishReasonName(FinishReason r);  // "stop", "length", "cancelled", "error"

// One event of a request's stream. Events of one choice arrive in order.
struct RequestEvent {
  enum class Kind { kPromptScored, kToken, kFinished } kind = Kind::kToken;
  int choice = 0;
  // kPromptScored: one entry per prompt token (the first has logprob 0, no top).
  std::vector<TokenOut> prompt_tokens;
  // kToken: the sampled token and the text it releases (stop strings held back,
  // UTF-8 completed); text_delta may be empty.
  TokenOut token;
  std::string text_delta;
  // kToken: this token ended its choice — an end-of-generation token (unless
  // ignore_eos) or a stop id. It is reported with its logprob but adds no text.
  bool end_marker = false;
  // kFinished
  FinishReason finish = FinishReason::kNone;
  std::string error;  // with kError
  int prompt_tokens_count = 0;
  int completion_tokens = 0;
  int cached_prompt_tokens = 0;  // prompt positions served by the prefix cache
};

}  // namespace stet

// What a client asks the engine for and what it gets back. Reported logprobs
// are the model's log-softmax over the full vocabulary, before temperature,
// penalties and truncation (as the OpenAI API and vLLM report them), so they
// mean the same thing under every sampling setting.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampler.h"

namespace stet {

struct RequestParams {
  std::vector<int32_t> prompt;      // token ids (the caller tokenizes, chat templates included)
  int max_tokens = 16;              // 0: score the prompt only (needs prompt_logprobs)
  int n = 1;                        // independent choices, each its own RNG stream
  float temperature = 1.0f;         // <= 0: greedy
  int top_k = 0;                    // <= 0: off
  float top_p = 1.0f;               // >= 1: off
  float min_p = 0.0f;               // <= 0: off
  float repetition_penalty = 1.0f;  // llama.cpp/HF style over prompt + output; 1: off
  float presence_penalty = 0.0f;    // OpenAI style over output tokens
  float frequency_penalty = 0.0f;
  std::map<int32_t, float> logit_bias;
  std::optional<uint64_t> seed;   // absent: the engine picks one and reports it
  std::vector<std::string> stop;  // stop strings (matched across token boundaries)
  std::vector<int32_t> stop_ids;  // extra stop token ids
  bool ignore_eos = false;        // keep going past end-of-generation tokens
  int top_logprobs = 0;           // alternatives per generated token, 0..20
  bool prompt_logprobs = false;   // logprob of every prompt token after the first (echo/scoring)
  bool logits_hash = false;    // report an FNV-1a-64 of each step's full logits (tests, forensics)
  bool return_logits = false;  // copy each step's raw logits into TokenOut::logits (n_vocab floats)
};

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

// Token sampling. Deterministic by construction (rule R7): greedy breaks ties
// toward the lower token id; random draws come from Philox keyed by
// (seed, choice index, absolute position), never from shared generator state.
// All arithmetic is scalar with stet's own exp/log, so every machine agrees.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace stet {

// Neutral defaults (plain softmax sampling at temperature 1): every caller
// says what it wants — the CLI's own defaults live with the CLI.
struct SamplingParams {
  float temperature = 1.0f;  // <= 0: greedy
  int top_k = 0;             // <= 0: whole vocabulary
  float top_p = 1.0f;        // >= 1: off
  float min_p = 0.0f;        // <= 0: off
  uint64_t seed = 0;
};

struct TokenLogprob {
  int32_t id;
  float logprob;
};

// argmax with ties to the lower id.
int32_t Argmax(const float* logits, int n);

// log-softmax of one entry over the full vector: (l_i - max) - log(sum exp(l_j - max)),
// the sum taken in index order with ExpF. Also what teacher-forced scoring uses.
float LogSoftmaxAt(const float* logits, int n, int32_t id);
// The top `k` entries by logit (ties to lower id) with their log-softmax values.
std::vector<TokenLogprob> TopLogprobs(const float* logits, int n, int k);

// What a request does to a row's logits before sampling, in this order: add
// logit_bias; divide positive (multiply negative) logits of every distinct
// token in `context` (prompt + output so far) by repetition_penalty; subtract
// presence_penalty + frequency_penalty * count for each generated token.
struct LogitAdjustments {
  const std::map<int32_t, float>* logit_bias = nullptr;
  float repetition_penalty = 1.0f;
  const std::vector<int32_t>* context = nullptr;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  const std::unordered_map<int32_t, int>* out_counts = nullptr;
};

// One generated token: the id drawn, and what is reported with it — the raw
// log-softmax of the chosen token and the top alternatives (one log-sum-exp
// for both, before any adjustment, as OpenAI and vLLM report them).
struct TokenPick {
  int32_t id = 0;
  float logprob = 0;
  std::vector<TokenLogprob> top;
};

class Sampler {
 public:
  // Picks a token for (choice, position) from raw logits. Reuses internal buffers.
  int32_t Sample(const float* logits, int n, const SamplingParams& p, uint32_t choice,
                 uint64_t position);

  // All the logit-side math of one token: adjustments (on a copy), Sample, and
  // the reported logprobs (top_logprobs alternatives) from the raw row.
  TokenPick Pick(const float* raw, int n, const LogitAdjustments& adj, const SamplingParams& p,
                 int top_logprobs, uint32_t choice, uint64_t position);

 private:
  std::vector<TokenLogprob> cand_;  // (id, scaled logit then probability)
  std::vector<float> work_;         // the adjusted row
};

}  // namespace stet

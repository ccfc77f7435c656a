// Token sampling. Deterministic by construction (rule R7): greedy breaks ties
// toward the lower token id; random draws come from Philox keyed by
// (seed, choice index, absolute position), never from shared generator state.
// All arithmetic is stet's own exp/log in a fixed order, so every machine
// agrees; the full-vocabulary scans (max, argmax, the log-sum-exp's exps) run
// on the kernels' SIMD paths (kernels.h Argmax, SumExpShifted), which give the
// serial loops' bits on every Isa.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/cpu_features.h"

namespace stet {

// How one token is drawn from a row of logits: the one parameter struct of
// sampling, embedded in RequestParams and filled by every caller (server,
// `stet run`, tests). Neutral defaults — plain softmax sampling at temperature
// 1, nothing adjusted — so every caller says what it wants: the CLI's own
// defaults live with the CLI, the API's with the server. Valid ranges are
// checked in one place, ValidateRequest (engine/request.h).
struct SamplingParams {
  float temperature = 1.0f;  // 0: greedy (ties to the lower id)
  int top_k = 0;             // 0: whole vocabulary
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  // Applied to a copy of the row before the draw, in this order: add
  // logit_bias; divide positive (multiply negative) logits of every distinct
  // token of the context (prompt + output so far) by repetition_penalty
  // (llama.cpp / HF); subtract presence_penalty + frequency_penalty * count for
  // each generated token (OpenAI).
  std::map<int32_t, float> logit_bias;
  float repetition_penalty = 1.0f;  // 1: off
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // Philox key of the draws. Absent: Engine::Submit picks one (NewSeed) and
  // reports it; a draw without one is a programmer error.
  std::optional<uint64_t> seed;
};

struct TokenLogprob {
  int32_t id;
  float logprob;
};

// argmax with ties to the lower id. `isa` (here and below) picks the kernel
// path only; the result is the same on every one.
int32_t Argmax(const float* logits, int n, Isa isa = DefaultIsa());

// log-softmax of one entry over the full vector: (l_i - max) - log(sum exp(l_j - max)),
// the sum taken in index order with ExpF. Also what teacher-forced scoring uses.
float LogSoftmaxAt(const float* logits, int n, int32_t id, Isa isa = DefaultIsa());
// The top `k` entries by logit (ties to lower id) with their log-softmax values.
std::vector<TokenLogprob> TopLogprobs(const float* logits, int n, int k, Isa isa = DefaultIsa());

// What a sequence has produced so far: the inputs of the penalties.
struct TokenHistory {
  const std::vector<int32_t>* context = nullptr;                 // prompt + output so far
  const std::unordered_map<int32_t, int>* out_counts = nullptr;  // generated-token counts
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
  // `isa`: the kernel path of the full-vocabulary scans (never changes a result).
  explicit Sampler(Isa isa = DefaultIsa()) : isa_(isa) {}
  Isa isa() const { return isa_; }

  // Draws a token for (choice, position) from `logits` as given: temperature,
  // top-k, top-p, min-p and the seed (bias and penalties are Pick's). Reuses
  // internal buffers. `allowed` (n entries, nonzero = allowed; at least one):
  // the draw is over the allowed tokens only, as if every other logit were
  // -inf before temperature and truncation (greedy included).
  int32_t Sample(const float* logits, int n, const SamplingParams& p, uint32_t choice,
                 uint64_t position, const uint8_t* allowed = nullptr);

  // All the logit-side math of one token: bias and penalties (on a copy),
  // Sample (under `allowed`, see Sample), and the reported logprobs
  // (top_logprobs alternatives) from the raw row, mask or not.
  TokenPick Pick(const float* raw, int n, const SamplingParams& p, const TokenHistory& history,
                 int top_logprobs, uint32_t choice, uint64_t position,
                 const uint8_t* allowed = nullptr);

 private:
  void FillCandidates(const float* logits, int n, const uint8_t* allowed);
  std::optional<int32_t> DrawFromHead(const SamplingParams& p, uint32_t choice, uint64_t position);
  std::optional<int32_t> DrawSorted(size_t size, bool head_only, const SamplingParams& p,
                                    uint32_t choice, uint64_t position);

  Isa isa_;
  std::vector<TokenLogprob> cand_;  // (id, scaled logit then probability)
  std::vector<float> work_;         // the adjusted row
};

}  // namespace stet

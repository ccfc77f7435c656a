// Token sampling. Deterministic by construction (rule R7): greedy breaks ties
// toward the lower token id; random draws come from Philox keyed by
// (seed, choice index, absolute position), never from shared generator state.
// All arithmetic is scalar with stet's own exp/log, so every machine agrees.
#pragma once

#include <cstdint>
#include <vector>

namespace stet {

struct SamplingParams {
  float temperature = 0.8f;  // <= 0: greedy
  int top_k = 40;            // <= 0: whole vocabulary
  float top_p = 0.95f;       // >= 1: off
  float min_p = 0.05f;       // <= 0: off
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

class Sampler {
 public:
  // Picks a token for (choice, position) from raw logits. Reuses internal buffers.
  int32_t Sample(const float* logits, int n, const SamplingParams& p, uint32_t choice,
                 uint64_t position);

 private:
  std::vector<TokenLogprob> cand_;  // (id, scaled logit then probability)
};

}  // namespace stet

// Sampling and logprobs with stet's own exp/log, in a fixed order (rule R7):
// the adjusted row is a copy, the reported logprobs come from the raw row, and
// the draw is keyed by (seed, choice, position) only. The full-row scans
// (argmax, max, the sum of exps) are kernels with SIMD paths that give the
// serial loops' bits (kernels.h).
#include "engine/sampler.h"

#include <algorithm>

#include "base/check.h"
#include "base/rng.h"
#include "kernels/kernels.h"
#include "numerics/math.h"

namespace stet {

// The first index of the strictly largest logit: ties keep the lower id.
int32_t Argmax(const float* logits, int n, Isa isa) {
  return static_cast<int32_t>(kernels::Argmax(logits, n, isa));
}

namespace {
// mx = the std::max fold of the row from logits[0] (which is logits[Argmax],
// bit for bit: kernels.h); sum = ExpF(logits[i] - mx) added in index order.
// `argmax`: the row's Argmax when the caller has it, else -1.
float LogSumExpShifted(const float* logits, int n, float* max_out, Isa isa, int64_t argmax = -1) {
  const float mx = logits[argmax >= 0 ? argmax : kernels::Argmax(logits, n, isa)];
  const float sum = kernels::SumExpShifted(logits, n, mx, isa);
  *max_out = mx;
  return LogF(sum);
}

// The top k entries given the row's max and log-sum-exp.
std::vector<TokenLogprob> TopGivenLse(const float* logits, int n, int k, float mx, float lse) {
  k = std::min(k, n);
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = i;
  auto better = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), better);
  std::vector<TokenLogprob> out(k);
  for (int i = 0; i < k; ++i) out[i] = {ids[i], (logits[ids[i]] - mx) - lse};
  return out;
}
}  // namespace

float LogSoftmaxAt(const float* logits, int n, int32_t id, Isa isa) {
  float mx;
  const float lse = LogSumExpShifted(logits, n, &mx, isa);
  return (logits[id] - mx) - lse;
}

std::vector<TokenLogprob> TopLogprobs(const float* logits, int n, int k, Isa isa) {
  float mx;
  const float lse = LogSumExpShifted(logits, n, &mx, isa);
  return TopGivenLse(logits, n, k, mx, lse);
}

TokenPick Sampler::Pick(const float* raw, int n, const SamplingParams& p,
                        const TokenHistory& history, int top_logprobs, uint32_t choice,
                        uint64_t position, const uint8_t* allowed) {
  const float* row = raw;
  const bool repeat = p.repetition_penalty != 1.0f && history.context != nullptr;
  const bool presence =
      (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) && history.out_counts != nullptr;
  const bool bias = !p.logit_bias.empty();
  if (bias || repeat || presence) {
    work_.assign(raw, raw + n);
    if (bias) {
      for (const auto& [id, b] : p.logit_bias) work_[id] += b;
    }
    if (repeat) {
      // Each distinct token once, whatever its count (llama.cpp / HF semantics).
      std::vector<int32_t> seen(*history.context);
      std::sort(seen.begin(), seen.end());
      seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
      for (int32_t id : seen) {
        float& l = work_[id];
        l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
      }
    }
    if (presence) {
      for (const auto& [id, count] : *history.out_counts) {
        work_[id] -= p.presence_penalty + p.frequency_penalty * static_cast<float>(count);
      }
    }
    row = work_.data();
  }
  TokenPick out;
  out.id = Sample(row, n, p, choice, position, allowed);
  // A greedy draw from the raw row is its Argmax already.
  const bool raw_argmax = row == raw && p.temperature <= 0.0f && !allowed;
  float mx;
  const float lse = LogSumExpShifted(raw, n, &mx, isa_, raw_argmax ? out.id : -1);
  out.logprob = (raw[out.id] - mx) - lse;
  if (top_logprobs > 0) out.top = TopGivenLse(raw, n, top_logprobs, mx, lse);
  return out;
}

int32_t Sampler::Sample(const float* logits, int n, const SamplingParams& p, uint32_t choice,
                        uint64_t position, const uint8_t* allowed) {
  if (p.temperature <= 0.0f && !allowed) return Argmax(logits, n, isa_);
  if (p.temperature <= 0.0f) {
    int32_t best = -1;
    for (int i = 0; i < n; ++i) {
      if (allowed[i] && (best < 0 || logits[i] > logits[best])) best = i;  // ties: lower id
    }
    STET_CHECK_MSG(best >= 0, "a mask must allow at least one token");
    return best;
  }
  // Candidates sorted by (logit desc, id asc): a total order, so no tie is left to chance.
  if (allowed) {
    cand_.clear();
    for (int i = 0; i < n; ++i) {
      if (allowed[i]) cand_.push_back({i, logits[i]});
    }
    STET_CHECK_MSG(!cand_.empty(), "a mask must allow at least one token");
    n = static_cast<int>(cand_.size());
  } else {
    cand_.resize(n);
    for (int i = 0; i < n; ++i) cand_[i] = {i, logits[i]};
  }
  auto better = [](const TokenLogprob& a, const TokenLogprob& b) {
    return a.logprob > b.logprob || (a.logprob == b.logprob && a.id < b.id);
  };
  int k = (p.top_k > 0 && p.top_k < n) ? p.top_k : n;
  if (k < n) {
    std::partial_sort(cand_.begin(), cand_.begin() + k, cand_.end(), better);
    cand_.resize(k);
  } else {
    std::sort(cand_.begin(), cand_.end(), better);
  }
  // Softmax of logit / temperature over the candidates, summed in sorted order.
  const float top = cand_[0].logprob / p.temperature;
  float sum = 0.0f;
  for (auto& c : cand_) {
    c.logprob = ExpF(c.logprob / p.temperature - top);
    sum += c.logprob;
  }
  for (auto& c : cand_) c.logprob /= sum;
  // min-p: keep candidates with probability >= min_p * p_max (p_max is the first).
  size_t keep = cand_.size();
  if (p.min_p > 0.0f) {
    const float threshold = p.min_p * cand_[0].logprob;
    keep = 1;
    while (keep < cand_.size() && cand_[keep].logprob >= threshold) ++keep;
  }
  // top-p: the smallest prefix whose mass reaches top_p.
  if (p.top_p < 1.0f) {
    float cum = 0.0f;
    size_t i = 0;
    for (; i < keep; ++i) {
      cum += cand_[i].logprob;
      if (cum >= p.top_p) {
        ++i;
        break;
      }
    }
    keep = std::max<size_t>(1, std::min(keep, i));
  }
  float mass = 0.0f;
  for (size_t i = 0; i < keep; ++i) mass += cand_[i].logprob;
  STET_CHECK_MSG(p.seed.has_value(), "a random draw needs a seed (Engine::Submit sets one)");
  const float u = UniformFloat(*p.seed, choice, position) * mass;
  float cum = 0.0f;
  for (size_t i = 0; i < keep; ++i) {
    cum += cand_[i].logprob;
    if (u < cum) return cand_[i].id;
  }
  return cand_[keep - 1].id;
}

}  // namespace stet

// Sampling and logprobs with stet's own exp/log, in a fixed order (rule R7):
// the adjusted row is a copy, the reported logprobs come from the raw row, and
// the draw is keyed by (seed, choice, position) only. The full-row scans
// (argmax, max, the sum of exps) are kernels with SIMD paths that give the
// serial loops' bits (kernels.h).
#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <optional>

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
// The total order of the draw: logit descending, then id ascending.
bool Better(const TokenLogprob& a, const TokenLogprob& b) {
  return a.logprob > b.logprob || (a.logprob == b.logprob && a.id < b.id);
}

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
  FillCandidates(logits, n, allowed);
  const int nc = static_cast<int>(cand_.size());
  const int k = (p.top_k > 0 && p.top_k < nc) ? p.top_k : nc;
  if (k < nc) {
    std::partial_sort(cand_.begin(), cand_.begin() + k, cand_.end(), Better);
    cand_.resize(k);
    return *DrawSorted(cand_.size(), false, p, choice, position);
  }
  if (std::optional<int32_t> id = DrawFromHead(p, choice, position)) return *id;
  // The draw depends on the tail (rare: a min-p, top-p or uniform draw that
  // reaches past the head): sort everything, as the head path stands for.
  FillCandidates(logits, n, allowed);
  std::sort(cand_.begin(), cand_.end(), Better);
  return *DrawSorted(cand_.size(), false, p, choice, position);
}

// Candidates in token order: every token, or the allowed ones.
void Sampler::FillCandidates(const float* logits, int n, const uint8_t* allowed) {
  cand_.clear();
  for (int i = 0; i < n; ++i) {
    if (!allowed || allowed[i]) cand_.push_back({i, logits[i]});
  }
  STET_CHECK_MSG(!cand_.empty(), "a mask must allow at least one token");
}

// Without top-k every candidate is in the draw, but only the head of the
// sorted order can change it: a term e = ExpF(a), a = logit / T - top < kHeadArg,
// is below 2.1e-9, while the softmax sum is >= 1 (its first term is ExpF(0) = 1)
// and the draw's mass >= 0.5, so adding the tail's terms or probabilities
// (<= e) rounds back to the same float (half an ulp there is >= 2^-25). a is
// monotone in the logit, so the head (a >= kHeadArg) is a prefix of the full
// order: sorting it alone gives the same sums, truncations and draw — unless
// min-p or top-p would keep reading past it, or the draw falls through it;
// then nullopt, and the caller sorts everything.
std::optional<int32_t> Sampler::DrawFromHead(const SamplingParams& p, uint32_t choice,
                                             uint64_t position) {
  constexpr float kHeadArg = -20.0f;
  float mx = -INFINITY;
  for (const TokenLogprob& c : cand_) {
    if (c.logprob != c.logprob) return std::nullopt;  // NaN: the full sort decides
    mx = std::max(mx, c.logprob);
  }
  const float top = mx / p.temperature;
  if (!std::isfinite(top)) return std::nullopt;
  const auto head_end = std::partition(cand_.begin(), cand_.end(), [&](const TokenLogprob& c) {
    return c.logprob / p.temperature - top >= kHeadArg;
  });
  std::sort(cand_.begin(), head_end, Better);
  return DrawSorted(static_cast<size_t>(head_end - cand_.begin()), true, p, choice, position);
}

// Softmax of logit / temperature over the first `size` sorted candidates
// (summed in sorted order), min-p, top-p and the seeded draw. head_only: the
// candidates past `size` are the negligible tail (DrawFromHead); nullopt where
// the result would depend on them.
std::optional<int32_t> Sampler::DrawSorted(size_t size, bool head_only, const SamplingParams& p,
                                           uint32_t choice, uint64_t position) {
  const float top = cand_[0].logprob / p.temperature;
  float sum = 0.0f;
  for (size_t i = 0; i < size; ++i) {
    cand_[i].logprob = ExpF(cand_[i].logprob / p.temperature - top);
    sum += cand_[i].logprob;
  }
  if (head_only && !(sum >= 1.0f)) return std::nullopt;
  for (size_t i = 0; i < size; ++i) cand_[i].logprob /= sum;
  bool tail_kept = head_only;  // the tail is still in the draw
  // min-p: keep candidates with probability >= min_p * p_max (p_max is the first).
  size_t keep = size;
  if (p.min_p > 0.0f) {
    const float threshold = p.min_p * cand_[0].logprob;
    keep = 1;
    while (keep < size && cand_[keep].logprob >= threshold) ++keep;
    if (head_only && keep == size) return std::nullopt;
    tail_kept = false;
  }
  // top-p: the smallest prefix whose mass reaches top_p.
  if (p.top_p < 1.0f) {
    float cum = 0.0f;
    size_t i = 0;
    bool reached = false;
    for (; i < keep; ++i) {
      cum += cand_[i].logprob;
      if (cum >= p.top_p) {
        ++i;
        reached = true;
        break;
      }
    }
    if (tail_kept && !reached) return std::nullopt;
    keep = std::max<size_t>(1, std::min(keep, i));
    tail_kept = tail_kept && !reached;
  }
  float mass = 0.0f;
  for (size_t i = 0; i < keep; ++i) mass += cand_[i].logprob;
  if (tail_kept && !(mass >= 0.5f)) return std::nullopt;
  STET_CHECK_MSG(p.seed.has_value(), "a random draw needs a seed (Engine::Submit sets one)");
  const float u = UniformFloat(*p.seed, choice, position) * mass;
  float cum = 0.0f;
  for (size_t i = 0; i < keep; ++i) {
    cum += cand_[i].logprob;
    if (u < cum) return cand_[i].id;
  }
  if (tail_kept) return std::nullopt;  // the full draw would go on into the tail
  return cand_[keep - 1].id;
}

}  // namespace stet

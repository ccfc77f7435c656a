// Sampling is deterministic (rule R7): greedy ties go to the lower id; seeded
// draws are a pure function of (seed, choice, position); the truncations
// (top-k, top-p, min-p) keep exactly the candidates they define.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <tuple>
#include <unordered_map>

#include "base/rng.h"
#include "numerics/math.h"

namespace stet {
namespace {

TEST(Sampler, ArgmaxTiesGoToLowerId) {
  const std::vector<float> l = {0.5f, 2.0f, 1.0f, 2.0f, -1.0f};
  EXPECT_EQ(Argmax(l.data(), 5), 1);
  Sampler s;
  SamplingParams p;
  p.temperature = 0;
  EXPECT_EQ(s.Sample(l.data(), 5, p, 0, 0), 1);
}

// The sampler's full-row scans run on the kernels' SIMD paths; its numbers are
// still those of the plain serial loops, bit for bit, on every path this CPU has.
TEST(Sampler, EveryIsaGivesTheSerialLoopsBits) {
  std::mt19937 rng(9);
  std::normal_distribution<float> g(0.0f, 3.0f);
  std::vector<float> l(262144 + 3);
  for (float& v : l) v = g(rng);
  l[77] = -INFINITY;
  l[1000] = l[200000] = 30.0f;  // a tie for the max
  const int n = static_cast<int>(l.size());
  int32_t want_id = 0;
  float mx = l[0];
  for (int i = 1; i < n; ++i) {
    if (l[i] > l[want_id]) want_id = i;
    mx = std::max(mx, l[i]);
  }
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += ExpF(l[i] - mx);
  const float want_lp = (l[want_id] - mx) - LogF(sum);
  std::vector<Isa> isas = {Isa::kScalar};
  if (CpuHasAvx2Fma()) isas.push_back(Isa::kAvx2);
  if (CpuHasAvx512()) isas.push_back(Isa::kAvx512);
  if (CpuHasNeon()) isas.push_back(Isa::kNeon);
  for (Isa isa : isas) {
    SamplingParams p;
    p.temperature = 0;
    const TokenPick pick = Sampler(isa).Pick(l.data(), n, p, {}, 2, 0, 0);
    EXPECT_EQ(pick.id, 1000) << IsaName(isa);
    EXPECT_EQ(Argmax(l.data(), n, isa), 1000) << IsaName(isa);
    EXPECT_EQ(std::memcmp(&pick.logprob, &want_lp, 4), 0) << IsaName(isa);
    const float lp = LogSoftmaxAt(l.data(), n, 123, isa);
    const float want123 = (l[123] - mx) - LogF(sum);
    EXPECT_EQ(std::memcmp(&lp, &want123, 4), 0) << IsaName(isa);
    ASSERT_EQ(pick.top.size(), 2u);
    EXPECT_EQ(pick.top[1].id, 200000) << IsaName(isa);
  }
}

TEST(Sampler, LogSoftmaxMatchesDoublePrecision) {
  const std::vector<float> l = {1.0f, 2.0f, 3.0f, -4.0f, 0.25f};
  double z = 0;
  for (float v : l) z += std::exp(static_cast<double>(v));
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(LogSoftmaxAt(l.data(), 5, i), l[i] - std::log(z), 1e-6);
  }
  const auto top = TopLogprobs(l.data(), 5, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].id, 2);
  EXPECT_EQ(top[1].id, 1);
  EXPECT_EQ(top[2].id, 0);
}

TEST(Sampler, SeededDrawsArePureFunctions) {
  std::vector<float> l(100);
  for (int i = 0; i < 100; ++i) l[i] = std::sin(i * 0.7f);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 1234;
  Sampler a, b;
  std::vector<int32_t> first;
  for (uint64_t pos = 0; pos < 50; ++pos) first.push_back(a.Sample(l.data(), 100, p, 0, pos));
  // Another sampler, positions visited in reverse: same tokens per position.
  for (int pos = 49; pos >= 0; --pos) EXPECT_EQ(b.Sample(l.data(), 100, p, 0, pos), first[pos]);
  // Different seeds or choice indices give different streams.
  int differ = 0;
  for (uint64_t pos = 0; pos < 50; ++pos) {
    differ += a.Sample(l.data(), 100, p, 1, pos) != first[pos];
  }
  EXPECT_GT(differ, 10);
}

TEST(Sampler, TopKKeepsOnlyK) {
  std::vector<float> l = {5.0f, 4.9f, 4.8f, 0.0f, 0.0f, 0.0f};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 2;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  Sampler s;
  for (uint64_t pos = 0; pos < 200; ++pos) {
    p.seed = pos;
    const int32_t id = s.Sample(l.data(), 6, p, 0, pos);
    EXPECT_TRUE(id == 0 || id == 1) << id;
  }
}

TEST(Sampler, MinPAndTopPTruncate) {
  // probabilities ~ [0.6, 0.3, 0.1 * tiny...]
  std::vector<float> l = {std::log(0.6f), std::log(0.3f), std::log(0.05f), std::log(0.05f)};
  Sampler s;
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.2f;  // keeps p >= 0.12: ids 0, 1
  p.seed = 0;
  std::map<int32_t, int> seen;
  for (uint64_t pos = 0; pos < 500; ++pos) seen[s.Sample(l.data(), 4, p, 0, pos)]++;
  EXPECT_EQ(seen.count(2) + seen.count(3), 0u);
  EXPECT_GT(seen[0], seen[1]);
  p.min_p = 0.0f;
  p.top_p = 0.5f;  // the first candidate alone reaches 0.5
  for (uint64_t pos = 0; pos < 100; ++pos) EXPECT_EQ(s.Sample(l.data(), 4, p, 0, pos), 0);
}

// The draw as the sampler defines it, over every candidate fully sorted: the
// spec that Sample's head-only sort must reproduce exactly.
int32_t FullSortDraw(const std::vector<float>& l, const SamplingParams& p, uint32_t choice,
                     uint64_t position, const std::vector<uint8_t>& allowed) {
  std::vector<TokenLogprob> c;
  for (size_t i = 0; i < l.size(); ++i) {
    if (allowed.empty() || allowed[i]) c.push_back({static_cast<int32_t>(i), l[i]});
  }
  std::sort(c.begin(), c.end(), [](const TokenLogprob& a, const TokenLogprob& b) {
    return a.logprob > b.logprob || (a.logprob == b.logprob && a.id < b.id);
  });
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < c.size()) c.resize(p.top_k);
  const float top = c[0].logprob / p.temperature;
  float sum = 0.0f;
  for (auto& x : c) sum += (x.logprob = ExpF(x.logprob / p.temperature - top));
  for (auto& x : c) x.logprob /= sum;
  size_t keep = c.size();
  if (p.min_p > 0.0f) {
    keep = 1;
    while (keep < c.size() && c[keep].logprob >= p.min_p * c[0].logprob) ++keep;
  }
  if (p.top_p < 1.0f) {
    float cum = 0.0f;
    size_t i = 0;
    for (; i < keep; ++i) {
      cum += c[i].logprob;
      if (cum >= p.top_p) {
        ++i;
        break;
      }
    }
    keep = std::max<size_t>(1, std::min(keep, i));
  }
  float mass = 0.0f;
  for (size_t i = 0; i < keep; ++i) mass += c[i].logprob;
  const float u = UniformFloat(*p.seed, choice, position) * mass;
  float cum = 0.0f;
  for (size_t i = 0; i < keep; ++i) {
    cum += c[i].logprob;
    if (u < cum) return c[i].id;
  }
  return c[keep - 1].id;
}

// Sample sorts only the head of a large vocabulary (the tail cannot change a
// float sum or the draw, else it falls back to the full sort): every draw
// equals the full sort's, over vocabularies up to Gemma's 262144 entries, flat
// and peaked rows, ties, -inf, masks, and every truncation.
TEST(Sampler, HeadSortDrawsEqualTheFullSort) {
  std::mt19937 rng(20261203);
  Sampler s;
  int checked = 0;
  for (int n : {1, 2, 7, 300, 5000, 49152, 262144}) {
    for (float scale : {0.01f, 1.0f, 4.0f, 30.0f}) {
      std::normal_distribution<float> g(0.0f, scale);
      std::vector<float> l(n);
      for (float& v : l) v = g(rng);
      if (n > 10) {
        l[n / 3] = l[n / 2];  // a tie
        l[n / 5] = -INFINITY;
      }
      std::vector<uint8_t> mask;
      if (n > 100 && scale == 4.0f) {
        mask.assign(n, 0);
        for (int i = 0; i < n; i += 3) mask[i] = 1;
      }
      for (float t : {0.3f, 0.7f, 1.0f, 2.5f}) {
        for (auto [top_k, top_p, min_p] :
             {std::tuple{0, 1.0f, 0.0f}, std::tuple{0, 0.9f, 0.0f}, std::tuple{0, 1.0f, 0.05f},
              std::tuple{40, 0.95f, 0.0f}, std::tuple{0, 0.999999f, 0.0f},
              std::tuple{0, 1.0f, 1e-9f}}) {
          SamplingParams p;
          p.temperature = t;
          p.top_k = top_k;
          p.top_p = top_p;
          p.min_p = min_p;
          p.seed = 7;
          const int positions = n >= 49152 ? 1 : 12;
          for (int pos = 0; pos < positions; ++pos) {
            const int32_t got =
                s.Sample(l.data(), n, p, 1, pos, mask.empty() ? nullptr : mask.data());
            ASSERT_EQ(got, FullSortDraw(l, p, 1, pos, mask))
                << "n=" << n << " scale=" << scale << " T=" << t << " top_k=" << top_k
                << " top_p=" << top_p << " min_p=" << min_p << " pos=" << pos;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(Sampler, TemperatureOneFollowsTheDistribution) {
  std::vector<float> l = {0.0f, std::log(3.0f)};  // p = [0.25, 0.75]
  Sampler s;
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 7;
  int ones = 0;
  const int n = 20000;
  for (int pos = 0; pos < n; ++pos) ones += s.Sample(l.data(), 2, p, 0, pos);
  // Binomial(20000, 0.75): sd ~ 61; 5 sd bound.
  EXPECT_NEAR(ones, 0.75 * n, 5 * 61.3);
}

// Pick without adjustments = Sample + LogSoftmaxAt + TopLogprobs, bit for bit
// (one log-sum-exp serves both reported values).
TEST(Sampler, PickEqualsSampleAndLogprobs) {
  std::vector<float> l(300);
  for (int i = 0; i < 300; ++i) l[i] = 3.0f * std::sin(i * 1.3f);
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.seed = 99;
  Sampler a, b;
  for (uint64_t pos = 0; pos < 30; ++pos) {
    const TokenPick got = a.Pick(l.data(), 300, p, {}, 5, 2, pos);
    EXPECT_EQ(got.id, b.Sample(l.data(), 300, p, 2, pos));
    const float lp = LogSoftmaxAt(l.data(), 300, got.id);
    EXPECT_EQ(std::memcmp(&got.logprob, &lp, 4), 0);
    const auto top = TopLogprobs(l.data(), 300, 5);
    ASSERT_EQ(got.top.size(), 5u);
    for (int k = 0; k < 5; ++k) {
      EXPECT_EQ(got.top[k].id, top[k].id);
      EXPECT_EQ(std::memcmp(&got.top[k].logprob, &top[k].logprob, 4), 0);
    }
  }
}

// The adjustments steer the draw but never the reported logprob (raw row).
TEST(Sampler, PickAppliesBiasAndPenaltiesToTheDrawOnly) {
  const std::vector<float> l = {2.0f, 1.0f, 0.5f, -1.0f};
  SamplingParams greedy;
  greedy.temperature = 0;
  Sampler s;
  SamplingParams biased = greedy;
  biased.logit_bias = {{3, 4.0f}};
  TokenPick t = s.Pick(l.data(), 4, biased, {}, 0, 0, 0);
  EXPECT_EQ(t.id, 3);  // -1 + 4 = 3 beats 2
  EXPECT_EQ(t.logprob, LogSoftmaxAt(l.data(), 4, 3));
  // Repetition penalty: each distinct context token once (2 / 3 < 1, so id 1 wins).
  const std::vector<int32_t> context = {0, 0, 0};
  SamplingParams rep = greedy;
  rep.repetition_penalty = 3.0f;
  EXPECT_EQ(s.Pick(l.data(), 4, rep, {&context, nullptr}, 0, 0, 0).id, 1);
  rep.repetition_penalty = 1.9f;  // 2 / 1.9 > 1: still id 0 (applied once, not three times)
  EXPECT_EQ(s.Pick(l.data(), 4, rep, {&context, nullptr}, 0, 0, 0).id, 0);
  // Presence + frequency: 2 - (0.5 + 0.4 * 2) = 0.7 < 1.
  const std::unordered_map<int32_t, int> counts = {{0, 2}};
  SamplingParams pres = greedy;
  pres.presence_penalty = 0.5f;
  pres.frequency_penalty = 0.4f;
  EXPECT_EQ(s.Pick(l.data(), 4, pres, {nullptr, &counts}, 0, 0, 0).id, 1);
  // Without the history they read, the penalties change nothing.
  EXPECT_EQ(s.Pick(l.data(), 4, pres, {}, 0, 0, 0).id, 0);
}

TEST(Sampler, DefaultsAreNeutral) {
  const SamplingParams p;
  EXPECT_EQ(p.temperature, 1.0f);
  EXPECT_EQ(p.top_k, 0);
  EXPECT_EQ(p.top_p, 1.0f);
  EXPECT_EQ(p.min_p, 0.0f);
  EXPECT_TRUE(p.logit_bias.empty());
  EXPECT_EQ(p.repetition_penalty, 1.0f);
  EXPECT_EQ(p.presence_penalty, 0.0f);
  EXPECT_EQ(p.frequency_penalty, 0.0f);
  EXPECT_FALSE(p.seed.has_value());  // the engine picks one (NewSeed)
}

// A random draw without a seed is a programmer error, never a silent seed 0.
TEST(SamplerDeathTest, DrawWithoutASeedAborts) {
  const std::vector<float> l = {1.0f, 2.0f};
  SamplingParams p;
  Sampler s;
  EXPECT_DEATH(s.Sample(l.data(), 2, p, 0, 0), "seed");
  p.temperature = 0;  // greedy needs none
  EXPECT_EQ(s.Sample(l.data(), 2, p, 0, 0), 1);
}

TEST(Sampler, AMaskLimitsEveryDrawToAllowedTokens) {
  const std::vector<float> l = {3.0f, 2.0f, 1.0f, 2.0f, 0.5f, -1.0f};
  const std::vector<uint8_t> allowed = {0, 1, 0, 1, 1, 0};
  Sampler s;
  SamplingParams p;
  p.temperature = 0;
  EXPECT_EQ(s.Sample(l.data(), 6, p, 0, 0, allowed.data()), 1);  // best allowed, tie to lower id
  p.temperature = 1.5f;
  p.seed = 3;
  std::map<int32_t, int> seen;
  for (uint64_t pos = 0; pos < 2000; ++pos)
    ++seen[s.Sample(l.data(), 6, p, 0, pos, allowed.data())];
  EXPECT_EQ(seen.size(), 3u);
  for (const auto& [id, n] : seen) EXPECT_TRUE(allowed[id]) << id;
  // The reported logprob is the raw row's, mask or not.
  TokenPick pick = s.Pick(l.data(), 6, p, {}, 2, 0, 5, allowed.data());
  EXPECT_EQ(pick.logprob, LogSoftmaxAt(l.data(), 6, pick.id));
  EXPECT_EQ(pick.top[0].id, 0);  // the raw top alternative, though masked
}

}  // namespace
}  // namespace stet

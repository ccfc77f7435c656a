// Divergence analysis on synthetic runs: grouping, the reference is the most
// common output, the first divergent token, the tokens and the logprob gap at
// the fork (from either side's top-k, or a bound), byte forks without logprobs;
// and the probe verdict built from them.
#include "forensics/analysis/divergence.h"

#include <gtest/gtest.h>

#include "forensics/analysis/probe.h"

namespace stet::forensics {
namespace {

// A completion from (token, logprob, {alternatives}) triples.
Completion Make(
    const std::vector<std::tuple<std::string, double, std::vector<std::pair<std::string, double>>>>&
        toks,
    const std::string& fp = "") {
  Completion c;
  c.has_logprobs = true;
  c.system_fingerprint = fp;
  for (const auto& [t, lp, top] : toks) {
    c.text += t;
    TokenLogprob tl{t, lp, top};
    c.tokens.push_back(tl);
  }
  return c;
}

Completion RefRun(const std::string& fp = "") {
  return Make({{"The", -0.1, {{"The", -0.1}, {"A", -2.5}}},
               {" cat", -0.70, {{" cat", -0.70}, {" dog", -0.71}, {" cow", -3.0}}},
               {" sat", -0.2, {{" sat", -0.2}}}},
              fp);
}

Completion ForkRun() {
  return Make({{"The", -0.1, {{"The", -0.1}, {"A", -2.5}}},
               {" dog", -0.705, {{" dog", -0.705}, {" cat", -0.707}, {" cow", -3.0}}},
               {" ran", -0.3, {{" ran", -0.3}}}});
}

TEST(Divergence, FirstForkTokensAndGap) {
  const Fork f = FindFork(RefRun(), ForkRun());
  EXPECT_EQ(f.token_index, 1);
  EXPECT_EQ(f.byte_offset, 4);  // "The " then 'c' vs 'd'
  EXPECT_EQ(f.reference_token, " cat");
  EXPECT_EQ(f.variant_token, " dog");
  ASSERT_TRUE(f.gap_reference.has_value());
  EXPECT_NEAR(*f.gap_reference, 0.01, 1e-12);  // -0.70 - (-0.71)
  ASSERT_TRUE(f.gap_variant.has_value());
  EXPECT_NEAR(*f.gap_variant, -0.002, 1e-12);  // -0.707 - (-0.705)
  EXPECT_EQ(DescribeGap(f), "gap 0.01");
}

TEST(Divergence, GapBoundWhenTheOtherTokenIsOutsideTopK) {
  Completion a = Make({{"x", -0.1, {{"x", -0.1}, {"y", -1.5}}}});
  Completion b = Make({{"z", -0.2, {{"z", -0.2}, {"w", -4.0}}}});
  const Fork f = FindFork(a, b);
  EXPECT_EQ(f.token_index, 0);
  EXPECT_FALSE(f.gap_reference.has_value());
  EXPECT_FALSE(f.gap_variant.has_value());
  ASSERT_TRUE(f.gap_bound.has_value());
  EXPECT_NEAR(*f.gap_bound, 3.8, 1e-12);  // the larger of 1.4 and 3.8
  EXPECT_NE(DescribeGap(f).find(">="), std::string::npos);
}

TEST(Divergence, PrefixAndByteForks) {
  Completion a = RefRun();
  Completion shorter = Make({{"The", -0.1, {}}, {" cat", -0.7, {}}});
  const Fork f = FindFork(a, shorter);
  EXPECT_EQ(f.token_index, 2);
  EXPECT_EQ(f.reference_token, " sat");
  EXPECT_EQ(f.variant_token, "");
  EXPECT_EQ(DescribeGap(f), "one output ended there");
  Completion t1, t2;
  t1.text = "hello world";
  t2.text = "hello there";
  const Fork g = FindFork(t1, t2);
  EXPECT_EQ(g.token_index, -1);
  EXPECT_EQ(g.byte_offset, 6);
  EXPECT_EQ(DescribeGap(g), "gap unknown (no logprobs)");
}

TEST(Divergence, MostCommonOutputIsTheReference) {
  std::vector<Completion> runs = {ForkRun(), RefRun(), RefRun(), RefRun(), ForkRun()};
  const DivergenceReport r = AnalyzeRuns(runs);
  EXPECT_EQ(r.runs, 5);
  ASSERT_EQ(r.distinct(), 2);
  EXPECT_EQ(r.variants[0].count, 3);
  EXPECT_EQ(r.variants[0].text, RefRun().text);
  EXPECT_FALSE(r.variants[0].fork.has_value());
  ASSERT_TRUE(r.variants[1].fork.has_value());
  EXPECT_EQ(r.variants[1].fork->token_index, 1);
  EXPECT_EQ(r.ForkPositions(), (std::vector<int>{1, 1}));
  EXPECT_EQ(r.EarliestFork()->token_index, 1);
  EXPECT_EQ(r.distinct_logprob_traces, 2);
}

TEST(Divergence, SameTextDifferentLogprobsCountsAsOneOutputTwoTraces) {
  Completion a = RefRun(), b = RefRun();
  b.tokens[2].logprob = -0.2000001;
  const DivergenceReport r = AnalyzeRuns({a, b, a});
  EXPECT_EQ(r.distinct(), 1);
  EXPECT_EQ(r.distinct_logprob_traces, 2);
}

ProbeResult Synthetic(const std::vector<std::vector<Completion>>& levels) {
  ProbeResult r;
  r.options.request.model = "m";
  r.options.request.prompt = "p";
  int c = 1;
  std::vector<Completion> all;
  for (const auto& runs : levels) {
    LevelResult lr;
    lr.concurrency = c;
    c *= 8;
    lr.runs = runs;
    lr.analysis = AnalyzeRuns(runs);
    all.insert(all.end(), runs.begin(), runs.end());
    r.levels.push_back(lr);
  }
  r.overall = AnalyzeRuns(all);
  Judge(&r);
  return r;
}

TEST(ProbeVerdict, Deterministic) {
  const auto r = Synthetic({{RefRun(), RefRun()}, {RefRun(), RefRun()}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.verdict, "deterministic at all tested levels");
  ASSERT_FALSE(r.notes.empty());  // no fingerprint sent
}

TEST(ProbeVerdict, NondeterministicWithinALevel) {
  const auto r = Synthetic({{RefRun(), RefRun()}, {RefRun(), ForkRun(), RefRun()}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.verdict,
            "nondeterministic: 2 distinct outputs of 3 at concurrency 8, first fork at token 1 "
            "with gap 0.01");
}

TEST(ProbeVerdict, DependsOnLevel) {
  const auto r = Synthetic({{RefRun(), RefRun()}, {ForkRun(), ForkRun()}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.verdict.find("across concurrency levels"), std::string::npos) << r.verdict;
}

TEST(ProbeVerdict, FingerprintChangeVoidsTheComparison) {
  const auto r = Synthetic({{RefRun("fp_a"), RefRun("fp_a")}, {RefRun("fp_b"), ForkRun()}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.fingerprint_changed);
  EXPECT_NE(r.verdict.find("void"), std::string::npos);
  EXPECT_NE(r.verdict.find("fp_a, fp_b"), std::string::npos);
}

TEST(ProbeVerdict, ErrorsMakeItIncomplete) {
  auto r = Synthetic({{RefRun(), RefRun()}});
  r.levels[0].errors = 1;
  Judge(&r);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.verdict.find("incomplete"), std::string::npos);
}

}  // namespace
}  // namespace stet::forensics

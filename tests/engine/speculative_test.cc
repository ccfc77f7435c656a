// Speculative decoding: the prompt-lookup drafter, the acceptance rule, the
// adaptive k, and the engine with speculation on giving bitwise the bytes,
// logprobs and fingerprint of the engine with it off (greedy and seeded
// sampling, n > 1, stop strings, max_tokens inside a run, prefix-cache hits,
// preemption, the per-request switch). The randomized axis is in
// invariance_test.cc.
#include "engine/speculative.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "engine/engine.h"
#include "support/test_support.h"

namespace stet {
namespace {

TEST(PromptLookup, ContinuesTheLatestEarlierOccurrence) {
  // Tail {2, 3} occurs at 1: continue from 3.
  EXPECT_EQ(PromptLookupDraft({1, 2, 3, 4, 5, 9, 2, 3}, 3, 1, 3), (std::vector<int32_t>{4, 5, 9}));
  // Capped by what follows the match.
  EXPECT_EQ(PromptLookupDraft({1, 2, 3, 4, 2, 3}, 8, 2, 2), (std::vector<int32_t>{4, 2, 3}));
  // The latest occurrence with k tokens after it wins over earlier ones.
  EXPECT_EQ(PromptLookupDraft({1, 2, 10, 11, 12, 1, 2, 20, 21, 22, 1, 2}, 3, 2, 2),
            (std::vector<int32_t>{20, 21, 22}));
  // A latest occurrence too close to the end is passed over for a full continuation.
  EXPECT_EQ(PromptLookupDraft({1, 2, 10, 11, 12, 1, 2, 1, 2}, 3, 2, 2),
            (std::vector<int32_t>{10, 11, 12}));
}

TEST(PromptLookup, PrefersTheLongestNgram) {
  // {5, 8, 1} continues with 2; the shorter {8, 1} would say 3 (later).
  EXPECT_EQ(PromptLookupDraft({5, 8, 1, 2, 7, 8, 1, 3, 5, 8, 1}, 1, 1, 3),
            (std::vector<int32_t>{2}));
  // With 3-grams off, the 2-gram's latest match.
  EXPECT_EQ(PromptLookupDraft({5, 8, 1, 2, 7, 8, 1, 3, 5, 8, 1}, 1, 1, 2),
            (std::vector<int32_t>{3}));
}

TEST(PromptLookup, NothingWithoutAMatch) {
  EXPECT_TRUE(PromptLookupDraft({1, 2, 3}, 4, 1, 3).empty());
  EXPECT_TRUE(PromptLookupDraft({7}, 4, 1, 3).empty());
  EXPECT_TRUE(PromptLookupDraft({}, 4, 1, 3).empty());
  EXPECT_TRUE(PromptLookupDraft({1, 2, 1, 2}, 0, 1, 3).empty());
  // Only 1-grams match, and 1-grams are off.
  EXPECT_TRUE(PromptLookupDraft({4, 9, 5, 4}, 2, 2, 3).empty());
}

// A fake target: row j emits target[j] (what the sampler would pick there).
struct Target {
  std::vector<int32_t> ids;
  int end_at = -1;  // the row whose token ends the choice
  std::vector<int> rows;
  Emitted operator()(int row) {
    rows.push_back(row);
    return {ids[row], row == end_at};
  }
};

TEST(VerifyDraft, KeepsTheMatchingPrefixAndTheFirstCorrection) {
  Target t{{10, 11, 12, 13, 14}};
  Verdict all = VerifyDraft({10, 11, 12}, std::ref(t));
  EXPECT_EQ(all.accepted, 3);
  EXPECT_EQ(all.emitted, 4);  // plus the bonus token from the last row
  EXPECT_FALSE(all.ended);
  EXPECT_EQ(t.rows, (std::vector<int>{0, 1, 2, 3}));

  Target u{{10, 11, 12, 13, 14}};
  Verdict mid = VerifyDraft({10, 99, 12}, std::ref(u));
  EXPECT_EQ(mid.accepted, 1);
  EXPECT_EQ(mid.emitted, 2);  // 10, then the correction 11; rows 2 and 3 are never sampled
  EXPECT_EQ(u.rows, (std::vector<int>{0, 1}));

  Target v{{10}};
  Verdict none = VerifyDraft({99, 98}, std::ref(v));
  EXPECT_EQ(none.accepted, 0);
  EXPECT_EQ(none.emitted, 1);

  Target w{{10}};
  Verdict plain = VerifyDraft({}, std::ref(w));  // no draft: plain decoding
  EXPECT_EQ(plain.accepted, 0);
  EXPECT_EQ(plain.emitted, 1);
}

TEST(VerifyDraft, StopsWhereTheChoiceEnds) {
  // A stop string, stop id or max_tokens ends the choice on row 1, inside an
  // accepted run: nothing after it is sampled or emitted.
  Target t{{10, 11, 12, 13}, /*end_at=*/1};
  Verdict v = VerifyDraft({10, 11, 12}, std::ref(t));
  EXPECT_TRUE(v.ended);
  EXPECT_EQ(v.emitted, 2);
  EXPECT_EQ(v.accepted, 2);
  EXPECT_EQ(t.rows, (std::vector<int>{0, 1}));
  Target u{{10, 11}, /*end_at=*/1};  // ends on the correction
  Verdict w = VerifyDraft({10, 50, 51}, std::ref(u));
  EXPECT_TRUE(w.ended);
  EXPECT_EQ(w.emitted, 2);
  EXPECT_EQ(w.accepted, 1);
}

TEST(SpecK, DraftsShareTheStepsRowBudget) {
  EXPECT_EQ(DraftShare(1, 1), kSpecRowBudget - 1);  // one stream: k is the only limit
  EXPECT_EQ(DraftShare(4, 4), (kSpecRowBudget - 4) / 4);
  EXPECT_EQ(DraftShare(4, 2), (kSpecRowBudget - 4) / 2);  // only some sequences speculate
  EXPECT_EQ(DraftShare(kSpecRowBudget, 3), 0);            // a full batch drafts nothing
  EXPECT_EQ(DraftShare(kSpecRowBudget + 8, 8), 0);
  EXPECT_EQ(DraftShare(3, 0), 0);
}

TEST(SpecK, AdaptsToAcceptance) {
  EXPECT_EQ(NextSpecK(4, 8, 4, 4), 6);  // all accepted: grow
  EXPECT_EQ(NextSpecK(8, 8, 8, 8), 8);  // up to k_max
  EXPECT_EQ(NextSpecK(6, 8, 6, 2), 3);  // rejected: one more than accepted
  EXPECT_EQ(NextSpecK(4, 8, 4, 0), 1);
  EXPECT_EQ(NextSpecK(4, 8, 0, 0), 4);  // nothing drafted: unchanged
}

TEST(SpecOptions, ParseAndValidate) {
  EXPECT_EQ(*ParseSpecMode("lookup"), SpecMode::kLookup);
  EXPECT_EQ(*ParseSpecMode("off"), SpecMode::kOff);
  EXPECT_EQ(*ParseSpecMode("draft"), SpecMode::kDraft);
  EXPECT_FALSE(ParseSpecMode("eagle").ok());
  SpecOptions o;
  EXPECT_TRUE(ValidateSpecOptions(o).ok());
  o.mode = SpecMode::kDraft;  // a draft model is needed
  EXPECT_FALSE(ValidateSpecOptions(o).ok());
  o.draft_model = "d.gguf";
  EXPECT_TRUE(ValidateSpecOptions(o).ok());
  o.mode = SpecMode::kOff;  // loaded for requests that turn speculation on
  EXPECT_TRUE(ValidateSpecOptions(o).ok());
  o.mode = SpecMode::kLookup;  // a draft model and lookup exclude each other
  EXPECT_FALSE(ValidateSpecOptions(o).ok());
  o.mode = SpecMode::kOff;
  o.draft_model.clear();
  o.k = 0;
  EXPECT_FALSE(ValidateSpecOptions(o).ok());
  o.k = kMaxSpecK + 1;
  EXPECT_FALSE(ValidateSpecOptions(o).ok());
  o.k = 4;
  o.ngram_min = 3;
  o.ngram_max = 2;
  EXPECT_FALSE(ValidateSpecOptions(o).ok());
}

// ---------------------------------------------------------------------------
// The engine with speculation on against the engine with it off
// (prompt lookup here; the draft-model drafter in draft_model_test.cc).

std::string Stories() { return testing::SharedDir() + "/models/stories260K/stories260K.gguf"; }

std::unique_ptr<Engine> Open(bool spec, EngineOptions o = {}) {
  if (spec) {
    o.spec.mode = SpecMode::kLookup;
    o.spec.k = 6;
    o.spec.ngram_min = 1;  // drafts often, so rejections happen too
  }
  auto e = Engine::Open(Stories(), o);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

// The engine's counters once it has gone idle after the last request (it
// publishes them between steps, after the events of the step went out).
EngineStats Settled(const Engine& e) {
  for (int i = 0; i < 5000; ++i) {
    const EngineStats st = e.stats();
    if (st.running == 0 && st.waiting == 0) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return e.stats();
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// "" when equal: every token id, logprob, top logprob and logits hash, the text and finish.
std::string Diff(const Engine::Completion& a, const Engine::Completion& b) {
  if (a.tokens.size() != b.tokens.size()) return "choices";
  for (size_t c = 0; c < a.tokens.size(); ++c) {
    const std::string at = "choice " + std::to_string(c);
    if (a.text[c] != b.text[c]) return "text of " + at;
    if (a.finish[c] != b.finish[c]) return "finish of " + at;
    if (a.tokens[c].size() != b.tokens[c].size()) return "length of " + at;
    for (size_t i = 0; i < a.tokens[c].size(); ++i) {
      const TokenOut &x = a.tokens[c][i], &y = b.tokens[c][i];
      const std::string where = at + " token " + std::to_string(i);
      if (x.id != y.id || !SameBits(x.logprob, y.logprob)) return "token/logprob of " + where;
      if (x.logits_hash != y.logits_hash) return "logits of " + where;
      if (x.top.size() != y.top.size()) return "top of " + where;
      for (size_t k = 0; k < x.top.size(); ++k) {
        if (x.top[k].id != y.top[k].id || !SameBits(x.top[k].logprob, y.top[k].logprob))
          return "top of " + where;
      }
    }
  }
  return "";
}

// A prompt that quotes itself: the story the model is likely to continue copying.
RequestParams CopyHeavy(const Engine& e, int max_tokens) {
  RequestParams p;
  p.prompt = e.tokenizer().Encode(
      "Once upon a time, there was a little girl named Lily. She liked to play with her ball in "
      "the park. One day, Lily saw a big dog. Once upon a time, there was a little girl named "
      "Lily. She liked",
      true, false);
  p.max_tokens = max_tokens;
  p.sampling.temperature = 0;
  p.sampling.seed = 5;
  p.top_logprobs = 3;
  p.logits_hash = true;
  return p;
}

TEST(SpeculativeEngine, SameBytesOnAndOffAndTheFingerprintDoesNotChange) {
  STET_REQUIRE_FILE(Stories());
  auto off = Open(false), on = Open(true);
  ASSERT_TRUE(off && on);
  EXPECT_EQ(off->fingerprint(), on->fingerprint());
  EXPECT_EQ(off->fingerprint_descriptor(), on->fingerprint_descriptor());
  std::vector<RequestParams> cases;
  cases.push_back(CopyHeavy(*on, 80));  // greedy
  RequestParams seeded = CopyHeavy(*on, 60);
  seeded.sampling.temperature = 0.8f;
  seeded.sampling.top_k = 40;
  seeded.n = 3;  // each choice its own stream and its own drafts
  cases.push_back(seeded);
  RequestParams penalized = CopyHeavy(*on, 50);  // the penalties see the history as it grows
  penalized.sampling.temperature = 0.7f;
  penalized.sampling.repetition_penalty = 1.1f;
  penalized.sampling.frequency_penalty = 0.3f;
  cases.push_back(penalized);
  RequestParams stopped = CopyHeavy(*on, 80);
  stopped.stop = {"park"};  // a stop string the copy reaches inside an accepted run
  cases.push_back(stopped);
  RequestParams eos = CopyHeavy(*on, 200);
  eos.ignore_eos = false;
  cases.push_back(eos);
  // max_tokens at every length: the limit falls at every place in a verified run.
  for (int n = 1; n <= 24; ++n) cases.push_back(CopyHeavy(*on, n));
  for (size_t i = 0; i < cases.size(); ++i) {
    auto a = off->Generate(cases[i]);
    auto b = on->Generate(cases[i]);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(Diff(*b, *a), "") << "case " << i;
  }
  const EngineStats st = Settled(*on), st_off = Settled(*off);
  EXPECT_GT(st.spec_draft_tokens, 0);
  EXPECT_GT(st.spec_accepted_tokens, 0);
  EXPECT_LT(st.spec_accepted_tokens, st.spec_draft_tokens);  // rejections were exercised too
  EXPECT_LT(st.steps, st_off.steps);                         // and steps were saved
  EXPECT_EQ(st_off.spec_draft_tokens, 0);
  EXPECT_EQ(st.generated_tokens, st_off.generated_tokens);
  std::printf("[ spec ] %lld of %lld drafts accepted; %lld steps vs %lld without\n",
              static_cast<long long>(st.spec_accepted_tokens),
              static_cast<long long>(st.spec_draft_tokens), static_cast<long long>(st.steps),
              static_cast<long long>(st_off.steps));
}

TEST(SpeculativeEngine, ThePerRequestSwitch) {
  STET_REQUIRE_FILE(Stories());
  auto off = Open(false), on = Open(true);
  ASSERT_TRUE(off && on);
  RequestParams p = CopyHeavy(*on, 40);
  p.speculative = false;  // off on a speculating engine
  auto a = on->Generate(p);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(Settled(*on).spec_draft_tokens, 0);
  p.speculative = true;  // on on an engine that does not speculate by default
  auto b = off->Generate(p);
  ASSERT_TRUE(b.ok());
  EXPECT_GT(Settled(*off).spec_draft_tokens, 0);
  EXPECT_EQ(Diff(*b, *a), "");
}

// Speculating sequences under load: a KV pool small enough to preempt, tiny
// chunks so prefills run beside verification rows, shared prompts for
// prefix-cache hits; every request against its run on an engine without speculation.
TEST(SpeculativeEngine, UnderLoadWithPreemptionPrefixHitsAndChunkedPrefill) {
  STET_REQUIRE_FILE(Stories());
  EngineOptions tight;
  tight.n_ctx = 160;
  tight.block_size = 4;
  tight.n_kv_blocks = 48;  // 192 positions for 8 requests of up to ~120
  tight.chunk_size = 5;
  tight.max_batch_tokens = 24;
  EngineOptions roomy;
  roomy.n_ctx = tight.n_ctx;  // the same context: max_new is clamped alike
  auto off = Open(false, roomy), on = Open(true, tight);
  ASSERT_TRUE(off && on);
  std::vector<RequestParams> reqs;
  for (int i = 0; i < 8; ++i) {
    RequestParams p = CopyHeavy(*on, 30 + 7 * i);
    if (i % 2) p.prompt.resize(p.prompt.size() - i);  // shared prefixes of different lengths
    p.sampling.temperature = i % 3 == 0 ? 0.0f : 0.9f;
    p.sampling.seed = 100 + i;
    p.n = i % 4 == 1 ? 2 : 1;
    if (i == 5) p.stop = {"ball"};
    reqs.push_back(p);
  }
  std::vector<Result<Engine::Completion>> got(reqs.size(), Internal("not run"));
  std::vector<std::thread> clients;
  for (size_t i = 0; i < reqs.size(); ++i)
    clients.emplace_back([&, i] { got[i] = on->Generate(reqs[i]); });
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
    auto want = off->Generate(reqs[i]);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(Diff(*got[i], *want), "") << "request " << i;
  }
  const EngineStats st = Settled(*on);
  EXPECT_GT(st.spec_accepted_tokens, 0);
  EXPECT_GT(st.preemptions, 0) << "the pool was meant to be too small for all at once";
  EXPECT_GT(st.prefix_hit_tokens, 0);
  EXPECT_EQ(st.kv_blocks_used, 0);  // every block came back (cached ones are evictable)
}

}  // namespace
}  // namespace stet

// Speculative decoding: the prompt-lookup drafter, the acceptance rule, the
// adaptive k, and the engine with speculation on giving bitwise the bytes,
// logprobs and fingerprint of the engine with it off (greedy and seeded
// sampling, n > 1, stop strings, max_tokens inside a run, prefix-cache hits,
// preemption, the per-request switch). The randomized axis is in
// invariance_test.cc.
#include "engine/speculative.h"

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "spec_test_util.h"
#include "support/test_support.h"

namespace stet {
namespace {

using testing::Diff;
using testing::Settled;

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
  Target t{{10, 11, 12, 13, 14}, -1, {}};
  Verdict all = VerifyDraft({10, 11, 12}, std::ref(t));
  EXPECT_EQ(all.accepted, 3);
  EXPECT_EQ(all.emitted, 4);  // plus the bonus token from the last row
  EXPECT_FALSE(all.ended);
  EXPECT_EQ(t.rows, (std::vector<int>{0, 1, 2, 3}));

  Target u{{10, 11, 12, 13, 14}, -1, {}};
  Verdict mid = VerifyDraft({10, 99, 12}, std::ref(u));
  EXPECT_EQ(mid.accepted, 1);
  EXPECT_EQ(mid.emitted, 2);  // 10, then the correction 11; rows 2 and 3 are never sampled
  EXPECT_EQ(u.rows, (std::vector<int>{0, 1}));

  Target v{{10}, -1, {}};
  Verdict none = VerifyDraft({99, 98}, std::ref(v));
  EXPECT_EQ(none.accepted, 0);
  EXPECT_EQ(none.emitted, 1);

  Target w{{10}, -1, {}};
  Verdict plain = VerifyDraft({}, std::ref(w));  // no draft: plain decoding
  EXPECT_EQ(plain.accepted, 0);
  EXPECT_EQ(plain.emitted, 1);
}

TEST(VerifyDraft, StopsWhereTheChoiceEnds) {
  // A stop string, stop id or max_tokens ends the choice on row 1, inside an
  // accepted run: nothing after it is sampled or emitted.
  Target t{{10, 11, 12, 13}, /*end_at=*/1, {}};
  Verdict v = VerifyDraft({10, 11, 12}, std::ref(t));
  EXPECT_TRUE(v.ended);
  EXPECT_EQ(v.emitted, 2);
  EXPECT_EQ(v.accepted, 2);
  EXPECT_EQ(t.rows, (std::vector<int>{0, 1}));
  Target u{{10, 11}, /*end_at=*/1, {}};  // ends on the correction
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
  const auto cases = testing::SpecCases([&](int n) { return CopyHeavy(*on, n); }, 80);
  const EngineStats st = testing::ExpectSameBytes(*off, *on, cases, "spec");
  EXPECT_GT(st.spec_draft_tokens, 0);
  EXPECT_GT(st.spec_accepted_tokens, 0);
  EXPECT_LT(st.spec_accepted_tokens, st.spec_draft_tokens);  // rejections were exercised too
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
  auto off = Open(false, testing::RoomyPool()), on = Open(true, testing::TightPool());
  ASSERT_TRUE(off && on);
  testing::ExpectSameBytesUnderLoad(*off, *on, [&](int n) { return CopyHeavy(*on, n); });
}

}  // namespace
}  // namespace stet

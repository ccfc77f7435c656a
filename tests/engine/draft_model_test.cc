// The draft-model drafter (SpecMode::kDraft): the tokenizer check at load,
// and the engine drafting with a second model giving bitwise the tokens,
// logprobs, top logprobs, logits hashes, text and fingerprint of the engine
// without speculation — with the model as its own draft (every greedy draft
// accepted), with a re-quantized draft (some rejected), for greedy and seeded
// sampling, n > 1, penalties, stop strings, end of text, max_tokens at every
// place in an accepted run, under preemption, prefix hits and chunked
// prefill, and on SmolLM2 (a q4_1 draft for its q8_0 re-quantization).
#include "engine/draft_model.h"

#include <gtest/gtest.h>

#include <functional>

#include "engine/engine.h"
#include "model/quantize_model.h"
#include "spec_test_util.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"

namespace stet {
namespace {

using testing::Diff;
using testing::ExpectSameBytes;
using testing::Settled;

std::string Stories() { return testing::SharedDir() + "/models/stories260K/stories260K.gguf"; }
std::string TinyRandom() {
  return testing::SharedDir() + "/models/llama-2-tiny-random/llama-2-tiny-random.gguf";
}
std::string Smol() { return testing::ModelCacheDir() + "/SmolLM2-135M-Instruct.Q4_1.gguf"; }

// stories260K re-encoded in `type` (a draft whose logits differ from the target's).
std::string StoriesAs(DType type) {
  const std::string out =
      ::testing::TempDir() + "/stet-draft-stories-" + std::string(DTypeName(type)) + ".gguf";
  auto rep = QuantizeModel(Stories(), out, type, /*progress=*/false);
  EXPECT_TRUE(rep.ok()) << rep.status().ToString();
  return out;
}

VocabData VocabOf(const std::string& path) {
  auto loaded = LoadModelAndTokenizer(path);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  return loaded.ok() ? loaded->tokenizer->vocab() : VocabData{};
}

TEST(DraftTokenizer, EqualVocabulariesPassAndAnyDifferenceIsNamed) {
  STET_REQUIRE_FILE(Stories());
  const VocabData v = VocabOf(Stories());
  EXPECT_EQ(VocabDigest(v), VocabDigest(VocabOf(Stories())));
  EXPECT_TRUE(CheckSameTokenizer(v, "t.gguf", v, "d.gguf").ok());
  VocabData w = v;
  w.tokens[300] += "x";
  Status st = CheckSameTokenizer(v, "t.gguf", w, "d.gguf");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("token 300"), std::string::npos) << st.message();
  for (auto change : std::vector<std::function<void(VocabData*)>>{
           [](VocabData* x) { x->scores[7] += 1; }, [](VocabData* x) { x->eos_id = 3; },
           [](VocabData* x) { x->add_bos = !x->add_bos; },
           [](VocabData* x) {
             x->merges.push_back({"a", "b"});
           },
           [](VocabData* x) { x->token_types[9] = TokenType::kControl; }}) {
    VocabData u = v;
    change(&u);
    EXPECT_NE(VocabDigest(u), VocabDigest(v));
    EXPECT_FALSE(CheckSameTokenizer(v, "t.gguf", u, "d.gguf").ok());
  }
}

// A draft model with another tokenizer is refused at load, naming both files.
TEST(DraftTokenizer, AnEngineRefusesADraftWithAnotherTokenizer) {
  STET_REQUIRE_FILE(Stories());
  STET_REQUIRE_FILE(TinyRandom());
  std::vector<std::pair<std::string, std::string>> pairs = {{Stories(), TinyRandom()},
                                                            {TinyRandom(), Stories()}};
  if (testing::FileExists(Smol())) pairs.push_back({Smol(), Stories()});
  for (const auto& [target, draft] : pairs) {
    EngineOptions o;
    o.spec.mode = SpecMode::kDraft;
    o.spec.draft_model = draft;
    auto e = Engine::Open(target, o);
    ASSERT_FALSE(e.ok()) << target << " drafted by " << draft;
    const std::string m = e.status().message();
    EXPECT_NE(m.find(target), std::string::npos) << m;
    EXPECT_NE(m.find(draft), std::string::npos) << m;
    EXPECT_NE(m.find("tokenizer"), std::string::npos) << m;
  }
  EngineOptions none;  // draft mode without a draft model
  none.spec.mode = SpecMode::kDraft;
  EXPECT_FALSE(Engine::Open(Stories(), none).ok());
}

// ---------------------------------------------------------------------------
// The engine drafting with a model against the engine without speculation.

std::unique_ptr<Engine> Open(const std::string& target, const std::string& draft, int k,
                             EngineOptions o = {}) {
  if (!draft.empty()) {
    o.spec.mode = SpecMode::kDraft;
    o.spec.draft_model = draft;
    o.spec.k = k;
  }
  auto e = Engine::Open(target, o);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

RequestParams Story(const Engine& e, int max_tokens) {
  RequestParams p;
  p.prompt = e.tokenizer().Encode("Once upon a time, there was a little girl named Lily. She", true,
                                  false);
  p.max_tokens = max_tokens;
  p.sampling.temperature = 0;
  p.sampling.seed = 5;
  p.top_logprobs = 3;
  p.logits_hash = true;
  return p;
}

std::vector<RequestParams> Cases(const Engine& e) {
  return testing::SpecCases([&](int n) { return Story(e, n); }, 90);
}

// The model drafting for itself: its greedy drafts are exactly the target's
// greedy picks (same logits bit for bit), so every greedy draft is accepted.
TEST(DraftEngine, TheModelAsItsOwnDraftIsAcceptedWhollyWhenGreedy) {
  STET_REQUIRE_FILE(Stories());
  auto off = Open(Stories(), "", 0), on = Open(Stories(), Stories(), 5);
  ASSERT_TRUE(off && on);
  EXPECT_EQ(off->fingerprint(), on->fingerprint());
  std::vector<RequestParams> greedy;
  for (int n : {1, 2, 7, 40, 90}) greedy.push_back(Story(*on, n));
  const EngineStats st = ExpectSameBytes(*off, *on, greedy, "draft");
  EXPECT_GT(st.spec_draft_tokens, 0);
  EXPECT_EQ(st.spec_accepted_tokens, st.spec_draft_tokens);
  ExpectSameBytes(*off, *on, Cases(*on), "draft");  // sampled cases reject drafts too
}

// A re-quantized draft: its argmax differs from the target's pick here and
// there, so drafts are accepted and rejected, and the draft KV rolls back.
TEST(DraftEngine, AQuantizedDraftGivesTheSameBytes) {
  STET_REQUIRE_FILE(Stories());
  const std::string q4 = StoriesAs(DType::kQ4_0);
  auto off = Open(Stories(), "", 0), on = Open(Stories(), q4, 6);
  ASSERT_TRUE(off && on);
  EXPECT_EQ(off->fingerprint(), on->fingerprint());
  const EngineStats st = ExpectSameBytes(*off, *on, Cases(*on), "draft");
  EXPECT_GT(st.spec_accepted_tokens, 0);
  EXPECT_LT(st.spec_accepted_tokens, st.spec_draft_tokens);
}

// The per-request switch on an engine loaded with a draft model but off by default.
TEST(DraftEngine, OffByDefaultWithADraftModelLoaded) {
  STET_REQUIRE_FILE(Stories());
  EngineOptions o;
  o.spec.mode = SpecMode::kOff;
  o.spec.draft_model = StoriesAs(DType::kQ8_0);
  auto e = Engine::Open(Stories(), o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  RequestParams p = Story(**e, 40);
  auto a = (*e)->Generate(p);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(Settled(**e).spec_draft_tokens, 0);
  p.speculative = true;
  auto b = (*e)->Generate(p);
  ASSERT_TRUE(b.ok());
  EXPECT_GT(Settled(**e).spec_draft_tokens, 0);
  EXPECT_EQ(Diff(*b, *a), "");
}

// Drafting sequences under load: a target KV pool small enough to preempt
// (each preemption frees the draft KV too), tiny chunks beside verification
// rows, shared prompts for prefix-cache hits.
TEST(DraftEngine, UnderLoadWithPreemptionPrefixHitsAndChunkedPrefill) {
  STET_REQUIRE_FILE(Stories());
  auto off = Open(Stories(), "", 0, testing::RoomyPool());
  auto on = Open(Stories(), StoriesAs(DType::kQ4_1), 4, testing::TightPool());
  ASSERT_TRUE(off && on);
  testing::ExpectSameBytesUnderLoad(*off, *on, [&](int n) { return Story(*on, n); });
}

// SmolLM2-135M: the q4_1 file drafting for its q8_0 re-quantization (made by
// QuantizeModel, as `stet quantize` does), greedy and seeded.
TEST(DraftEngine, SmolLM2Q4_1DraftsForQ8_0) {
  STET_REQUIRE_FILE(Smol());
  const std::string q8 = ::testing::TempDir() + "/stet-draft-smollm2-q8_0.gguf";
  auto rep = QuantizeModel(Smol(), q8, DType::kQ8_0, /*progress=*/false);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EngineOptions o;
  o.n_ctx = 256;
  auto off = Open(q8, "", 0, o), on = Open(q8, Smol(), 4, o);
  ASSERT_TRUE(off && on);
  EXPECT_EQ(off->fingerprint(), on->fingerprint());
  std::vector<RequestParams> cases;
  RequestParams p;
  p.prompt = on->tokenizer().Encode(
      "<|im_start|>user\nRewrite with 'cat' instead of 'dog': The dog sat on the mat. The dog "
      "was happy.<|im_end|>\n<|im_start|>assistant\n",
      true, true);
  p.max_tokens = 40;
  p.sampling.temperature = 0;
  p.top_logprobs = 2;
  p.logits_hash = true;
  cases.push_back(p);
  p.sampling.temperature = 0.7f;
  p.sampling.seed = 11;
  p.n = 2;
  cases.push_back(p);
  const EngineStats st = ExpectSameBytes(*off, *on, cases, "draft");
  EXPECT_GT(st.spec_accepted_tokens, 0);
}

}  // namespace
}  // namespace stet

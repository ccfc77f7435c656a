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

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "engine/engine.h"
#include "model/quantize_model.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"

namespace stet {
namespace {

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
  std::vector<RequestParams> cases;
  cases.push_back(Story(e, 90));  // greedy
  RequestParams seeded = Story(e, 60);
  seeded.sampling.temperature = 0.8f;
  seeded.sampling.top_k = 40;
  seeded.n = 3;  // each choice its own stream, draft KV and drafts
  cases.push_back(seeded);
  RequestParams penalized = Story(e, 50);
  penalized.sampling.temperature = 0.7f;
  penalized.sampling.repetition_penalty = 1.1f;
  penalized.sampling.frequency_penalty = 0.3f;
  cases.push_back(penalized);
  RequestParams stopped = Story(e, 80);
  stopped.stop = {"park"};
  cases.push_back(stopped);
  RequestParams eos = Story(e, 200);
  eos.ignore_eos = false;
  cases.push_back(eos);
  for (int n = 1; n <= 24; ++n) cases.push_back(Story(e, n));  // max_tokens inside a run
  return cases;
}

// Runs every case on both engines; returns the drafting engine's counters.
EngineStats ExpectSameBytes(Engine& off, Engine& on, const std::vector<RequestParams>& cases) {
  for (size_t i = 0; i < cases.size(); ++i) {
    auto a = off.Generate(cases[i]);
    auto b = on.Generate(cases[i]);
    EXPECT_TRUE(a.ok() && b.ok());
    if (a.ok() && b.ok()) {
      EXPECT_EQ(Diff(*b, *a), "") << "case " << i;
    }
  }
  const EngineStats st = Settled(on), st_off = Settled(off);
  EXPECT_EQ(st.generated_tokens, st_off.generated_tokens);
  EXPECT_EQ(st_off.spec_draft_tokens, 0);
  EXPECT_LT(st.steps, st_off.steps);  // steps were saved
  std::printf("[ draft ] %lld of %lld drafts accepted; %lld steps vs %lld without\n",
              static_cast<long long>(st.spec_accepted_tokens),
              static_cast<long long>(st.spec_draft_tokens), static_cast<long long>(st.steps),
              static_cast<long long>(st_off.steps));
  return st;
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
  const EngineStats st = ExpectSameBytes(*off, *on, greedy);
  EXPECT_GT(st.spec_draft_tokens, 0);
  EXPECT_EQ(st.spec_accepted_tokens, st.spec_draft_tokens);
  ExpectSameBytes(*off, *on, Cases(*on));  // sampled cases reject drafts too
}

// A re-quantized draft: its argmax differs from the target's pick here and
// there, so drafts are accepted and rejected, and the draft KV rolls back.
TEST(DraftEngine, AQuantizedDraftGivesTheSameBytes) {
  STET_REQUIRE_FILE(Stories());
  const std::string q4 = StoriesAs(DType::kQ4_0);
  auto off = Open(Stories(), "", 0), on = Open(Stories(), q4, 6);
  ASSERT_TRUE(off && on);
  EXPECT_EQ(off->fingerprint(), on->fingerprint());
  const EngineStats st = ExpectSameBytes(*off, *on, Cases(*on));
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
  EngineOptions tight;
  tight.n_ctx = 160;
  tight.block_size = 4;
  tight.n_kv_blocks = 48;
  tight.chunk_size = 5;
  tight.max_batch_tokens = 24;
  EngineOptions roomy;
  roomy.n_ctx = tight.n_ctx;
  auto off = Open(Stories(), "", 0, roomy), on = Open(Stories(), StoriesAs(DType::kQ4_1), 4, tight);
  ASSERT_TRUE(off && on);
  std::vector<RequestParams> reqs;
  for (int i = 0; i < 8; ++i) {
    RequestParams p = Story(*on, 30 + 7 * i);
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
  EXPECT_EQ(st.kv_blocks_used, 0);
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
  const EngineStats st = ExpectSameBytes(*off, *on, cases);
  EXPECT_GT(st.spec_accepted_tokens, 0);
}

}  // namespace
}  // namespace stet

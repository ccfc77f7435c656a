// The serving engine's behaviour: completions, n > 1, stop strings and ids,
// max_tokens, scoring, cancellation, errors, the fingerprint, and that the
// prefix cache and preemption never change a result.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/test_support.h"

namespace stet {
namespace {

std::string Stories() { return testing::SharedDir() + "/models/stories260K/stories260K.gguf"; }

std::unique_ptr<Engine> MakeEngine(const std::string& path, EngineOptions o = {}) {
  auto e = Engine::Open(path, o);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

RequestParams Greedy(std::vector<int32_t> prompt, int n) {
  RequestParams p;
  p.prompt = std::move(prompt);
  p.max_tokens = n;
  p.sampling.temperature = 0;
  return p;
}

std::vector<int32_t> Ids(const std::vector<TokenOut>& t) {
  std::vector<int32_t> out;
  for (const auto& x : t) out.push_back(x.id);
  return out;
}

// The first 40 ids of the float32 reference beside the model
// (golden_greedy_from_bos.pyref.json; float32 KV as it has).
TEST(Engine, GreedyMatchesTheGoldenFromBos) {
  STET_REQUIRE_FILE(Stories());
  const std::string golden =
      testing::SharedDir() + "/models/stories260K/golden_greedy_from_bos.pyref.json";
  STET_REQUIRE_FILE(golden);
  const auto ref = nlohmann::json::parse(testing::ReadFileOrDie(golden));
  const auto all = ref["generated_ids"].get<std::vector<int32_t>>();
  ASSERT_GE(all.size(), 40u);
  EngineOptions o;
  o.kv_type = DType::kF32;
  auto e = MakeEngine(Stories(), o);
  ASSERT_TRUE(e);
  auto c = e->Generate(Greedy({1}, 40));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const auto got = Ids(c->tokens[0]);
  EXPECT_EQ(got, std::vector<int32_t>(all.begin(), all.begin() + 40));
  EXPECT_EQ(c->finish[0], FinishReason::kLength);
  EXPECT_EQ(c->text[0].rfind(" Once upon a time", 0), 0u) << c->text[0];
}

TEST(Engine, ChoicesAreIndependentStreamsAndSeedsReplay) {
  STET_REQUIRE_FILE(Stories());
  auto e = MakeEngine(Stories());
  RequestParams p = Greedy({1, 403}, 30);
  p.sampling.temperature = 1.0f;
  p.n = 3;
  p.sampling.seed = 99;
  auto a = e->Generate(p);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->seed, 99u);
  EXPECT_NE(Ids(a->tokens[0]), Ids(a->tokens[1]));
  auto b = e->Generate(p);
  for (int c = 0; c < 3; ++c) EXPECT_EQ(Ids(a->tokens[c]), Ids(b->tokens[c]));
  p.sampling.seed.reset();
  auto r = e->Generate(p);
  ASSERT_TRUE(r.ok());
  p.sampling.seed = r->seed;  // the reported seed replays the run
  auto r2 = e->Generate(p);
  for (int c = 0; c < 3; ++c) EXPECT_EQ(Ids(r->tokens[c]), Ids(r2->tokens[c]));
}

TEST(Engine, StopStringsAcrossTokensAndStopIds) {
  STET_REQUIRE_FILE(Stories());
  auto e = MakeEngine(Stories());
  auto full = e->Generate(Greedy({1}, 60));
  ASSERT_TRUE(full.ok());
  const std::string text = full->text[0];
  // A stop string that starts inside one token and ends in another.
  const size_t at = text.find("Lily");
  ASSERT_NE(at, std::string::npos);
  RequestParams p = Greedy({1}, 60);
  p.stop = {"ily"};
  auto s = e->Generate(p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->finish[0], FinishReason::kStop);
  EXPECT_EQ(s->text[0], text.substr(0, at + 1));
  // A stop id ends the choice at that token.
  RequestParams q = Greedy({1}, 60);
  q.stop_ids = {full->tokens[0][5].id};
  auto t = e->Generate(q);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->finish[0], FinishReason::kStop);
  EXPECT_EQ(t->tokens[0].size(), 6u);
}

// min_tokens (vLLM's): a stop id (or end of generation) drawn before it is
// masked out; up to that point the tokens and every logprob bit are those of
// the unconstrained run, and the choice then goes on.
TEST(Engine, MinTokensMasksStopIdsAndEndOfGeneration) {
  STET_REQUIRE_FILE(Stories());
  auto e = MakeEngine(Stories());
  ASSERT_TRUE(e);
  auto full = e->Generate(Greedy({1}, 20));
  ASSERT_TRUE(full.ok());
  RequestParams q = Greedy({1}, 20);
  q.stop_ids = {full->tokens[0][5].id};
  q.min_tokens = 10;
  auto t = e->Generate(q);
  ASSERT_TRUE(t.ok());
  ASSERT_GE(t->tokens[0].size(), 10u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(t->tokens[0][i].id, full->tokens[0][i].id) << i;
    EXPECT_EQ(std::memcmp(&t->tokens[0][i].logprob, &full->tokens[0][i].logprob, sizeof(float)), 0)
        << i;
  }
  EXPECT_NE(t->tokens[0][5].id, q.stop_ids[0]);  // the masked token is not drawn
  for (size_t i = 0; i < 10; ++i) EXPECT_NE(t->tokens[0][i].id, q.stop_ids[0]) << i;
}

// SmolLM2 ends its chat turn with <|im_end|> (end of generation): min_tokens
// takes it out until then; the tokens before it keep their bits.
TEST(Engine, MinTokensGoesPastEndOfGeneration) {
  const std::string path = testing::ModelCacheDir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  STET_REQUIRE_FILE(path);
  auto e = MakeEngine(path);
  ASSERT_TRUE(e);
  RequestParams g = Greedy(
      e->tokenizer().Encode(
          "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
          true, true),
      200);
  auto ends = e->Generate(g);
  ASSERT_TRUE(ends.ok());
  ASSERT_EQ(ends->finish[0], FinishReason::kStop) << ends->text[0];
  const size_t k = ends->tokens[0].size();
  ASSERT_TRUE(e->tokenizer().IsEog(ends->tokens[0][k - 1].id));
  g.min_tokens = static_cast<int>(k) + 3;
  g.max_tokens = static_cast<int>(k) + 3;
  auto longer = e->Generate(g);
  ASSERT_TRUE(longer.ok());
  ASSERT_EQ(longer->tokens[0].size(), k + 3);
  EXPECT_EQ(longer->finish[0], FinishReason::kLength);
  for (size_t i = 0; i + 1 < k; ++i) {
    EXPECT_EQ(longer->tokens[0][i].id, ends->tokens[0][i].id) << i;
    EXPECT_EQ(std::memcmp(&longer->tokens[0][i].logprob, &ends->tokens[0][i].logprob, 4), 0) << i;
  }
  EXPECT_FALSE(e->tokenizer().IsEog(longer->tokens[0][k - 1].id));
}

// The engine says which token ended a choice (clients need not re-derive it):
// a stop id's token is marked and adds no text; no other token is marked.
TEST(Engine, MarksTheTokenThatEndedTheChoice) {
  STET_REQUIRE_FILE(Stories());
  auto e = MakeEngine(Stories());
  ASSERT_TRUE(e);
  auto full = e->Generate(Greedy({1}, 12));
  ASSERT_TRUE(full.ok());
  RequestParams q = Greedy({1}, 60);
  q.stop_ids = {full->tokens[0][5].id};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<bool, std::string>> marks;  // (end_marker, text_delta) per token
  bool done = false;
  auto sub = e->Submit(q, [&](const RequestEvent& ev) {
    std::lock_guard<std::mutex> lock(mu);
    if (ev.kind == RequestEvent::Kind::kToken) marks.emplace_back(ev.end_marker, ev.text_delta);
    if (ev.kind == RequestEvent::Kind::kFinished) {
      done = true;
      cv.notify_all();
    }
  });
  ASSERT_TRUE(sub.ok());
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  ASSERT_EQ(marks.size(), 6u);
  for (size_t i = 0; i + 1 < marks.size(); ++i) EXPECT_FALSE(marks[i].first) << i;
  EXPECT_TRUE(marks.back().first);
  EXPECT_TRUE(marks.back().second.empty());
}

TEST(Engine, ScoringEqualsGenerationLogprobsBitwise) {
  STET_REQUIRE_FILE(Stories());
  auto e = MakeEngine(Stories());
  RequestParams p = Greedy({1, 403, 407}, 24);
  p.sampling.temperature = 0.9f;
  p.sampling.seed = 5;
  p.top_logprobs = 3;
  auto g = e->Generate(p);
  ASSERT_TRUE(g.ok());
  RequestParams s;
  s.prompt = p.prompt;
  for (const auto& t : g->tokens[0]) s.prompt.push_back(t.id);
  s.max_tokens = 0;
  s.prompt_logprobs = true;
  s.top_logprobs = 3;
  auto sc = e->Generate(s);
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_EQ(sc->prompt_tokens.size(), s.prompt.size());
  for (size_t i = 0; i < g->tokens[0].size(); ++i) {
    const TokenOut& gen = g->tokens[0][i];
    const TokenOut& scored = sc->prompt_tokens[p.prompt.size() + i];
    ASSERT_EQ(scored.id, gen.id);
    EXPECT_EQ(std::memcmp(&scored.logprob, &gen.logprob, sizeof(float)), 0) << "token " << i;
    ASSERT_EQ(scored.top.size(), 3u);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(scored.top[k].id, gen.top[k].id);
      EXPECT_EQ(std::memcmp(&scored.top[k].logprob, &gen.top[k].logprob, sizeof(float)), 0);
    }
  }
}

// The engine's counters once it has nothing left to run (it publishes them when it waits).
EngineStats Settled(const Engine& e) {
  EngineStats st;
  for (int i = 0; i < 2000; ++i) {
    st = e.stats();
    if (st.running == 0 && st.waiting == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return st;
}

bool SameBits(const TokenOut& a, const TokenOut& b) {
  if (a.id != b.id || std::memcmp(&a.logprob, &b.logprob, sizeof(float)) != 0) return false;
  if (a.top.size() != b.top.size()) return false;
  for (size_t k = 0; k < a.top.size(); ++k) {
    if (a.top[k].id != b.top[k].id ||
        std::memcmp(&a.top[k].logprob, &b.top[k].logprob, sizeof(float)) != 0)
      return false;
  }
  return true;
}

// Issue 12: echo + logprobs with n = 4 scored the same prompt 4 times. Choice
// 0 scores it; the others get its scores before any token of theirs and start
// from its cached prefix; every token and logprob is what it was.
TEST(Engine, EchoScoresThePromptOnceForAllChoices) {
  STET_REQUIRE_FILE(Stories());
  auto e = MakeEngine(Stories());
  std::vector<int32_t> prompt = {1};
  for (int i = 0; i < 90; ++i) prompt.push_back(300 + (i * 7) % 150);
  RequestParams p = Greedy(prompt, 5);
  p.n = 4;
  p.sampling.temperature = 0.8f;
  p.sampling.seed = 9;
  p.top_logprobs = 2;
  p.prompt_logprobs = true;
  std::mutex mu;
  std::condition_variable cv;
  int open = p.n;
  std::vector<std::vector<TokenOut>> scores(p.n), tokens(p.n);
  std::vector<bool> scored_first(p.n, true);
  auto sub = e->Submit(p, [&](const RequestEvent& ev) {
    std::lock_guard<std::mutex> lock(mu);
    if (ev.kind == RequestEvent::Kind::kPromptScored) scores[ev.choice] = ev.prompt_tokens;
    if (ev.kind == RequestEvent::Kind::kToken) {
      if (scores[ev.choice].empty()) scored_first[ev.choice] = false;
      tokens[ev.choice].push_back(ev.token);
    }
    if (ev.kind == RequestEvent::Kind::kFinished && --open == 0) cv.notify_all();
  });
  ASSERT_TRUE(sub.ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return open == 0; });
  }
  const EngineStats st = Settled(*e);
  // Choice 0 computes the prompt; the others only what their cached prefix lacks (< a block).
  EXPECT_GE(st.prompt_tokens, static_cast<int64_t>(prompt.size()));
  EXPECT_LT(st.prompt_tokens, static_cast<int64_t>(prompt.size()) + 3 * 16);
  // Without scoring, the same request samples the same tokens with the same logprobs.
  RequestParams plain = p;
  plain.prompt_logprobs = false;
  auto g = e->Generate(plain);
  ASSERT_TRUE(g.ok());
  for (int c = 0; c < p.n; ++c) {
    EXPECT_TRUE(scored_first[c]) << "choice " << c << " sampled before it had the scores";
    ASSERT_EQ(scores[c].size(), prompt.size()) << "choice " << c;
    for (size_t i = 0; i < prompt.size(); ++i)
      EXPECT_TRUE(SameBits(scores[c][i], scores[0][i])) << "choice " << c << " position " << i;
    ASSERT_EQ(tokens[c].size(), g->tokens[c].size());
    for (size_t i = 0; i < tokens[c].size(); ++i)
      EXPECT_TRUE(SameBits(tokens[c][i], g->tokens[c][i])) << "choice " << c << " token " << i;
  }
}

// Cancelled before choice 0 scored the prompt, the waiting choices end too.
TEST(Engine, CancellingAnEchoRequestEndsItsWaitingChoices) {
  STET_REQUIRE_FILE(Stories());
  EngineOptions o;
  o.chunk_size = 4;  // a slow prefill, so the cancel lands before the scores
  o.max_batch_tokens = 4;
  auto e = MakeEngine(Stories(), o);
  RequestParams p = Greedy(std::vector<int32_t>(200, 400), 4);
  p.n = 3;
  p.prompt_logprobs = true;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<FinishReason> why;
  auto sub = e->Submit(p, [&](const RequestEvent& ev) {
    if (ev.kind != RequestEvent::Kind::kFinished) return;
    std::lock_guard<std::mutex> lock(mu);
    why.push_back(ev.finish);
    cv.notify_all();
  });
  ASSERT_TRUE(sub.ok());
  e->Cancel(sub->id);
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return why.size() == 3; }));
  for (FinishReason r : why) EXPECT_EQ(r, FinishReason::kCancelled);
}

// Issue 12 (tenants): cached blocks are shared only under the same cache_salt,
// and a hit never changes a bit.
TEST(Engine, CacheSaltScopesPrefixHits) {
  STET_REQUIRE_FILE(Stories());
  auto e = MakeEngine(Stories());
  std::vector<int32_t> prompt = {1};
  for (int i = 0; i < 70; ++i) prompt.push_back(300 + (i * 11) % 170);
  RequestParams p = Greedy(prompt, 6);
  p.sampling.temperature = 0.7f;
  p.sampling.seed = 4;
  p.top_logprobs = 2;
  auto run = [&](uint64_t salt) {
    RequestParams q = p;
    q.cache_salt = salt;
    auto c = e->Generate(q);
    EXPECT_TRUE(c.ok());
    return *c;
  };
  const auto first = run(0);
  EXPECT_EQ(first.cached_prompt_tokens, 0);
  const auto hit = run(0);
  EXPECT_EQ(hit.cached_prompt_tokens, 64);
  const auto other = run(0x5eed);
  EXPECT_EQ(other.cached_prompt_tokens, 0);
  const auto other_hit = run(0x5eed);
  EXPECT_EQ(other_hit.cached_prompt_tokens, 64);
  for (const auto* c : {&hit, &other, &other_hit}) {
    ASSERT_EQ(c->tokens[0].size(), first.tokens[0].size());
    for (size_t i = 0; i < first.tokens[0].size(); ++i)
      EXPECT_TRUE(SameBits(c->tokens[0][i], first.tokens[0][i])) << "token " << i;
  }
}

TEST(Engine, RejectsBadRequestsClearly) {
  STET_REQUIRE_FILE(Stories());
  EngineOptions o;
  o.n_ctx = 64;
  auto e = MakeEngine(Stories(), o);
  auto bad = [&](RequestParams p) { return e->Submit(std::move(p), nullptr).status(); };
  EXPECT_EQ(bad(Greedy({}, 4)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(Greedy({1, 99999}, 4)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(Greedy(std::vector<int32_t>(64, 5), 4)).code(), StatusCode::kResourceExhausted);
  RequestParams p = Greedy({1}, 4);
  p.top_logprobs = 21;
  EXPECT_EQ(bad(p).code(), StatusCode::kInvalidArgument);
  p = Greedy({1}, 4);
  p.sampling.temperature = -1;
  EXPECT_EQ(bad(p).code(), StatusCode::kInvalidArgument);
  // max_tokens beyond the context: clamped, finishes with "length".
  auto c = e->Generate(Greedy({1, 2, 3}, 1000));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->tokens[0].size(), 61u);
  EXPECT_EQ(c->finish[0], FinishReason::kLength);
}

TEST(Engine, CancelFreesTheKvCache) {
  STET_REQUIRE_FILE(Stories());
  auto e = MakeEngine(Stories());
  std::atomic<int> tokens{0};
  std::atomic<bool> done{false};
  FinishReason why = FinishReason::kNone;
  RequestParams p = Greedy({1}, 100000);
  p.ignore_eos = true;
  auto sub = e->Submit(p, [&](const RequestEvent& ev) {
    if (ev.kind == RequestEvent::Kind::kToken) ++tokens;
    if (ev.kind == RequestEvent::Kind::kFinished) {
      why = ev.finish;
      done = true;
    }
  });
  ASSERT_TRUE(sub.ok());
  while (tokens < 5) std::this_thread::yield();
  EXPECT_GT(e->stats().kv_blocks_used, 0);
  e->Cancel(sub->id);
  while (!done) std::this_thread::yield();
  EXPECT_EQ(why, FinishReason::kCancelled);
  // The finish event is sent after the blocks are released; the engine
  // publishes its stats when it next waits. Cached (published) blocks are
  // evictable, so none stays in use.
  EngineStats st;
  for (int i = 0; i < 2000; ++i) {
    st = e->stats();
    if (st.running == 0 && st.kv_blocks_used == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(st.running, 0);
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_GT(st.kv_blocks_total, 0);
}

// stet run's shape: one sequence slot, the KV cache sized to one context;
// generation ends with "length" when the context is full (prompt + generated
// = n_ctx positions, every one of them stored).
TEST(Engine, OneSlotEngineStopsAtTheContextEnd) {
  STET_REQUIRE_FILE(Stories());
  EngineOptions o;
  o.n_ctx = 10;
  o.max_seqs = 1;
  auto e = MakeEngine(Stories(), o);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->stats().kv_blocks_total, (10 + o.block_size - 1) / o.block_size + 1);
  RequestParams p = Greedy({1, 403, 407}, 100);
  p.ignore_eos = true;
  auto c = e->Generate(p);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->tokens[0].size(), 7u);
  EXPECT_EQ(c->finish[0], FinishReason::kLength);
}

TEST(Engine, FingerprintNamesEverythingThatChangesBits) {
  STET_REQUIRE_FILE(Stories());
  EngineOptions f16, f32, adaptive, threads;
  f32.kv_type = DType::kF32;
  adaptive.numerics = NumericsMode::kAdaptive;
  threads.n_threads = 3;
  auto a = MakeEngine(Stories(), f16), b = MakeEngine(Stories(), f32),
       c = MakeEngine(Stories(), adaptive), d = MakeEngine(Stories(), threads);
  EXPECT_EQ(a->fingerprint(), d->fingerprint());  // threads never change bits
  EXPECT_NE(a->fingerprint(), b->fingerprint());
  EXPECT_NE(a->fingerprint(), c->fingerprint());
  EXPECT_NE(c->fingerprint().find("adaptive"), std::string::npos);
  EXPECT_NE(a->fingerprint_descriptor().find(
                "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"),
            std::string::npos);
}

}  // namespace
}  // namespace stet

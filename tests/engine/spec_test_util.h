// Shared by speculative_test.cc (prompt lookup) and draft_model_test.cc (a
// draft model): both drafters must give, bit for bit, what the engine gives
// without speculation, over the same cases and the same load.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"

namespace stet::testing {

// The engine's counters once it has gone idle after the last request (it
// publishes them between steps, after the events of the step went out).
inline EngineStats Settled(const Engine& e) {
  for (int i = 0; i < 5000; ++i) {
    const EngineStats st = e.stats();
    if (st.running == 0 && st.waiting == 0) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return e.stats();
}

inline bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// "" when equal: every token id, logprob, top logprob and logits hash, the text and finish.
inline std::string Diff(const Engine::Completion& a, const Engine::Completion& b) {
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

// The test's prompt with max_tokens: greedy, seed 5, top logprobs and logits hashes.
using MakeRequest = std::function<RequestParams(int max_tokens)>;

// The cases every drafter must pass: greedy (greedy_tokens long); seeded with
// n = 3 (each choice its own stream and drafts); penalties (they see the
// history as it grows); a stop string reached inside an accepted run; end of
// text; max_tokens 1..24, so the limit falls at every place in a verified run.
inline std::vector<RequestParams> SpecCases(const MakeRequest& make, int greedy_tokens) {
  std::vector<RequestParams> cases;
  cases.push_back(make(greedy_tokens));
  RequestParams seeded = make(60);
  seeded.sampling.temperature = 0.8f;
  seeded.sampling.top_k = 40;
  seeded.n = 3;
  cases.push_back(seeded);
  RequestParams penalized = make(50);
  penalized.sampling.temperature = 0.7f;
  penalized.sampling.repetition_penalty = 1.1f;
  penalized.sampling.frequency_penalty = 0.3f;
  cases.push_back(penalized);
  RequestParams stopped = make(80);
  stopped.stop = {"park"};
  cases.push_back(stopped);
  RequestParams eos = make(200);
  eos.ignore_eos = false;
  cases.push_back(eos);
  for (int n = 1; n <= 24; ++n) cases.push_back(make(n));
  return cases;
}

// Runs every case on both engines: the same bytes and as many tokens, in fewer
// steps on `on`. Prints the acceptance under `label`; returns on's counters.
inline EngineStats ExpectSameBytes(Engine& off, Engine& on, const std::vector<RequestParams>& cases,
                                   const char* label) {
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
  std::printf("[ %s ] %lld of %lld drafts accepted; %lld steps vs %lld without\n", label,
              static_cast<long long>(st.spec_accepted_tokens),
              static_cast<long long>(st.spec_draft_tokens), static_cast<long long>(st.steps),
              static_cast<long long>(st_off.steps));
  return st;
}

// For the speculating engine under load: a KV pool small enough to preempt
// (192 positions for 8 requests of up to ~120), tiny chunks so prefills run
// beside verification rows.
inline EngineOptions TightPool() {
  EngineOptions tight;
  tight.n_ctx = 160;
  tight.block_size = 4;
  tight.n_kv_blocks = 48;
  tight.chunk_size = 5;
  tight.max_batch_tokens = 24;
  return tight;
}

// For the engine it is checked against: the same context, so max_new is
// clamped alike, and room for everything.
inline EngineOptions RoomyPool() {
  EngineOptions roomy;
  roomy.n_ctx = TightPool().n_ctx;
  return roomy;
}

// 8 requests at once on `on` (opened with TightPool): shared prompt prefixes of
// different lengths (prefix-cache hits), greedy and seeded, n 1 or 2, one with
// a stop string. Each must equal its run on `off`, with drafts accepted,
// preemptions and prefix hits seen, and every KV block back.
inline void ExpectSameBytesUnderLoad(Engine& off, Engine& on, const MakeRequest& make) {
  std::vector<RequestParams> reqs;
  for (int i = 0; i < 8; ++i) {
    RequestParams p = make(30 + 7 * i);
    if (i % 2) p.prompt.resize(p.prompt.size() - i);
    p.sampling.temperature = i % 3 == 0 ? 0.0f : 0.9f;
    p.sampling.seed = 100 + i;
    p.n = i % 4 == 1 ? 2 : 1;
    if (i == 5) p.stop = {"ball"};
    reqs.push_back(p);
  }
  std::vector<Result<Engine::Completion>> got(reqs.size(), Internal("not run"));
  std::vector<std::thread> clients;
  for (size_t i = 0; i < reqs.size(); ++i)
    clients.emplace_back([&, i] { got[i] = on.Generate(reqs[i]); });
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
    auto want = off.Generate(reqs[i]);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(Diff(*got[i], *want), "") << "request " << i;
  }
  const EngineStats st = Settled(on);
  EXPECT_GT(st.spec_accepted_tokens, 0);
  EXPECT_GT(st.preemptions, 0) << "the pool was meant to be too small for all at once";
  EXPECT_GT(st.prefix_hit_tokens, 0);
  EXPECT_EQ(st.kv_blocks_used, 0);  // every block came back (cached ones are evictable)
}

}  // namespace stet::testing

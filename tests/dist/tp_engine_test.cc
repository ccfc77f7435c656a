// Tensor parallelism under the serving engine: rank 0 runs an Engine whose
// model is its shard (EngineOptions::tp), the other ranks run
// dist::RunWorker, all as threads of a LocalGroup. Every request, submitted
// together (continuous batching, chunked prefill, seeded n > 1, prompt
// scoring, speculative decoding), gets bitwise the tokens, logprobs and
// logits of one process, for n ranks up to the query heads. A rank that dies
// fails the requests in flight with a clear error within the step timeout,
// and the engine says so; an n the model cannot take is refused at start.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "dist/leader.h"
#include "dist/local_group.h"
#include "dist/worker.h"
#include "engine/engine.h"
#include "engine/spec_test_util.h"
#include "support/test_support.h"

namespace stet {
namespace {

std::string Stories() { return testing::SharedDir() + "/models/stories260K/stories260K.gguf"; }
std::string Arch(const char* name) {
  return testing::SourceDir() + "/tests/golden/arch/" + name + ".gguf";
}

// The requests of one round, all in flight together.
std::vector<RequestParams> Cases(const Tokenizer& tok) {
  auto make = [&](const char* text, int max_tokens) {
    RequestParams p;
    p.prompt = tok.Encode(text, true, false);
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    p.logits_hash = true;
    p.top_logprobs = 2;
    p.sampling.temperature = 0;
    p.sampling.seed = 7;
    return p;
  };
  std::vector<RequestParams> v;
  v.push_back(make("Once upon a time, there was a little girl", 16));
  RequestParams seeded = make("The cat sat on the mat and", 12);
  seeded.sampling.temperature = 0.8f;
  seeded.n = 2;
  v.push_back(seeded);
  RequestParams scored = make("Lily liked to play with her ball", 4);
  scored.prompt_logprobs = true;
  v.push_back(scored);
  RequestParams spec = make("the dog ran and the dog ran and the dog ran and the dog", 14);
  spec.speculative = true;
  v.push_back(spec);
  return v;
}

EngineOptions Options(TpComm* tp, Isa isa = BestIsa()) {
  EngineOptions o;
  o.n_ctx = 128;
  o.max_seqs = 4;
  o.chunk_size = 3;  // prompts prefill in chunks next to other sequences' decode rows
  o.max_batch_tokens = 12;
  o.isa = isa;
  o.spec.mode = SpecMode::kLookup;
  o.tp = tp;
  return o;
}

std::vector<Engine::Completion> RunAll(Engine& e) {
  std::vector<std::future<Result<Engine::Completion>>> f;
  for (const RequestParams& p : Cases(e.tokenizer())) {
    f.push_back(std::async(std::launch::async, [&e, p] { return e.Generate(p); }));
  }
  std::vector<Engine::Completion> out;
  for (auto& x : f) {
    auto c = x.get();
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    out.push_back(c.ok() ? *c : Engine::Completion{});
  }
  return out;
}

// The workers of a group of n (ranks 1..n-1), each returning RunWorker's status.
struct Workers {
  Workers(dist::LocalGroup& g) : group(g) {
    for (int r = 1; r < g.size(); ++r) {
      runs.push_back(
          std::async(std::launch::async, [&g, r] { return dist::RunWorker(g.comm(r)); }));
    }
  }
  // Quits the workers (rank 0's part at exit) and returns their statuses.
  std::vector<Status> Quit(bool sound = true) {
    if (group.size() > 1) {
      EXPECT_EQ(dist::QuitWorkers(group.comm(0)).ok(), sound);
    }
    std::vector<Status> out;
    for (auto& r : runs) out.push_back(r.get());
    return out;
  }
  dist::LocalGroup& group;
  std::vector<std::future<Status>> runs;
};

void ExpectSameAsOneProcess(const std::string& path, const std::vector<int>& ns,
                            Isa isa = BestIsa()) {
  STET_REQUIRE_FILE(path);
  auto alone = Engine::Open(path, Options(nullptr));
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  const auto want = RunAll(**alone);
  for (int n : ns) {
    dist::LocalGroup group(n);
    Workers workers(group);
    {
      auto e = Engine::Open(path, Options(&group.comm(0), isa));
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      EXPECT_EQ((*e)->tp_ranks(), n);
      EXPECT_EQ((*e)->fingerprint(), (*alone)->fingerprint());
      const auto got = RunAll(**e);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(testing::Diff(got[i], want[i]), "")
            << path << " request " << i << ", " << n << " ranks";
      }
      EXPECT_GT(testing::Settled(**e).spec_draft_tokens, 0);  // speculation ran
      const auto& p = want[2].prompt_tokens;                  // prompt scores too
      ASSERT_EQ(got[2].prompt_tokens.size(), p.size());
      for (size_t t = 0; t < p.size(); ++t) {
        EXPECT_TRUE(testing::SameBits(got[2].prompt_tokens[t].logprob, p[t].logprob));
      }
    }  // the engine ends; its workers go back to waiting
    for (const Status& st : workers.Quit()) EXPECT_TRUE(st.ok()) << st.ToString();
  }
}

TEST(TpEngine, Stories260KUnevenAndQueryHeadSplits) {
  ExpectSameAsOneProcess(Stories(), {2, 3, 5, 8});
}

// --isa auto reaches the workers as Isa::kAuto (each shard's rows measured on it) and
// gives the bits of one process on the best ISA.
TEST(TpEngine, IsaAutoOnEveryRank) {
  EXPECT_EQ(dist::WorkerIsa(Isa::kAuto), Isa::kAuto);
  EXPECT_EQ(dist::WorkerIsa(Isa::kScalar), Isa::kScalar);
  EXPECT_EQ(dist::WorkerIsa(Isa::kNeon), CpuHasNeon() ? Isa::kNeon : DefaultIsa());
  ExpectSameAsOneProcess(Stories(), {2}, Isa::kAuto);
}

TEST(TpEngine, Qwen3MoeExpertsSplitByRows) { ExpectSameAsOneProcess(Arch("qwen3moe"), {3}); }

TEST(TpEngine, Gemma3SlidingWindow) { ExpectSameAsOneProcess(Arch("gemma3"), {4}); }

TEST(TpEngine, MoreRanksThanQueryHeadsIsRefusedAtStart) {
  STET_REQUIRE_FILE(Stories());
  dist::LocalGroup group(9);
  Workers workers(group);
  auto e = Engine::Open(Stories(), Options(&group.comm(0)));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("at most 8 ranks"), std::string::npos)
      << e.status().message();
  for (const Status& st : workers.Quit()) EXPECT_TRUE(st.ok()) << st.ToString();
}

// Rank 1 dies in the middle of a request: the request ends with an error
// naming tensor parallelism within about the step timeout (no hang), the
// engine's health says why, and new requests are refused.
TEST(TpEngine, ADeadRankFailsRequestsInFlight) {
  STET_REQUIRE_FILE(Stories());
  dist::LocalGroup group(2, /*step_timeout_s=*/1.0);
  Workers workers(group);
  auto e = Engine::Open(Stories(), Options(&group.comm(0)));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  RequestParams p;
  p.prompt = (*e)->tokenizer().Encode("Once upon a time", true, false);
  p.max_tokens = 100;
  p.ignore_eos = true;
  std::promise<void> first;
  std::promise<RequestEvent> done;
  bool signalled = false;
  auto sub = (*e)->Submit(p, [&](const RequestEvent& ev) {
    if (ev.kind == RequestEvent::Kind::kToken && !signalled) {
      signalled = true;
      group.Kill(1);
      first.set_value();
    }
    if (ev.kind == RequestEvent::Kind::kFinished) done.set_value(ev);
  });
  ASSERT_TRUE(sub.ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto fut = done.get_future();
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "hung";
  const RequestEvent ev = fut.get();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(ev.finish, FinishReason::kError);
  EXPECT_NE(ev.error.find("tensor parallelism"), std::string::npos) << ev.error;
  EXPECT_LT(ev.completion_tokens, 100);
  EXPECT_LT(s, 10.0);
  EXPECT_FALSE((*e)->health().ok());
  EXPECT_NE((*e)->health().message().find("rank"), std::string::npos);
  auto again = (*e)->Submit(p, nullptr);
  EXPECT_FALSE(again.ok());
  e->reset();
  auto st = workers.Quit(false);  // the group is broken: the quit fails, the worker's run too
  ASSERT_EQ(st.size(), 1u);
  EXPECT_FALSE(st[0].ok());
}

}  // namespace
}  // namespace stet

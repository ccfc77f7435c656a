// The contract, tested on stories260K, four small random llama.cpp-verified
// models (qwen2, qwen3, llama q8_0, gemma3 with sliding windows), the SmolLM2-135M shape and tiny
// random models of the newer weight types: under randomized load — 1 to 64 concurrent requests
// arriving at random times, prompt lengths 1..80 with shared prefixes (cold,
// warm and partial prefix-cache hits), chunk sizes 1/7/64/whole, KV caches small
// enough to force preemption, 1–3 threads, scalar and AVX2 paths, n > 1, seeded
// temperature sampling, stop strings, end-of-generation tokens, and speculative
// decoding (prompt lookup, k 3..8, on prompts that quote themselves; and a
// draft model — the model itself, k 4..5) as one more engine axis, and constrained decoding (a GBNF
// grammar on a quarter of the requests, its token mask computed beside unconstrained rows) — every
// choice's tokens, logprobs, top-logprobs and the hash of every step's full logits are bitwise
// equal to the same request run alone, without speculation, on a cold engine. Scoring parity is
// asserted on the same runs. STET_INVARIANCE_SEED=S reruns one scenario;
// STET_INVARIANCE_SCENARIOS=N scales.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "engine/engine.h"
#include "model/random_model.h"
#include "support/test_support.h"

namespace stet {
namespace {

struct Config {
  int threads;
  Isa isa;
  int chunk;
  int block_size;
  int n_kv_blocks;  // 0: default
  int max_batch_tokens;
  bool prefix_cache;
  int spec_k = 0;      // speculative decoding (prompt lookup) with this k; 0: off
  bool draft = false;  // with spec_k: the model drafts for itself (SpecMode::kDraft)
  std::string Describe() const {
    return "threads=" + std::to_string(threads) + " isa=" + IsaName(isa) +
           " chunk=" + std::to_string(chunk) + " block=" + std::to_string(block_size) +
           " kv_blocks=" + std::to_string(n_kv_blocks) +
           " batch_tokens=" + std::to_string(max_batch_tokens) +
           " prefix_cache=" + (prefix_cache ? "on" : "off") + " spec_k=" + std::to_string(spec_k) +
           (draft ? " draft" : "");
  }
};

std::unique_ptr<Engine> MakeEngine(const std::string& path, const Config& c) {
  EngineOptions o;
  o.n_ctx = 160;
  o.n_threads = c.threads;
  o.isa = c.isa;
  o.chunk_size = c.chunk;
  o.block_size = c.block_size;
  o.n_kv_blocks = c.n_kv_blocks;
  o.max_batch_tokens = c.max_batch_tokens;
  o.prefix_cache = c.prefix_cache;
  if (c.spec_k > 0 && c.draft) {
    o.spec.mode = SpecMode::kDraft;
    o.spec.k = c.spec_k;
    o.spec.draft_model = path;  // greedy drafts all accepted, sampled ones often not
  } else if (c.spec_k > 0) {
    o.spec.mode = SpecMode::kLookup;
    o.spec.k = c.spec_k;
    o.spec.ngram_min = 1;  // draft eagerly: many accepted and many rejected drafts
    o.spec.ngram_max = 3;
  }
  auto e = Engine::Open(path, o);
  return e.ok() ? std::move(*e) : nullptr;
}

struct Outcome {
  std::vector<std::vector<TokenOut>> tokens;
  std::vector<std::string> text;
  std::vector<FinishReason> finish;
};

std::string Key(const RequestParams& p) {
  std::string k;
  for (int32_t t : p.prompt) k += std::to_string(t) + ",";
  k += "|" + std::to_string(p.max_tokens) + "|" + std::to_string(p.n) + "|" +
       std::to_string(p.sampling.temperature) + "|" + std::to_string(p.sampling.seed.value_or(0)) +
       "|" + std::to_string(p.ignore_eos) + "|";
  for (const std::string& s : p.stop) k += std::to_string(s.size()) + ":" + s;
  if (p.grammar) k += "|grammar:" + std::to_string(reinterpret_cast<uintptr_t>(p.grammar.get()));
  return k;
}

// Grammars any byte-fallback vocabulary can spell: a JSON-like object and a
// sentence of lowercase words; for vocabularies that cannot, the choice ends
// with an error, which must be just as invariant.
const std::vector<std::shared_ptr<const Grammar>>& Grammars() {
  static const std::vector<std::shared_ptr<const Grammar>> g = [] {
    std::vector<std::shared_ptr<const Grammar>> out;
    for (
        const char* text : {
            R"(root ::= "{\"" [a-z]{1,8} "\": " (num | str) ("," " "? "\"" [a-z]+ "\": " (num | str))* "}"
                num ::= "-"? [0-9]{1,4}
                str ::= "\"" [^"\\\x00-\x1f]{0,12} "\"")",
            R"(root ::= [a-z]+ (" " [a-z]+)* [.!?])"}) {
      auto p = ParseGbnf(text);
      EXPECT_TRUE(p.ok()) << p.status().ToString();
      if (p.ok()) out.push_back(*p);
    }
    return out;
  }();
  return g;
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// "" when equal, else where they differ.
std::string Compare(const Outcome& got, const Outcome& want) {
  if (got.tokens.size() != want.tokens.size()) return "choice count";
  for (size_t c = 0; c < want.tokens.size(); ++c) {
    if (got.finish[c] != want.finish[c]) return "finish reason of choice " + std::to_string(c);
    if (got.text[c] != want.text[c]) return "text of choice " + std::to_string(c);
    if (got.tokens[c].size() != want.tokens[c].size())
      return "token count of choice " + std::to_string(c);
    for (size_t i = 0; i < want.tokens[c].size(); ++i) {
      const TokenOut &g = got.tokens[c][i], &w = want.tokens[c][i];
      const std::string at = " at choice " + std::to_string(c) + " step " + std::to_string(i);
      if (g.logits_hash != w.logits_hash) return "logits" + at;
      if (g.id != w.id) return "token" + at;
      if (!SameBits(g.logprob, w.logprob)) return "logprob" + at;
      if (g.top.size() != w.top.size()) return "top count" + at;
      for (size_t k = 0; k < w.top.size(); ++k) {
        if (g.top[k].id != w.top[k].id || !SameBits(g.top[k].logprob, w.top[k].logprob))
          return "top logprobs" + at;
      }
    }
  }
  return "";
}

// The AVX2 path where the CPU has it: on an AVX-512 machine BestIsa() is
// AVX-512, and the suite should still mix all three paths.
Isa Avx2OrScalar() { return CpuHasAvx2Fma() ? Isa::kAvx2 : Isa::kScalar; }

class Fixture {
 public:
  explicit Fixture(std::string path) : path_(std::move(path)) {
    solo_ = MakeEngine(path_, {1, BestIsa(), 4096, 16, 0, 4096, false});
    const std::vector<Config> configs = {
        {1, Isa::kScalar, 1, 4, 0, 64, true},
        {2, BestIsa(), 7, 16, 0, 512, true},
        {3, BestIsa(), 64, 16, 24, 96, true},
        {2, Isa::kScalar, 4096, 8, 0, 4096, false},
        {3, Avx2OrScalar(), 7, 4, 0, 16, true},
        {1, Avx2OrScalar(), 64, 16, 14, 512, true},
        {2, BestIsa(), 1, 8, 40, 32, true},
        // Speculation: small pools (preemption), tiny chunks beside verification rows.
        {2, BestIsa(), 7, 4, 48, 64, true, 4},
        {1, Avx2OrScalar(), 64, 16, 0, 512, true, 8},
        {3, BestIsa(), 1, 8, 40, 32, true, 3},
        {2, Isa::kScalar, 4096, 16, 14, 4096, false, 6},
        // A draft model: its own KV pool beside a small target pool, chunks of 7.
        {2, BestIsa(), 7, 4, 48, 64, true, 4, true},
        {3, Avx2OrScalar(), 64, 8, 0, 512, false, 5, true},
    };
    for (const Config& c : configs) engines_.push_back({c, MakeEngine(path_, c)});
  }
  bool ok() const {
    if (!solo_) return false;
    for (const auto& e : engines_)
      if (!e.second) return false;
    return true;
  }
  const Engine& solo() const { return *solo_; }
  int spec_scenarios() const { return spec_scenarios_; }
  int constrained_choices() const { return constrained_choices_; }
  int64_t constrained_tokens() const { return constrained_tokens_; }
  // Speculation counters summed over the speculating engines.
  EngineStats SpecStats() const {
    EngineStats sum;
    for (const auto& [cfg, eng] : engines_) {
      if (cfg.spec_k == 0) continue;
      const EngineStats st = eng->stats();
      sum.spec_draft_tokens += st.spec_draft_tokens;
      sum.spec_accepted_tokens += st.spec_accepted_tokens;
      sum.preemptions += st.preemptions;
    }
    return sum;
  }

  const Outcome& Solo(const RequestParams& p) {
    const std::string k = Key(p);
    auto it = solo_cache_.find(k);
    if (it != solo_cache_.end()) return it->second;
    auto c = solo_->Generate(p);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    Outcome o{c->tokens, c->text, c->finish};
    return solo_cache_[k] = o;
  }

  // One scenario; returns failures as reproducer lines.
  void Run(uint64_t seed, int max_requests, int* scenarios_run) {
    std::mt19937_64 rng(seed), grammar_rng(seed ^ 0x5eedf00dULL);
    auto& [cfg, eng] = engines_[rng() % engines_.size()];
    if (cfg.spec_k > 0) ++spec_scenarios_;
    const int n_vocab = eng->model().hparams().n_vocab;
    const int n_req = 1 + static_cast<int>(rng() % max_requests);
    // A pool of shared prefixes makes prefix-cache hits (warm, partial) likely.
    std::vector<std::vector<int32_t>> prefixes;
    for (int i = 0; i < 3; ++i) {
      std::vector<int32_t> p(1 + rng() % 40);
      for (auto& t : p) t = 1 + static_cast<int32_t>(rng() % (n_vocab - 1));
      prefixes.push_back(p);
    }
    std::vector<RequestParams> reqs(n_req);
    for (auto& r : reqs) {
      if (rng() % 3 != 0) r.prompt = prefixes[rng() % prefixes.size()];
      const int extra = static_cast<int>(rng() % 40);
      for (int i = 0; i < extra || r.prompt.empty(); ++i)
        r.prompt.push_back(1 + static_cast<int32_t>(rng() % (n_vocab - 1)));
      if (rng() % 2) {  // the prompt quotes a stretch of itself (prompt lookup finds it)
        const size_t from = rng() % r.prompt.size();
        const size_t len = 1 + rng() % std::min<size_t>(12, r.prompt.size() - from);
        for (size_t i = 0; i < len; ++i) r.prompt.push_back(r.prompt[from + i]);
      }
      r.max_tokens = 1 + static_cast<int>(rng() % 24);
      r.n = rng() % 4 == 0 ? 2 : 1;
      r.sampling.temperature = rng() % 2 ? 0.0f : 0.8f;
      r.sampling.seed = rng() % 1000;
      r.top_logprobs = 3;
      r.ignore_eos = rng() % 4 != 0;
      if (rng() % 4 == 0)  // a stop string: the text of a prompt token (copies reach it)
        r.stop = {eng->tokenizer().TokenToPiece(r.prompt[rng() % r.prompt.size()])};
      r.logits_hash = true;
      // Constrained requests: their own stream, so the scenarios above are unchanged.
      if (grammar_rng() % 4 == 0) r.grammar = Grammars()[grammar_rng() % Grammars().size()];
    }
    std::vector<Outcome> got(n_req);
    std::vector<std::atomic<int>> open(n_req);
    std::vector<std::thread> clients;
    for (int i = 0; i < n_req; ++i) {
      got[i].tokens.resize(reqs[i].n);
      got[i].text.resize(reqs[i].n);
      got[i].finish.resize(reqs[i].n);
    }
    std::mutex mu;
    for (int i = 0; i < n_req; ++i) {
      if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
      open[i] = reqs[i].n;
      auto sub = eng->Submit(reqs[i], [&, i](const RequestEvent& ev) {
        std::lock_guard<std::mutex> lock(mu);
        if (ev.kind == RequestEvent::Kind::kToken) {
          got[i].tokens[ev.choice].push_back(ev.token);
          got[i].text[ev.choice] += ev.text_delta;
        } else if (ev.kind == RequestEvent::Kind::kFinished) {
          got[i].text[ev.choice] += ev.text_delta;
          got[i].finish[ev.choice] = ev.finish;
          --open[i];
        }
      });
      ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    }
    for (int i = 0; i < n_req; ++i) {
      while (open[i] > 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ++*scenarios_run;
    for (int i = 0; i < n_req; ++i) {
      if (!reqs[i].grammar) continue;
      for (int c = 0; c < reqs[i].n; ++c) {
        ++constrained_choices_;
        constrained_tokens_ += static_cast<int64_t>(got[i].tokens[c].size());
      }
    }
    for (int i = 0; i < n_req; ++i) {
      const std::string diff = Compare(got[i], Solo(reqs[i]));
      EXPECT_EQ(diff, "") << "reproduce: STET_INVARIANCE_SEED=" << seed << " model=" << path_ << " "
                          << cfg.Describe() << " requests=" << n_req << " request " << i
                          << " prompt_len=" << reqs[i].prompt.size()
                          << " differs from its solo run in " << diff;
    }
    // Scoring parity on the first request: teacher-forced logprobs equal the sampled ones.
    RequestParams s;
    s.prompt = reqs[0].prompt;
    for (const auto& t : got[0].tokens[0]) s.prompt.push_back(t.id);
    if (static_cast<int>(s.prompt.size()) < eng->n_ctx()) {
      s.max_tokens = 0;
      s.prompt_logprobs = true;
      s.top_logprobs = 3;
      auto sc = eng->Generate(s);
      ASSERT_TRUE(sc.ok());
      for (size_t j = 0; j < got[0].tokens[0].size(); ++j) {
        const TokenOut& scored = sc->prompt_tokens[reqs[0].prompt.size() + j];
        EXPECT_TRUE(SameBits(scored.logprob, got[0].tokens[0][j].logprob))
            << "scoring parity: STET_INVARIANCE_SEED=" << seed << " step " << j;
      }
    }
  }

 private:
  std::string path_;
  std::unique_ptr<Engine> solo_;
  std::vector<std::pair<Config, std::unique_ptr<Engine>>> engines_;
  std::map<std::string, Outcome> solo_cache_;
  int spec_scenarios_ = 0;
  int constrained_choices_ = 0;
  int64_t constrained_tokens_ = 0;
};

int Scenarios(int dflt) {
  const char* env = std::getenv("STET_INVARIANCE_SCENARIOS");
  return env ? std::atoi(env) : dflt;
}

void RunSuite(const std::string& path, int n, int max_requests, uint64_t salt) {
  STET_REQUIRE_FILE(path);
  Fixture f(path);
  ASSERT_TRUE(f.ok());
  int run = 0;
  if (const char* one = std::getenv("STET_INVARIANCE_SEED")) {
    f.Run(std::strtoull(one, nullptr, 10), max_requests, &run);
    return;
  }
  for (int i = 0; i < n && !::testing::Test::HasFailure(); ++i)
    f.Run(salt * 1000003 + i, max_requests, &run);
  const EngineStats spec = f.SpecStats();
  std::printf(
      "[ invariance ] %s: %d scenarios (%d speculative: %lld of %lld drafts accepted, "
      "%lld preemptions; %d constrained choices, %lld tokens)\n",
      path.substr(path.rfind('/') + 1).c_str(), run, f.spec_scenarios(),
      static_cast<long long>(spec.spec_accepted_tokens),
      static_cast<long long>(spec.spec_draft_tokens), static_cast<long long>(spec.preemptions),
      f.constrained_choices(), static_cast<long long>(f.constrained_tokens()));
  if (run >= 8) {
    EXPECT_GT(f.constrained_choices(), 0);  // the grammar axis is not empty
  }
  if (f.spec_scenarios() >= 8) {  // the axis must not be empty: drafts accepted and rejected
    EXPECT_GT(spec.spec_accepted_tokens, 0);
    EXPECT_LT(spec.spec_accepted_tokens, spec.spec_draft_tokens);
  }
}

TEST(Invariance, Stories260K) {
  RunSuite(testing::SharedDir() + "/models/stories260K/stories260K.gguf", Scenarios(120), 64, 1);
}
TEST(Invariance, Qwen2) {
  RunSuite(testing::SourceDir() + "/tests/golden/arch/qwen2.gguf", Scenarios(30), 32, 2);
}
TEST(Invariance, Qwen3) {
  RunSuite(testing::SourceDir() + "/tests/golden/arch/qwen3.gguf", Scenarios(30), 32, 3);
}
// Gemma 3: sliding window 8 on five layers of six, so at prompt lengths up to
// 120 the window edge falls inside chunks of 1, 7 and 64, across prefix-cache
// hits and preemption; every request must still equal its solo run.
TEST(Invariance, Gemma3SlidingWindow) {
  RunSuite(testing::SourceDir() + "/tests/golden/arch/gemma3.gguf", Scenarios(30), 32, 5);
}
// Qwen3-MoE: 8 experts, 2 per token. Each row's routing comes from its own
// router logits, and each expert's rows run as one batch whatever else is in
// it: every request must equal its solo run.
TEST(Invariance, Qwen3Moe) {
  RunSuite(testing::SourceDir() + "/tests/golden/arch/qwen3moe.gguf", Scenarios(30), 32, 6);
}
// Gemma 2: soft-capped attention scores and logits, window 8 on even layers.
TEST(Invariance, Gemma2Softcaps) {
  RunSuite(testing::SourceDir() + "/tests/golden/arch/gemma2.gguf", Scenarios(20), 32, 7);
}
// Phi-3: q/k/v and gate/up read as row ranges of fused tensors.
TEST(Invariance, Phi3Fused) {
  RunSuite(testing::SourceDir() + "/tests/golden/arch/phi3.gguf", Scenarios(12), 32, 8);
}
TEST(Invariance, Llama3Q8_0) {
  RunSuite(testing::SourceDir() + "/tests/golden/arch/llama-q8_0.gguf", Scenarios(30), 32, 4);
}

// The SmolLM2-135M shape (576 wide, 9/3 heads, 49152-token vocabulary, q4_1
// with the q8_0 tied embedding), random weights, 2 of its 30 layers for CI time.
TEST(Invariance, SmolLM2ShapeRandomQ4_1) {
  const std::string path = ::testing::TempDir() + "/stet-invariance-" + std::to_string(getpid()) +
                           "-smollm2-135m-l2.gguf";
  RandomModelOptions o;
  o.shape = "smollm2-135m";
  o.type = DType::kQ4_1;
  o.seed = 7;
  o.n_layers = 2;
  ASSERT_TRUE(WriteRandomModel(o, path).ok());
  RunSuite(path, Scenarios(16), 8, 5);
  std::remove(path.c_str());  // per process: parallel runs never share the file
}

// Every weight type of the table (numerics/dtype.cc) on tiny random models: a few
// scenarios each (they share every path but the matmul with the models above), so a
// new type is covered here by construction.
TEST(Invariance, TinyRandomEveryWeightType) {
  uint64_t salt = 10;
  for (DType t : ComputableDTypes()) {
    const std::string path = ::testing::TempDir() + "/stet-invariance-" + std::to_string(getpid()) +
                             "-tiny-" + std::string(DTypeName(t)) + ".gguf";
    RandomModelOptions o;
    o.shape = "tiny";
    o.type = t;
    o.seed = 5;
    ASSERT_TRUE(WriteRandomModel(o, path).ok());
    RunSuite(path, Scenarios(4), 8, salt++);
    std::remove(path.c_str());
  }
}

// Quantized MoE (the moe-tiny random qwen3moe: 8 experts, 2 per token, a near-
// uniform random router, so routing rides on near-ties): q4_1 experts go
// through the packed AVX2 kernels with a different row count per expert each
// step, q4_k through the K-quant ones; every request must equal its solo run.
TEST(Invariance, TinyRandomMoeQuantized) {
  uint64_t salt = 20;
  for (DType t : {DType::kQ4_1, DType::kQ4_K}) {
    const std::string path = ::testing::TempDir() + "/stet-invariance-" + std::to_string(getpid()) +
                             "-moe-tiny-" + std::string(DTypeName(t)) + ".gguf";
    RandomModelOptions o;
    o.shape = "moe-tiny";
    o.type = t;
    o.seed = 9;
    ASSERT_TRUE(WriteRandomModel(o, path).ok());
    RunSuite(path, Scenarios(8), 16, salt++);
    std::remove(path.c_str());
  }
}

// R8: the adaptive mode must really be batch-variant, or the contrast is empty.
// Alone, its decode steps take the split-K path; batched with five companions
// they split K differently (the split count follows the batch size), so the
// same request's logits change.
TEST(Invariance, AdaptiveModeIsShownToDiffer) {
  const std::string path = testing::SharedDir() + "/models/stories260K/stories260K.gguf";
  STET_REQUIRE_FILE(path);
  for (NumericsMode mode : {NumericsMode::kAdaptive, NumericsMode::kInvariant}) {
    EngineOptions o;
    o.n_threads = 2;
    o.numerics = mode;
    auto e = Engine::Open(path, o);
    ASSERT_TRUE(e.ok());
    RequestParams p;
    p.prompt = {1, 403, 407};
    p.max_tokens = 16;
    p.sampling.temperature = 0;
    p.logits_hash = true;
    auto solo = (*e)->Generate(p);
    ASSERT_TRUE(solo.ok());
    std::vector<std::thread> companions;
    for (int c = 0; c < 5; ++c) {
      companions.emplace_back([&, c] {
        RequestParams q = p;
        q.prompt = {1, 300 + c};
        q.max_tokens = 400;  // long enough to be sure to overlap the batched run
        q.ignore_eos = true;
        ASSERT_TRUE((*e)->Generate(q).ok());
      });
    }
    // Submit once the companions are really running (the engine publishes its
    // counts every step), so the request is batched with them.
    for (int i = 0; i < 5000 && (*e)->stats().running < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_GE((*e)->stats().running, 3) << "the companions never overlapped";
    auto batched = (*e)->Generate(p);
    for (auto& th : companions) th.join();
    ASSERT_TRUE(batched.ok());
    int differing = 0;
    for (size_t i = 0; i < solo->tokens[0].size() && i < batched->tokens[0].size(); ++i)
      differing += solo->tokens[0][i].logits_hash != batched->tokens[0][i].logits_hash;
    if (mode == NumericsMode::kAdaptive) {
      EXPECT_GT(differing, 0) << "adaptive mode gave bitwise-equal logits solo and batched";
      std::printf("[ invariance ] adaptive mode: %d of 16 steps' logits differ solo vs batched\n",
                  differing);
    } else {
      EXPECT_EQ(differing, 0);
    }
  }
}

}  // namespace
}  // namespace stet

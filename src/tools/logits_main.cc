// stet-logits: prints the SHA-256 of the raw float bits of every step's logits
// for a fixed set of requests (greedy, seeded, chunked prefill, batched) on one
// model, plus the fingerprint. Nothing in the output depends on the machine, the
// ISA or the thread count (R1-R9), so the output of two machines (x86-64 and
// aarch64 in scripts/cross-arm64) must be byte-identical; any difference is a bug.
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/hash.h"
#include "dist/mpi_world.h"
#include "engine/engine.h"

namespace stet {
namespace {

constexpr const char* kUsage =
    "usage: stet-logits MODEL.gguf [--steps N] [--threads N]\n"
    "Prints, for a fixed set of requests, the SHA-256 of each step's raw logits\n"
    "(greedy, seeded n=2, chunked prefill, batched) and the fingerprint. The ISA\n"
    "(STET_ISA, best by default) and the thread count never change the output.\n";

struct Case {
  std::string name;
  RequestParams params;
};

// Per request, per choice: the tokens with their logits.
using Outputs = std::vector<std::vector<std::vector<TokenOut>>>;

// Submits every request before waiting, so that a multi-slot engine decodes
// them in one batch; returns each request's tokens per choice.
Result<Outputs> RunAll(Engine& engine, const std::vector<Case>& cases) {
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    int open = 0;
    std::string error;
  };
  auto w = std::make_shared<Waiter>();
  auto out = std::make_shared<Outputs>(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    (*out)[i].resize(cases[i].params.n);
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->open += cases[i].params.n;
    }
    auto sub = engine.Submit(cases[i].params, [w, out, i](const RequestEvent& ev) {
      std::lock_guard<std::mutex> lock(w->mu);
      if (ev.kind == RequestEvent::Kind::kToken) {
        (*out)[i][ev.choice].push_back(ev.token);
      } else if (ev.kind == RequestEvent::Kind::kFinished) {
        if (ev.finish == FinishReason::kError) w->error = ev.error;
        if (--w->open == 0) w->cv.notify_all();
      }
    });
    if (!sub.ok()) return sub.status();
  }
  std::unique_lock<std::mutex> lock(w->mu);
  w->cv.wait(lock, [&] { return w->open == 0; });
  if (!w->error.empty()) return Internal("request failed: " + w->error);
  return std::move(*out);
}

void Print(const std::string& group, const std::vector<Case>& cases, const Outputs& out) {
  for (size_t i = 0; i < cases.size(); ++i) {
    for (size_t c = 0; c < out[i].size(); ++c) {
      for (size_t t = 0; t < out[i][c].size(); ++t) {
        const TokenOut& tok = out[i][c][t];
        std::printf("%s %s choice=%zu step=%zu token=%d logits_sha256=%s\n", group.c_str(),
                    cases[i].name.c_str(), c, t, tok.id,
                    Sha256Hex(tok.logits.data(), tok.logits.size() * sizeof(float)).c_str());
      }
    }
  }
}

int Main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string path = argv[1];
  int steps = 8, threads = 1;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--steps" || a == "--threads") && i + 1 < argc) {
      const int v = std::atoi(argv[++i]);
      if (v < 1 || v > 4096) {
        std::fprintf(stderr, "stet-logits: %s must be 1..4096, got '%s'\n", a.c_str(), argv[i]);
        return 2;
      }
      (a == "--steps" ? steps : threads) = v;
    } else {
      std::fprintf(stderr, "stet-logits: unknown argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  TpComm* tp = dist::World();
  auto loaded = LoadModelAndTokenizer(path, false, tp);
  if (!loaded.ok()) {
    std::fprintf(stderr, "stet-logits: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  const Tokenizer& tok = *loaded->tokenizer;
  const std::vector<int32_t> p0 = tok.Encode("Once upon a time, there was a little", true, false);
  const std::vector<int32_t> p1 = tok.Encode("The cat sat on the mat and", true, false);
  const std::vector<int32_t> p2 = tok.Encode("Lily liked to play", true, false);

  auto make = [&](const std::string& name, const std::vector<int32_t>& prompt, float temperature,
                  int n) {
    Case c{name, {}};
    c.params.prompt = prompt;
    c.params.max_tokens = steps;
    c.params.n = n;
    c.params.ignore_eos = true;
    c.params.return_logits = true;
    c.params.sampling.temperature = temperature;
    c.params.sampling.top_p = temperature > 0 ? 0.9f : 1.0f;
    c.params.sampling.seed = 1234;
    c.params.speculative = false;
    return c;
  };
  const std::vector<Case> alone = {make("greedy", p0, 0.0f, 1), make("seeded", p1, 0.8f, 2)};
  const std::vector<Case> batch = {make("greedy", p0, 0.0f, 1), make("seeded", p1, 0.8f, 2),
                                   make("greedy2", p2, 0.0f, 1)};

  EngineOptions base;
  base.isa = DefaultIsa();
  base.n_threads = threads;
  base.n_ctx = 256;
  base.prefix_cache = false;
  std::fprintf(stderr, "stet-logits: isa=%s threads=%d steps=%d\n", IsaName(base.isa), threads,
               steps);
  struct Group {
    const char* name;
    int max_seqs, chunk_size;
    const std::vector<Case>* cases;
  };
  // alone: one request at a time, whole-prompt prefill; chunked: 3-token
  // prefill chunks; batched: every request in flight together.
  const Group groups[] = {
      {"alone", 1, 256, &alone}, {"chunked", 1, 3, &alone}, {"batched", 4, 5, &batch}};
  std::string fingerprint;
  for (const Group& g : groups) {
    auto again = LoadModelAndTokenizer(path, false, tp);
    if (!again.ok()) {
      std::fprintf(stderr, "stet-logits: %s\n", again.status().ToString().c_str());
      return 1;
    }
    EngineOptions o = base;
    o.max_seqs = g.max_seqs;
    o.chunk_size = g.chunk_size;
    o.tp = tp;
    auto engine = Engine::Create(std::move(again->model), std::move(again->tokenizer), o);
    if (!engine.ok()) {
      std::fprintf(stderr, "stet-logits: %s\n", engine.status().ToString().c_str());
      return 1;
    }
    fingerprint = (*engine)->fingerprint();
    if (std::strcmp(g.name, "alone") == 0) {
      // Single requests run one after another.
      for (const Case& c : *g.cases) {
        auto out = RunAll(**engine, {c});
        if (!out.ok()) {
          std::fprintf(stderr, "stet-logits: %s\n", out.status().ToString().c_str());
          return 1;
        }
        Print(g.name, {c}, *out);
      }
      continue;
    }
    auto out = RunAll(**engine, *g.cases);
    if (!out.ok()) {
      std::fprintf(stderr, "stet-logits: %s\n", out.status().ToString().c_str());
      return 1;
    }
    Print(g.name, *g.cases, *out);
  }
  std::printf("fingerprint %s\n", fingerprint.c_str());
  return 0;
}

}  // namespace
}  // namespace stet

// Under mpirun -np N (tensor parallelism): rank 0 prints, the others serve its
// forward passes; the output must equal one process's, byte for byte.
int main(int argc, char** argv) {
  auto world = stet::dist::JoinWorld(&argc, &argv);
  if (!world.ok()) {
    std::fprintf(stderr, "stet-logits: %s\n", world.status().message().c_str());
    return 1;
  }
  if (*world != nullptr && (*world)->rank() > 0) return stet::dist::WorkerMain();
  return stet::dist::LeaveWorld(stet::Main(argc, argv));
}

// bench/python's C++ baseline: the prompts of a file (one JSON string per
// line) submitted to the engine at once, as LLM.generate submits them (same
// EngineOptions as stet.LLM's defaults, prefix cache off, greedy, ignore_eos),
// timed over --reps runs of one loaded engine. Prints one JSON line per rep
// with the seconds, the tokens generated and a hash of every generated id, so
// run.py can check that Python produced the very same tokens.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/hash.h"
#include "engine/engine.h"

namespace {

struct Args {
  std::string model, prompts;
  int tokens = 128, threads = 2, reps = 3;
};

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "-m")
      a->model = v;
    else if (k == "--prompts")
      a->prompts = v;
    else if (k == "-n")
      a->tokens = std::atoi(v.c_str());
    else if (k == "-t")
      a->threads = std::atoi(v.c_str());
    else if (k == "--reps")
      a->reps = std::atoi(v.c_str());
    else
      return false;
  }
  return !a->model.empty() && !a->prompts.empty() && a->tokens > 0 && a->reps > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!ParseArgs(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: stet_engine_batch -m MODEL --prompts FILE [-n TOKENS] [-t THREADS] "
                 "[--reps N]\n  FILE: one JSON string per line\n");
    return 2;
  }
  std::ifstream in(a.prompts);
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) prompts.push_back(nlohmann::json::parse(line).get<std::string>());
  stet::EngineOptions eo;  // stet.LLM's defaults (python/src/offline.cc), prefix cache off
  eo.n_threads = a.threads;
  eo.isa = stet::BestIsa();
  eo.prefix_cache = false;
  auto engine = stet::Engine::Open(a.model, eo);
  if (!engine.ok()) {
    std::fprintf(stderr, "stet_engine_batch: %s\n", engine.status().ToString().c_str());
    return 1;
  }
  stet::Engine& e = **engine;
  std::vector<stet::RequestParams> params;
  for (const std::string& p : prompts) {
    stet::RequestParams rp;
    rp.prompt = e.tokenizer().Encode(p, true, true);
    rp.max_tokens = a.tokens;
    rp.sampling.temperature = 0;
    rp.ignore_eos = true;
    params.push_back(std::move(rp));
  }
  for (int rep = 0; rep < a.reps; ++rep) {
    std::mutex mu;
    std::condition_variable cv;
    size_t done = 0;
    std::vector<std::vector<int32_t>> ids(params.size());
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < params.size(); ++i) {
      auto sub = e.Submit(params[i], [&, i](const stet::RequestEvent& ev) {
        std::lock_guard<std::mutex> lock(mu);
        if (ev.kind == stet::RequestEvent::Kind::kToken) ids[i].push_back(ev.token.id);
        if (ev.kind == stet::RequestEvent::Kind::kFinished && ++done == params.size())
          cv.notify_all();
      });
      if (!sub.ok()) {
        std::fprintf(stderr, "stet_engine_batch: %s\n", sub.status().ToString().c_str());
        return 1;
      }
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done == params.size(); });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    size_t tokens = 0;
    std::string all;
    for (const auto& v : ids) {
      tokens += v.size();
      for (int32_t id : v) all += std::to_string(id) + ",";
      all += ";";
    }
    std::printf("{\"seconds\": %.6f, \"tokens\": %zu, \"ids_sha256\": \"%s\"}\n", s, tokens,
                stet::Sha256Hex(all.data(), all.size()).c_str());
    std::fflush(stdout);
  }
  return 0;
}

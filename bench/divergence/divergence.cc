// The contrast demo: M identical greedy requests, submitted in waves of random
// size alongside random companion traffic, once in invariant mode and once in
// adaptive mode (R8: what ordinary engines do). Prints, per mode, how many
// distinct completions came back and where each variant first forked from the
// most common one, with the logprob gap of the fork (a near-tie). Writes the
// same as JSON with --json.
//   stet_divergence -m MODEL [-p PROMPT] [-M 1000] [-n 48] [--threads 2]
//                   [--max-wave 32] [--seed 1] [--json FILE]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "engine/engine.h"
#include "tokenizer/vocab.h"

using namespace stet;

namespace {

struct Args {
  std::string model;
  std::string prompt = "Write a short story about a robot who learns to paint.";
  int m = 1000;
  int n = 48;
  int threads = 2;
  int max_wave = 32;
  uint64_t seed = 1;
  std::string json;
  std::vector<std::string> modes = {"invariant", "adaptive"};
};

struct Output {
  std::vector<int32_t> ids;
  std::vector<float> logprob;
  std::vector<std::vector<TokenLogprob>> top;
};

nlohmann::json RunMode(const Args& a, NumericsMode mode) {
  auto model = Model::Load(a.model);
  if (!model.ok()) throw std::runtime_error(model.status().ToString());
  auto vocab = VocabFromGguf((*model)->file());
  auto tok = Tokenizer::Create(std::move(*vocab));
  EngineOptions o;
  o.n_threads = a.threads;
  o.isa = BestIsa();
  o.numerics = mode;
  o.n_ctx = 1024;
  o.max_seqs = 96;
  auto eng = Engine::Create(std::move(*model), std::move(*tok), o);
  if (!eng.ok()) throw std::runtime_error(eng.status().ToString());
  Engine& e = **eng;
  const std::vector<int32_t> prompt = e.tokenizer().Encode(a.prompt, true, false);
  const int n_vocab = e.model().hparams().n_vocab;

  std::mt19937_64 rng(a.seed);
  std::vector<Output> outs;
  std::mutex mu;
  const auto t0 = std::chrono::steady_clock::now();
  int done = 0;
  while (done < a.m) {
    const int wave = std::min(a.m - done, 1 + static_cast<int>(rng() % a.max_wave));
    const int companions = static_cast<int>(rng() % 9);
    std::vector<std::thread> clients;
    for (int c = 0; c < companions; ++c) {
      RequestParams q;
      const int len = 1 + static_cast<int>(rng() % 40);
      for (int i = 0; i < len; ++i) q.prompt.push_back(static_cast<int32_t>(rng() % n_vocab));
      q.max_tokens = 1 + static_cast<int>(rng() % (a.n + 16));
      q.sampling.temperature = 0.7f;
      q.sampling.seed = rng();
      q.ignore_eos = true;
      const int delay_us = static_cast<int>(rng() % 20000);
      clients.emplace_back([&e, q, delay_us] {
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
        (void)e.Generate(q);
      });
    }
    for (int i = 0; i < wave; ++i) {
      const int delay_us = static_cast<int>(rng() % 20000);
      clients.emplace_back([&, delay_us] {
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
        RequestParams p;
        p.prompt = prompt;
        p.max_tokens = a.n;
        p.sampling.temperature = 0;
        p.top_logprobs = 2;
        p.ignore_eos = true;
        auto c = e.Generate(p);
        if (!c.ok()) return;
        Output o;
        for (const auto& t : c->tokens[0]) {
          o.ids.push_back(t.id);
          o.logprob.push_back(t.logprob);
          o.top.push_back(t.top);
        }
        std::lock_guard<std::mutex> lock(mu);
        outs.push_back(std::move(o));
      });
    }
    for (auto& t : clients) t.join();
    done += wave;
    std::fprintf(stderr, "\r%s: %d/%d requests", NumericsModeName(mode), done, a.m);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "\n");

  // Distinct completions, the most common one as the reference.
  std::map<std::vector<int32_t>, int> counts;
  for (const auto& o : outs) counts[o.ids]++;
  const auto ref_it =
      std::max_element(counts.begin(), counts.end(),
                       [](const auto& x, const auto& y) { return x.second < y.second; });
  const std::vector<int32_t> ref = ref_it->first;
  nlohmann::json variants = nlohmann::json::array();
  std::map<std::vector<int32_t>, bool> reported;
  for (const auto& o : outs) {
    if (o.ids == ref || reported[o.ids]) continue;
    reported[o.ids] = true;
    size_t fork = 0;
    while (fork < o.ids.size() && fork < ref.size() && o.ids[fork] == ref[fork]) ++fork;
    nlohmann::json v = {{"count", counts[o.ids]}, {"first_divergent_token", fork}};
    if (fork < o.ids.size() && fork < ref.size()) {
      v["tokens_at_fork"] = {e.tokenizer().TokenToPiece(ref[fork]),
                             e.tokenizer().TokenToPiece(o.ids[fork])};
      if (o.top[fork].size() >= 2)
        v["top2_logprob_gap_at_fork"] = o.top[fork][0].logprob - o.top[fork][1].logprob;
    }
    variants.push_back(v);
  }
  std::sort(variants.begin(), variants.end(), [](const auto& x, const auto& y) {
    return x["first_divergent_token"] < y["first_divergent_token"];
  });
  nlohmann::json r = {{"mode", NumericsModeName(mode)},
                      {"fingerprint", e.fingerprint()},
                      {"requests", outs.size()},
                      {"distinct_completions", counts.size()},
                      {"most_common_count", ref_it->second},
                      {"reference_text", e.tokenizer().Decode(ref)},
                      {"variants", variants},
                      {"seconds", secs}};
  std::printf("%-9s %s: %zu requests, %zu distinct completion(s); most common %d/%zu",
              NumericsModeName(mode), e.fingerprint().c_str(), outs.size(), counts.size(),
              ref_it->second, outs.size());
  if (!variants.empty()) {
    std::printf("; earliest fork at token %d", variants[0]["first_divergent_token"].get<int>());
    if (variants[0].contains("top2_logprob_gap_at_fork"))
      std::printf(" (top-2 logprob gap %.4f)",
                  variants[0]["top2_logprob_gap_at_fork"].get<double>());
  }
  std::printf("  [%.0f s]\n", secs);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{
      "Identical greedy requests under random concurrency: invariant vs adaptive numerics"};
  app.add_option("-m,--model", a.model, "GGUF model")->required();
  app.add_option("-p,--prompt", a.prompt, "The prompt every request sends")->capture_default_str();
  app.add_option("-M,--requests", a.m, "Identical requests per mode")->capture_default_str();
  app.add_option("-n,--max-tokens", a.n, "Tokens per request")->capture_default_str();
  app.add_option("-t,--threads", a.threads, "Engine threads")->capture_default_str();
  app.add_option("--max-wave", a.max_wave, "Largest wave of simultaneous identical requests")
      ->capture_default_str();
  app.add_option("--seed", a.seed, "Seed of the traffic pattern")->capture_default_str();
  app.add_option("--modes", a.modes, "Modes to run")->capture_default_str();
  app.add_option("--json", a.json, "Write the results as JSON");
  CLI11_PARSE(app, argc, argv);
  nlohmann::json all = {{"model", a.model},
                        {"prompt", a.prompt},
                        {"max_tokens", a.n},
                        {"threads", a.threads},
                        {"results", nlohmann::json::array()}};
  try {
    for (const auto& m : a.modes) {
      all["results"].push_back(
          RunMode(a, m == "adaptive" ? NumericsMode::kAdaptive : NumericsMode::kInvariant));
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "stet_divergence: error: %s\n", ex.what());
    return 1;
  }
  if (!a.json.empty()) std::ofstream(a.json) << all.dump(2) << "\n";
  return 0;
}

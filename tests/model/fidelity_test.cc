// Distance to the truth, per numerics mode: teacher-forced log-probabilities of
// the forward pass against a float64 forward over the same exactly dequantized
// weights (tests/golden/<model>/f64_reference.json, made by
// scripts/golden/make_f64_reference.py / make_smollm2_f64.py), next to
// llama.cpp's on the same token paths (the llama.cpp goldens:
// tests/golden/smollm2/llamacpp_greedy.json, tests/golden/gemma3/gemma-3-270m.json).
//
//   fast:      one int8 pass over the activations, as llama.cpp does: about as
//              far from float64 as llama.cpp (mean within 25%).
//   invariant: the default; the int8 activation plus its int8 correction
//              (refined activations): at least 10x closer than llama.cpp on
//              average, its worst step no worse than llama.cpp's worst.
//   precise:   float activations over the dequantized weights, f32 KV: every
//              step within 1e-4 nats of float64 (measured 1e-5).
// Every mode's bits are the same on every ISA and thread count, so these
// figures are the same on every machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/thread_pool.h"
#include "model/forward.h"
#include "model/paged_kv.h"
#include "support/test_support.h"

namespace stet {
namespace {

struct Errors {
  double mean = 0, max = 0;
  std::vector<double> steps;
};

struct Case {
  std::string model, llamacpp, f64;
};

const Case kSmol{"SmolLM2-135M-Instruct.Q4_1.gguf", "tests/golden/smollm2/llamacpp_greedy.json",
                 "tests/golden/smollm2/f64_reference.json"};
const Case kGemma{"gemma-3-270m-q4_k_m.gguf", "tests/golden/gemma3/gemma-3-270m.json",
                  "tests/golden/gemma3/f64_reference.json"};

nlohmann::json Golden(const std::string& rel) {
  return nlohmann::json::parse(testing::ReadFileOrDie(testing::SourceDir() + "/" + rel));
}

Errors Summarize(std::vector<double> e) {
  Errors s;
  for (double v : e) {
    s.mean += v;
    s.max = std::max(s.max, v);
  }
  s.mean /= static_cast<double>(e.size());
  s.steps = std::move(e);
  return s;
}

// |llama.cpp - f64| on every step of the golden's paths.
Errors LlamaCppErrors(const nlohmann::json& ll, const nlohmann::json& f64) {
  std::vector<double> e;
  for (size_t c = 0; c < f64["cases"].size(); ++c) {
    const auto& fs = f64["cases"][c]["steps"];
    for (size_t j = 0; j < fs.size(); ++j)
      e.push_back(std::fabs(ll["cases"][c]["steps"][j]["logprob"].get<double>() -
                            fs[j]["logprob"].get<double>()));
  }
  return Summarize(std::move(e));
}

// log-softmax of the float logits, in double: the forward's distance to the
// truth, not the float32 log-softmax's own (the API's logprobs add up to ~1e-3
// on a 262k vocabulary).
double LogSoftmax64(const float* row, int n, int32_t id) {
  double mx = row[0];
  for (int i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(row[i]));
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(row[i]) - mx);
  return static_cast<double>(row[id]) - mx - std::log(sum);
}

// |stet - f64| on every step, teacher-forced along the f64 reference's paths.
Errors StetErrors(const Model& model, const nlohmann::json& f64, NumericsMode mode, DType kv_type) {
  const int n_vocab = model.hparams().n_vocab;
  ThreadPool pool(2);
  std::vector<double> e;
  for (const auto& fc : f64["cases"]) {
    std::vector<int32_t> ids = fc["prompt_ids"].get<std::vector<int32_t>>();
    const size_t n_prompt = ids.size();
    for (const auto& st : fc["steps"]) ids.push_back(st["id"].get<int32_t>());
    Forward fwd(model, &pool, BestIsa(), 256, mode);
    PagedKvCache kv = PagedKvCache::Contiguous(model.hparams(), 1, 256, kv_type);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < ids.size(); ++i)
      batch.push_back({ids[i], static_cast<int32_t>(i), 0, true});
    std::vector<float> logits;
    EXPECT_TRUE(fwd.Run(batch, kv, &logits).ok());
    if (logits.size() < ids.size() * static_cast<size_t>(n_vocab)) return {};
    for (size_t j = 0; j < fc["steps"].size(); ++j) {
      const float* row = &logits[(n_prompt - 1 + j) * n_vocab];
      e.push_back(std::fabs(LogSoftmax64(row, n_vocab, ids[n_prompt + j]) -
                            fc["steps"][j]["logprob"].get<double>()));
    }
  }
  return Summarize(std::move(e));
}

void Report(const char* model, const char* what, const Errors& e) {
  std::printf("[ fidelity ] %-8s %-22s mean %.5f  max %.5f  (%zu steps)\n", model, what, e.mean,
              e.max, e.steps.size());
}

void CheckModes(const Case& c, const char* label) {
  const std::string path = testing::ModelCacheDir() + "/" + c.model;
  STET_REQUIRE_FILE(path);
  const auto ll = Golden(c.llamacpp);
  const auto f64 = Golden(c.f64);
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const Errors peer = LlamaCppErrors(ll, f64);
  Report(label, "llama.cpp (f16 KV)", peer);

  const Errors fast = StetErrors(**model, f64, NumericsMode::kFast, DType::kF16);
  Report(label, "stet fast (f16 KV)", fast);
  ASSERT_EQ(fast.steps.size(), peer.steps.size());
  EXPECT_LE(fast.mean, 1.25 * peer.mean + 0.002);

  const Errors inv = StetErrors(**model, f64, NumericsMode::kInvariant, DType::kF16);
  Report(label, "stet invariant (f16 KV)", inv);
  EXPECT_LE(inv.mean, 0.1 * peer.mean);
  EXPECT_LE(inv.max, peer.max);
  EXPECT_LE(inv.max, 0.01);  // the refined activations' own bound, with f16 KV

  const Errors precise = StetErrors(**model, f64, NumericsMode::kPrecise, DType::kF32);
  Report(label, "stet precise (f32 KV)", precise);
  for (size_t i = 0; i < precise.steps.size(); ++i)
    EXPECT_LE(precise.steps[i], 1e-4) << "step " << i;  // the issue asks 1e-3; measured 1e-5
}

TEST(Fidelity, SmolLM2Q4_1) { CheckModes(kSmol, "smollm2"); }

TEST(Fidelity, Gemma3Q4_K_M) { CheckModes(kGemma, "gemma3"); }

}  // namespace
}  // namespace stet

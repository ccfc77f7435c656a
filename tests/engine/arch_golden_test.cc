// Architectures against llama.cpp on small seeded random-weight models
// (tests/golden/arch/*.gguf + .json, made by scripts/golden/make_arch_goldens.py
// with llama-cpp-python 0.3.36; gemma3 by make_gemma3_goldens.py with the same
// llama.cpp; qwen3moe, phi3, gemma2 and the weight types by
// make_llamacpp_arch_goldens.py): qwen2 (q/k/v biases, NeoX
// RoPE, tied output), qwen3 (per-head q/k RMSNorm, key_length != n_embd/n_head), llama3 (rope_freqs
// scaling), gemma3 (sliding window 8, two RoPE bases, post-norms, GeGLU,
// scaled embeddings), qwen3moe (8 experts, 2 per token, renormalized router
// weights), phi3 (fused qkv and gate/up), gemma2 (attention and final-logit
// soft-capping, window on even layers), and F16 / Q8_0 weights, and a llama in
// each newer weight type (q5_0 ... iq4_xs, made by stet quantize; within 0.5,
// measured 0.13-0.34: the engines quantize activations for the dot products
// differently). Greedy ids must match on every step
// (the goldens' paths keep top-2 gaps >= 0.05); first-step logits must agree within what
// llama.cpp's own rounding explains (f16 KV: ~2e-2; q8_0 activations: ~0.2). Run through the
// serving engine (Engine::Open) in --numerics fast, the single int8 activation pass llama.cpp
// also makes (the default mode's refined activations are held to float64 instead:
// tests/model/smollm2_logprobs_test.cc, fidelity_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "engine/engine.h"
#include "format/gguf.h"
#include "model/arch.h"
#include "support/test_support.h"

namespace stet {
namespace {

// The goldens and their first-step logit tolerances.
const std::pair<const char*, double> kGoldens[] = {
    {"qwen2", 1e-2},     {"qwen3", 1e-2},      {"llama3", 1e-2},    {"llama-f16", 1e-2},
    {"llama-q8_0", 0.2}, {"gemma3", 1e-2},     {"qwen3moe", 1e-2},  {"phi3", 1e-2},
    {"gemma2", 1e-2},    {"llama-q5_0", 0.5},  {"llama-q5_1", 0.5}, {"llama-iq4_nl", 0.5},
    {"llama-q2_k", 0.5}, {"llama-q3_k", 0.5},  {"llama-q4_k", 0.5}, {"llama-q5_k", 0.5},
    {"llama-q6_k", 0.5}, {"llama-iq4_xs", 0.5}};

class ArchGolden : public ::testing::TestWithParam<std::pair<const char*, double>> {};

TEST_P(ArchGolden, GreedyIdsAndLogitsMatchLlamaCpp) {
  const std::string name = GetParam().first;
  const double logit_tol = GetParam().second;
  const std::string dir = testing::SourceDir() + "/tests/golden/arch/";
  const auto golden = nlohmann::json::parse(testing::ReadFileOrDie(dir + name + ".json"));
  for (Isa isa : {Isa::kScalar, BestIsa()}) {
    EngineOptions eo;
    eo.numerics = NumericsMode::kFast;  // llama.cpp's arithmetic: one int8 activation pass
    eo.isa = isa;
    eo.n_ctx = 256;
    auto engine = Engine::Open(dir + name + ".gguf", eo);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    EXPECT_EQ(std::string((*engine)->model().hparams().arch->name),
              golden["hparams"]["arch"].get<std::string>());
    RequestParams rp;
    rp.prompt = golden["prompt_ids"].get<std::vector<int32_t>>();
    rp.max_tokens = static_cast<int>(golden["steps"].size());
    rp.sampling.temperature = 0;
    rp.ignore_eos = true;
    rp.return_logits = true;
    auto done = (*engine)->Generate(rp);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    std::vector<int32_t> got;
    for (const TokenOut& t : done->tokens[0]) got.push_back(t.id);
    ASSERT_FALSE(done->tokens[0].empty());
    const std::vector<float>& first_logits = done->tokens[0][0].logits;
    EXPECT_EQ(got, golden["generated_ids"].get<std::vector<int32_t>>())
        << name << " " << IsaName(isa);
    const auto want = golden["first_logits"].get<std::vector<double>>();
    ASSERT_EQ(want.size(), first_logits.size());
    double max_diff = 0;
    for (size_t i = 0; i < want.size(); ++i)
      max_diff = std::max(max_diff, std::fabs(first_logits[i] - want[i]));
    EXPECT_LT(max_diff, logit_tol) << name;
    std::printf("[ arch     ] %-10s %-6s greedy %zu/%zu ids equal, max |dlogit| %.2e\n",
                name.c_str(), IsaName(isa), got.size(), golden["steps"].size(), max_diff);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ArchGolden, ::testing::ValuesIn(kGoldens), [](const auto& info) {
  std::string n = info.param.first;
  for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
});

// The registry (model/arch.cc) and the goldens agree: every architecture stet
// accepts has a golden file, and every golden file in the folder is checked above.
TEST(ArchGoldenCoverage, EveryRegisteredArchitectureHasAGolden) {
  const std::string dir = testing::SourceDir() + "/tests/golden/arch";
  std::set<std::string> archs, listed, files;
  for (const auto& g : kGoldens) listed.insert(g.first);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".gguf") continue;
    files.insert(e.path().stem().string());
    auto f = gguf::GgufFile::Open(e.path().string());
    ASSERT_TRUE(f.ok()) << e.path() << ": " << f.status().ToString();
    const gguf::MetaValue* a = (*f)->Find("general.architecture");
    ASSERT_TRUE(a && a->AsString()) << e.path();
    archs.insert(std::string(*a->AsString()));
  }
  EXPECT_EQ(files, listed) << "a golden file is not in kGoldens, or the reverse";
  const std::string all = SupportedArchList();
  size_t start = 0;
  while (start < all.size()) {
    const size_t comma = all.find(", ", start);
    const std::string name =
        all.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    EXPECT_TRUE(archs.count(name)) << "no golden in tests/golden/arch for architecture " << name;
    start = comma == std::string::npos ? all.size() : comma + 2;
  }
}

}  // namespace
}  // namespace stet

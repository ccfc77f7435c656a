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
// serving engine (Engine::Open): the goldens pin the served path.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "support/test_support.h"

namespace stet {
namespace {

class ArchGolden : public ::testing::TestWithParam<std::pair<const char*, double>> {};

TEST_P(ArchGolden, GreedyIdsAndLogitsMatchLlamaCpp) {
  const std::string name = GetParam().first;
  const double logit_tol = GetParam().second;
  const std::string dir = testing::SourceDir() + "/tests/golden/arch/";
  const auto golden = nlohmann::json::parse(testing::ReadFileOrDie(dir + name + ".json"));
  for (Isa isa : {Isa::kScalar, BestIsa()}) {
    EngineOptions eo;
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

INSTANTIATE_TEST_SUITE_P(
    Models, ArchGolden,
    ::testing::Values(std::make_pair("qwen2", 1e-2), std::make_pair("qwen3", 1e-2),
                      std::make_pair("llama3", 1e-2), std::make_pair("llama-f16", 1e-2),
                      std::make_pair("llama-q8_0", 0.2), std::make_pair("gemma3", 1e-2),
                      std::make_pair("qwen3moe", 1e-2), std::make_pair("phi3", 1e-2),
                      std::make_pair("gemma2", 1e-2), std::make_pair("llama-q5_0", 0.5),
                      std::make_pair("llama-q5_1", 0.5), std::make_pair("llama-iq4_nl", 0.5),
                      std::make_pair("llama-q2_k", 0.5), std::make_pair("llama-q3_k", 0.5),
                      std::make_pair("llama-q4_k", 0.5), std::make_pair("llama-q5_k", 0.5),
                      std::make_pair("llama-q6_k", 0.5), std::make_pair("llama-iq4_xs", 0.5)),
    [](const auto& info) {
      std::string n = info.param.first;
      for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

}  // namespace
}  // namespace stet

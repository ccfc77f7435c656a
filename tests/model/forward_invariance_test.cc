// The forward pass is batch-invariant: a sequence's logits are bitwise equal
// whatever the prefill chunk size, the thread count, the ISA path, and the
// other sequences sharing its batches (numerics rules R1–R4). Run on the real
// stories260K, SmolLM2 and Gemma 3 270M models, a random gemma3 model whose
// sliding window is short enough to matter, and tiny random models of the newer weight types.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "model/forward.h"
#include "model/paged_kv.h"
#include "model/random_model.h"
#include "support/test_support.h"

namespace stet {
namespace {

struct Config {
  int chunk;
  int threads;
  Isa isa;
  int companions;  // other sequences interleaved into every batch
};

std::string Describe(const Config& c) {
  return "chunk=" + std::to_string(c.chunk) + " threads=" + std::to_string(c.threads) +
         " isa=" + IsaName(c.isa) + " companions=" + std::to_string(c.companions);
}

// Logits at every position of `prompt` (seq 0), computed under `cfg`.
std::vector<std::vector<float>> AllLogits(const Model& model, const std::vector<int32_t>& prompt,
                                          const Config& cfg, int n_ctx = 256) {
  const HParams& hp = model.hparams();
  ThreadPool pool(cfg.threads);
  Forward fwd(model, &pool, cfg.isa, n_ctx);
  // The block size varies with the config too: the paged layout never reaches a value.
  PagedKvCache kv = PagedKvCache::Contiguous(hp, 1 + cfg.companions, n_ctx, DType::kF16,
                                             cfg.threads == 1 ? 16 : 5);
  std::vector<std::vector<float>> out;
  std::vector<int32_t> companion_pos(cfg.companions + 1, 0);
  for (size_t start = 0; start < prompt.size(); start += cfg.chunk) {
    std::vector<BatchToken> batch;
    std::vector<bool> ours;
    const size_t end = std::min(prompt.size(), start + cfg.chunk);
    for (size_t i = start; i < end; ++i) {
      // Companions: other sequences at other positions, before and after ours.
      for (int c = 1; c <= cfg.companions; ++c) {
        if ((i + c) % 2 == 0) {
          const int32_t pos = companion_pos[c]++;
          batch.push_back({static_cast<int32_t>((7 * c + 3 * pos) % hp.n_vocab), pos, c, c == 1});
          ours.push_back(false);
        }
      }
      batch.push_back({prompt[i], static_cast<int32_t>(i), 0, true});
      ours.push_back(true);
    }
    std::vector<float> logits;
    EXPECT_TRUE(fwd.Run(batch, kv, &logits).ok());
    size_t row = 0;
    for (size_t b = 0; b < batch.size(); ++b) {
      if (!batch[b].logits) continue;
      if (ours[b]) {
        out.emplace_back(logits.begin() + row * hp.n_vocab,
                         logits.begin() + (row + 1) * hp.n_vocab);
      }
      ++row;
    }
  }
  return out;
}

std::vector<int32_t> Prompt(const Model& model, int n_prompt) {
  std::vector<int32_t> prompt;
  for (int i = 0; i < n_prompt; ++i) prompt.push_back((i * 37 + 11) % model.hparams().n_vocab);
  prompt[0] = 1;
  return prompt;
}

// Every config's logits == base's, bit for bit.
void ExpectSame(const Model& model, const std::vector<int32_t>& prompt, const Config& base,
                const std::vector<Config>& configs, int n_ctx = 256) {
  const auto want = AllLogits(model, prompt, base, n_ctx);
  ASSERT_EQ(want.size(), prompt.size());
  for (const Config& c : configs) {
    const auto got = AllLogits(model, prompt, c, n_ctx);
    ASSERT_EQ(got.size(), want.size()) << Describe(c);
    for (size_t p = 0; p < want.size(); ++p) {
      ASSERT_EQ(0, std::memcmp(got[p].data(), want[p].data(), want[p].size() * sizeof(float)))
          << "logits differ at position " << p << " under " << Describe(c) << " vs "
          << Describe(base);
    }
  }
}

void ExpectInvariant(const std::string& path, int n_prompt) {
  STET_REQUIRE_FILE(path);
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const std::vector<int32_t> prompt = Prompt(**model, n_prompt);
  const Config base{n_prompt, 1, Isa::kScalar, 0};
  std::vector<Config> configs = {
      {1, 1, Isa::kScalar, 0},
      {7, 2, Isa::kScalar, 0},
      {n_prompt, 3, Isa::kScalar, 2},
      {3, 1, Isa::kScalar, 3},
  };
  if (CpuHasAvx2Fma()) {
    for (Config c : std::vector<Config>{{n_prompt, 1, Isa::kAvx2, 0},
                                        {1, 2, Isa::kAvx2, 0},
                                        {7, 3, Isa::kAvx2, 2},
                                        {5, 2, Isa::kAvx2, 4}})
      configs.push_back(c);
  }
  if (CpuHasAvx512()) {
    for (Config c : std::vector<Config>{{n_prompt, 1, Isa::kAvx512, 0},
                                        {1, 2, Isa::kAvx512, 0},
                                        {7, 3, Isa::kAvx512, 2},
                                        {5, 2, Isa::kAvx512, 4},
                                        {n_prompt, 2, Isa::kAvx512, 3}})
      configs.push_back(c);
  }
  ExpectSame(**model, prompt, base, configs);
}

TEST(ForwardInvariance, Stories260K) {
  ExpectInvariant(testing::SharedDir() + "/models/stories260K/stories260K.gguf", 40);
}

TEST(ForwardInvariance, SmolLM2Q4_1) {
  ExpectInvariant(testing::ModelCacheDir() + "/SmolLM2-135M-Instruct.Q4_1.gguf", 12);
}

// Gemma 3 with a sliding window of 8 positions on layers 0-4: 40 positions put
// the window edge inside every chunk size above, and past block boundaries of
// the paged cache (block 5 or 16); layer 5 attends to everything.
TEST(ForwardInvariance, Gemma3SlidingWindow) {
  ExpectInvariant(testing::SourceDir() + "/tests/golden/arch/gemma3.gguf", 40);
}

// Qwen3-MoE: every chunking, thread count and ISA groups the rows per expert
// differently; the logits must not move.
TEST(ForwardInvariance, Qwen3Moe) {
  ExpectInvariant(testing::SourceDir() + "/tests/golden/arch/qwen3moe.gguf", 40);
}

// Decode past 256 positions with fewer KV heads (2) than threads (3, 4): each
// token's attention goes in steps spread over the threads (Forward::AttendSplit:
// scores by position range, values by dim range; on the SIMD paths, which have
// the step kernels) — the same bits as the whole prompt in one scalar batch. A
// mutation (each denominator doubled) fails at position 255, the first split.
TEST(ForwardInvariance, SplitAttentionPast256Positions) {
  const std::string path = testing::SourceDir() + "/tests/golden/arch/gemma3.gguf";
  STET_REQUIRE_FILE(path);
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_LT((*model)->hparams().n_head_kv, 3);
  const int n_prompt = 300;
  std::vector<Config> configs = {{1, 3, Isa::kScalar, 0}};
  if (CpuHasAvx2Fma()) configs.push_back({1, 3, Isa::kAvx2, 0});
  if (CpuHasAvx512()) configs.push_back({1, 4, Isa::kAvx512, 0});
  ExpectSame(**model, Prompt(**model, n_prompt), {n_prompt, 1, Isa::kScalar, 0}, configs, 512);
}

TEST(ForwardInvariance, Gemma2Softcaps) {
  ExpectInvariant(testing::SourceDir() + "/tests/golden/arch/gemma2.gguf", 40);
}

TEST(ForwardInvariance, Phi3Fused) {
  ExpectInvariant(testing::SourceDir() + "/tests/golden/arch/phi3.gguf", 24);
}

TEST(ForwardInvariance, Gemma3_270M) {
  ExpectInvariant(testing::ModelCacheDir() + "/gemma-3-270m-q4_k_m.gguf", 4);
}

// Every weight type of the table (numerics/dtype.cc) on the tiny random shape: its K
// are 256 and 512, so every matrix but the embedding (q6_k or q8_0 for quantized
// types) has the type, and a new type is covered here by construction.
TEST(ForwardInvariance, TinyRandomEveryWeightType) {
  for (DType t : ComputableDTypes()) {
    SCOPED_TRACE(DTypeName(t));
    const std::string path =
        ::testing::TempDir() + "/stet-fwd-tiny-" + std::string(DTypeName(t)) + ".gguf";
    RandomModelOptions o;
    o.shape = "tiny";
    o.type = t;
    o.seed = 11;
    ASSERT_TRUE(WriteRandomModel(o, path).ok());
    ExpectInvariant(path, 12);
  }
}

// Quantized experts (moe-tiny, 8 experts of 256, 2 per token): each chunking
// and thread count routes different row sets to each expert's MatMul.
TEST(ForwardInvariance, TinyRandomMoeQuantized) {
  for (DType t : {DType::kQ4_1, DType::kQ8_0, DType::kQ4_K}) {
    SCOPED_TRACE(DTypeName(t));
    const std::string path =
        ::testing::TempDir() + "/stet-fwd-moe-tiny-" + std::string(DTypeName(t)) + ".gguf";
    RandomModelOptions o;
    o.shape = "moe-tiny";
    o.type = t;
    o.seed = 13;
    ASSERT_TRUE(WriteRandomModel(o, path).ok());
    ExpectInvariant(path, 16);
  }
}

}  // namespace
}  // namespace stet

// stet quantize's library half: 2-D matrices and MoE expert stacks take the
// requested type row by row, a MoE router and the norms stay f32, and the
// result loads and runs (tests/golden/arch/qwen3moe.gguf, an F32 qwen3moe); the
// q4_k_m mix gives every tensor of the real Gemma 3 270M Q4_K_M file (written by
// llama.cpp's quantizer) the type llama.cpp gave it.
#include "model/quantize_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "format/gguf.h"
#include "model/model.h"
#include "support/test_support.h"

namespace stet {
namespace {

TEST(QuantizeModel, MoeExpertStacksAreQuantizedAndTheRouterIsKept) {
  const std::string in = testing::SourceDir() + "/tests/golden/arch/qwen3moe.gguf";
  const std::string out = ::testing::TempDir() + "/stet-quantize-qwen3moe-q8_0.gguf";
  auto rep = QuantizeModel(in, out, DType::kQ8_0, /*progress=*/false);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_GT(rep->quantized, 0);
  auto m = Model::Load(out);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const LayerWeights& L = (*m)->weights().layers[1];
  EXPECT_EQ(L.router.type, DType::kF32);
  EXPECT_EQ(L.gate_exps[0].type, DType::kQ8_0);
  EXPECT_EQ(L.down_exps[7].type, DType::kQ8_0);
  EXPECT_EQ(L.wq.type, DType::kQ8_0);
  const gguf::TensorInfo* t = (*m)->file().FindTensor("blk.1.ffn_up_exps.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dims, (std::vector<int64_t>{32, 32, 8}));
}

TEST(QuantizeModel, RecipeNamesAndErrors) {
  auto r = ParseQuantRecipe("q4_k_m");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->base, DType::kQ4_K);
  EXPECT_EQ(r->more, DType::kQ6_K);
  auto one = ParseQuantRecipe("q5_0");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->base, DType::kQ5_0);
  EXPECT_EQ(one->more, DType::kQ5_0);
  auto bad = ParseQuantRecipe("q4_k_xl");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("q4_k_m"), std::string::npos) << bad.status().message();
}

// The mix's per-layer rule on a 16-layer model (Llama 3.2 1B's depth): layers
// 0-1, 14-15 and every third from 2 get q6_k attn_v/ffn_down; everything else q4_k.
TEST(QuantizeModel, Q4KMLayerRule) {
  const QuantRecipe r = *ParseQuantRecipe("q4_k_m");
  std::vector<int> more;
  for (int i = 0; i < 16; ++i) {
    const TensorRole v{"blk." + std::to_string(i) + ".ffn_down.weight", 8192, 16, false};
    const TensorRole q{"blk." + std::to_string(i) + ".attn_q.weight", 2048, 16, false};
    if (RecipeType(r, v, DType::kF16) == DType::kQ6_K) more.push_back(i);
    EXPECT_EQ(RecipeType(r, q, DType::kF16), DType::kQ4_K) << i;
  }
  EXPECT_EQ(more, (std::vector<int>{0, 1, 4, 7, 10, 13, 14, 15}));
  EXPECT_EQ(RecipeType(r, {"output.weight", 2048, 16, false}, DType::kF16), DType::kQ6_K);
  EXPECT_EQ(RecipeType(r, {"token_embd.weight", 2048, 16, false}, DType::kF16), DType::kQ4_K);
  EXPECT_EQ(RecipeType(r, {"token_embd.weight", 2048, 16, true}, DType::kF16), DType::kQ6_K);
  // Row lengths that do not fit 256 fall back as llama.cpp's quantizer does.
  EXPECT_EQ(RecipeType(r, {"blk.3.attn_q.weight", 576, 16, false}, DType::kF16), DType::kQ5_0);
  EXPECT_EQ(RecipeType(r, {"output.weight", 576, 16, false}, DType::kF16), DType::kQ8_0);
  EXPECT_EQ(RecipeType(r, {"blk.0.attn_q.weight", 40, 16, false}, DType::kF16), DType::kF16);
}

// Golden against llama.cpp's own quantizer: the real Gemma 3 270M Q4_K_M file
// (scripts/setup --model gemma3-270m) holds q4_k, q6_k and their fallbacks
// q5_0/q8_0 (640-wide rows); the recipe must name each tensor's type.
TEST(QuantizeModel, Q4KMMatchesLlamaCppOnGemma3) {
  const std::string path = testing::ModelCacheDir() + "/gemma-3-270m-q4_k_m.gguf";
  STET_REQUIRE_FILE(path);
  auto f = gguf::GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const QuantRecipe r = *ParseQuantRecipe("q4_k_m");
  int checked = 0;
  for (const gguf::TensorInfo& t : (*f)->tensors()) {
    if (t.dims.size() != 2 || t.type == DType::kF32) continue;
    const TensorRole role{t.name, t.dims[0], 18, /*tied=*/true};
    EXPECT_EQ(RecipeType(r, role, DType::kF32), t.type) << t.name;
    ++checked;
  }
  EXPECT_EQ(checked, 127);  // 18 layers x 7 matrices + token_embd
}

}  // namespace
}  // namespace stet

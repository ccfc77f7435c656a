// stet quantize's library half: 2-D matrices and MoE expert stacks take the
// requested type row by row, a MoE router and the norms stay f32, and the
// result loads and runs (tests/golden/arch/qwen3moe.gguf, an F32 qwen3moe).
#include "model/quantize_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
}  // namespace stet

// Loading rejects what it cannot run with a clear message: unsupported
// architectures (listing the supported ones), missing tensors, wrong shapes,
// unsupported tensor types. Files are built with the GGUF writer.
#include <gtest/gtest.h>

#include <cstring>

#include "format/gguf.h"
#include "model/model.h"

namespace stet {
namespace {

std::string F32Bytes(int64_t n, float v = 0.01f) {
  std::string s(n * 4, '\0');
  for (int64_t i = 0; i < n; ++i) std::memcpy(&s[i * 4], &v, 4);
  return s;
}

// A tiny valid llama: dim 8, 2 heads, 1 layer, ff 16, vocab 4.
gguf::GgufWriter TinyLlama(const std::string& arch = "llama") {
  gguf::GgufWriter w;
  w.SetString("general.architecture", arch);
  w.SetU32(arch + ".block_count", 1);
  w.SetU32(arch + ".embedding_length", 8);
  w.SetU32(arch + ".feed_forward_length", 32);
  w.SetU32(arch + ".attention.head_count", 2);
  w.SetU32(arch + ".context_length", 64);
  w.AddTensor("token_embd.weight", DType::kF32, {8, 4}, F32Bytes(32));
  w.AddTensor("output_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
  w.AddTensor("blk.0.attn_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
  w.AddTensor("blk.0.attn_q.weight", DType::kF32, {8, 8}, F32Bytes(64));
  w.AddTensor("blk.0.attn_k.weight", DType::kF32, {8, 8}, F32Bytes(64));
  w.AddTensor("blk.0.attn_v.weight", DType::kF32, {8, 8}, F32Bytes(64));
  w.AddTensor("blk.0.attn_output.weight", DType::kF32, {8, 8}, F32Bytes(64));
  w.AddTensor("blk.0.ffn_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
  w.AddTensor("blk.0.ffn_gate.weight", DType::kF32, {8, 32}, F32Bytes(256));
  w.AddTensor("blk.0.ffn_up.weight", DType::kF32, {8, 32}, F32Bytes(256));
  return w;
}

Result<std::unique_ptr<Model>> Build(const gguf::GgufWriter& w) {
  STET_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::FromBytes(w.Serialize()));
  return Model::FromGguf(std::move(file));
}

TEST(ModelLoad, MissingTensorIsNamed) {
  auto r = Build(TinyLlama());  // no ffn_down
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("blk.0.ffn_down.weight"), std::string::npos)
      << r.status().ToString();
}

TEST(ModelLoad, ValidTinyModelLoadsTied) {
  auto w = TinyLlama();
  w.AddTensor("blk.0.ffn_down.weight", DType::kF32, {32, 8}, F32Bytes(256));
  auto r = Build(w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE((*r)->weights().tied_output);
  EXPECT_EQ((*r)->hparams().n_vocab, 4);
  EXPECT_EQ((*r)->hparams().head_dim, 4);
  EXPECT_EQ((*r)->hparams().rope_base, 10000.0);
}

TEST(ModelLoad, UnsupportedArchitectureListsSupported) {
  auto r = Build(TinyLlama("mamba"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("'mamba'"), std::string::npos);
  EXPECT_NE(r.status().message().find("llama, qwen2, qwen3"), std::string::npos);
}

TEST(ModelLoad, WrongShapeIsReported) {
  auto w = TinyLlama();
  w.AddTensor("blk.0.ffn_down.weight", DType::kF32, {8, 32}, F32Bytes(256));  // transposed
  auto r = Build(w);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("shape [8, 32], expected [32, 8]"), std::string::npos)
      << r.status().ToString();
}

TEST(ModelLoad, UnsupportedTensorTypeIsNamed) {
  auto w = TinyLlama();
  // q8_1: a real GGUF type that stet does not compute with. 8 rows of one 36-byte block.
  w.AddTensor("blk.0.ffn_down.weight", DType::kQ8_1, {32, 8}, std::string(8 * 36, '\0'));
  auto r = Build(w);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("q8_1"), std::string::npos) << r.status().ToString();
}

TEST(ModelLoad, BadHeadCountsAreRejected) {
  auto w = TinyLlama();
  w.SetU32("llama.attention.head_count_kv", 3);  // 2 % 3 != 0
  w.AddTensor("blk.0.ffn_down.weight", DType::kF32, {32, 8}, F32Bytes(256));
  auto r = Build(w);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("head_count_kv"), std::string::npos) << r.status().ToString();
}

TEST(ModelLoad, MissingFileIsIoError) {
  auto r = Model::Load("/nonexistent/model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace stet

// Loading rejects what it cannot run with a clear message: unsupported
// architectures (listing the supported ones), missing tensors, wrong shapes,
// unsupported tensor types. Files are built with the GGUF writer.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

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

// Metadata no model can run with is refused at load, naming the key (a hostile
// GGUF must not reach the engine with a zero context or a NaN-making epsilon).
TEST(ModelLoad, ZeroContextLengthIsRefusedNamingTheKey) {
  for (uint32_t n : {0u, 0x80000000u}) {  // 2^31 reads as a negative int
    auto w = TinyLlama();
    w.SetU32("llama.context_length", n);
    w.AddTensor("blk.0.ffn_down.weight", DType::kF32, {32, 8}, F32Bytes(256));
    auto r = Build(w);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(r.status().message().find("llama.context_length"), std::string::npos)
        << r.status().ToString();
  }
}

TEST(ModelLoad, NonFiniteNormEpsilonIsRefusedNamingTheKey) {
  for (float eps : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN(), 0.0f, -1e-5f}) {
    auto w = TinyLlama();
    w.SetF32("llama.attention.layer_norm_rms_epsilon", eps);
    w.AddTensor("blk.0.ffn_down.weight", DType::kF32, {32, 8}, F32Bytes(256));
    auto r = Build(w);
    ASSERT_FALSE(r.ok()) << eps;
    EXPECT_NE(r.status().message().find("llama.attention.layer_norm_rms_epsilon"),
              std::string::npos)
        << r.status().ToString();
  }
  auto w = TinyLlama();
  w.SetF32("llama.rope.freq_base", std::numeric_limits<float>::infinity());
  w.AddTensor("blk.0.ffn_down.weight", DType::kF32, {32, 8}, F32Bytes(256));
  auto r = Build(w);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("llama.rope.freq_base"), std::string::npos);
}

// TinyLlama as gemma3, 7 layers (0-4 and 6 windowed, 5 global with the
// default pattern), key_length 4, q/k norms and post-norms, window 16.
gguf::GgufWriter TinyGemma3(int n_layer = 7) {
  gguf::GgufWriter w = TinyLlama("gemma3");
  w.SetU32("gemma3.block_count", n_layer);
  w.SetU32("gemma3.attention.key_length", 4);
  w.SetU32("gemma3.attention.sliding_window", 16);
  w.AddTensor("blk.0.ffn_down.weight", DType::kF32, {32, 8}, F32Bytes(256));
  for (int l = 0; l < n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    if (l > 0) {
      for (const char* n : {"attn_norm", "ffn_norm"})
        w.AddTensor(b + n + ".weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
      for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_output"})
        w.AddTensor(b + n + ".weight", DType::kF32, {8, 8}, F32Bytes(64));
      w.AddTensor(b + "ffn_gate.weight", DType::kF32, {8, 32}, F32Bytes(256));
      w.AddTensor(b + "ffn_up.weight", DType::kF32, {8, 32}, F32Bytes(256));
      w.AddTensor(b + "ffn_down.weight", DType::kF32, {32, 8}, F32Bytes(256));
    }
    w.AddTensor(b + "attn_q_norm.weight", DType::kF32, {4}, F32Bytes(4, 1.0f));
    w.AddTensor(b + "attn_k_norm.weight", DType::kF32, {4}, F32Bytes(4, 1.0f));
    w.AddTensor(b + "post_attention_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
    w.AddTensor(b + "post_ffw_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
  }
  return w;
}

TEST(ModelLoad, Gemma3SlidingWindowLayersAndScales) {
  auto r = Build(TinyGemma3());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const HParams& hp = (*r)->hparams();
  EXPECT_STREQ(hp.arch->name, "gemma3");
  EXPECT_EQ(hp.n_swa, 16);
  EXPECT_EQ(hp.swa_layers, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0, 1}));
  EXPECT_EQ(hp.rope_base, 1000000.0);
  EXPECT_EQ(hp.rope_base_swa, 10000.0);
  EXPECT_EQ(hp.attn_scale, 0.5f);  // 1 / sqrt(key_length 4)
  EXPECT_TRUE((*r)->weights().tied_output);
  EXPECT_EQ((*r)->weights().layers[6].ffn_post_norm.size(), 8u);
}

TEST(ModelLoad, Gemma3PatternAndSwaBaseFromMetadata) {
  auto w = TinyGemma3(4);
  w.SetU32("gemma3.attention.sliding_window_pattern", 2);
  w.SetF32("gemma3.rope.freq_base_swa", 500.0f);
  auto r = Build(w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->hparams().swa_layers, (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ((*r)->hparams().rope_base_swa, 500.0);

  auto w2 = TinyGemma3(3);
  w2.SetI32Array("gemma3.attention.sliding_window_pattern", {0, 1, 1});
  auto r2 = Build(w2);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ((*r2)->hparams().swa_layers, (std::vector<uint8_t>{0, 1, 1}));

  auto w3 = TinyGemma3(3);
  w3.SetI32Array("gemma3.attention.sliding_window_pattern", {1, 1});
  auto r3 = Build(w3);
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.status().message().find("one per layer"), std::string::npos)
      << r3.status().ToString();
}

TEST(ModelLoad, Gemma3WithoutWindowAttendsEverywhere) {
  auto w = TinyGemma3(2);
  w.SetU32("gemma3.attention.sliding_window", 0);
  auto r = Build(w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->hparams().n_swa, 0);
  EXPECT_FALSE((*r)->hparams().IsSwa(0));
}

TEST(ModelLoad, Gemma3MissingPostNormIsNamed) {
  gguf::GgufWriter w = TinyLlama("gemma3");
  w.SetU32("gemma3.attention.key_length", 4);
  w.AddTensor("blk.0.ffn_down.weight", DType::kF32, {32, 8}, F32Bytes(256));
  w.AddTensor("blk.0.attn_q_norm.weight", DType::kF32, {4}, F32Bytes(4, 1.0f));
  w.AddTensor("blk.0.attn_k_norm.weight", DType::kF32, {4}, F32Bytes(4, 1.0f));
  auto r = Build(w);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("blk.0.post_attention_norm.weight"), std::string::npos)
      << r.status().ToString();
}

TEST(ModelLoad, Gemma3SoftcappingIsRefusedClearly) {
  auto w = TinyGemma3(1);
  w.SetF32("gemma3.final_logit_softcapping", 30.0f);
  auto r = Build(w);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("softcapping"), std::string::npos);
}

// A tiny qwen3moe: dim 8, 2 heads of 4, 1 layer, 4 experts of width 16, 2 used.
gguf::GgufWriter TinyQwen3Moe(int n_expert = 4, int n_used = 2) {
  gguf::GgufWriter w;
  w.SetString("general.architecture", "qwen3moe");
  w.SetU32("qwen3moe.block_count", 1);
  w.SetU32("qwen3moe.embedding_length", 8);
  w.SetU32("qwen3moe.feed_forward_length", 64);  // a dense width: ignored
  w.SetU32("qwen3moe.expert_feed_forward_length", 16);
  w.SetU32("qwen3moe.expert_count", n_expert);
  w.SetU32("qwen3moe.expert_used_count", n_used);
  w.SetU32("qwen3moe.attention.head_count", 2);
  w.AddTensor("token_embd.weight", DType::kF32, {8, 4}, F32Bytes(32));
  w.AddTensor("output_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
  w.AddTensor("blk.0.attn_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
  for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_output"})
    w.AddTensor(std::string("blk.0.") + n + ".weight", DType::kF32, {8, 8}, F32Bytes(64));
  w.AddTensor("blk.0.attn_q_norm.weight", DType::kF32, {4}, F32Bytes(4, 1.0f));
  w.AddTensor("blk.0.attn_k_norm.weight", DType::kF32, {4}, F32Bytes(4, 1.0f));
  w.AddTensor("blk.0.ffn_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
  return w;
}

void AddExperts(gguf::GgufWriter& w, int n_expert, int64_t down_rows = 8) {
  w.AddTensor("blk.0.ffn_gate_inp.weight", DType::kF32, {8, n_expert}, F32Bytes(8 * n_expert));
  w.AddTensor("blk.0.ffn_gate_exps.weight", DType::kF32, {8, 16, n_expert},
              F32Bytes(128 * n_expert));
  w.AddTensor("blk.0.ffn_up_exps.weight", DType::kF32, {8, 16, n_expert}, F32Bytes(128 * n_expert));
  w.AddTensor("blk.0.ffn_down_exps.weight", DType::kF32, {16, down_rows, n_expert},
              F32Bytes(16 * down_rows * n_expert));
}

TEST(ModelLoad, Qwen3MoeExpertsAreViewsIntoTheStackedTensors) {
  auto w = TinyQwen3Moe();
  AddExperts(w, 4);
  auto r = Build(w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const HParams& hp = (*r)->hparams();
  EXPECT_EQ(hp.n_expert, 4);
  EXPECT_EQ(hp.n_expert_used, 2);
  EXPECT_EQ(hp.n_ff, 16);  // the experts' width, not feed_forward_length
  const LayerWeights& L = (*r)->weights().layers[0];
  ASSERT_EQ(L.gate_exps.size(), 4u);
  ASSERT_EQ(L.down_exps.size(), 4u);
  EXPECT_EQ(L.router.rows, 4);
  EXPECT_EQ(L.down_exps[3].rows, 8);
  EXPECT_EQ(L.down_exps[3].cols, 16);
  const auto* base = static_cast<const uint8_t*>(L.up_exps[0].data);
  EXPECT_EQ(static_cast<const uint8_t*>(L.up_exps[2].data), base + 2 * 16 * 8 * 4);
  // Per token: attention 4 * 256 B, router 128 B, output 128 B, and 2 of 4
  // experts' 3 * 512 B.
  EXPECT_EQ((*r)->weight_bytes(), 4 * 256 + 128 + 128 + 2 * 3 * 512);
}

TEST(ModelLoad, Qwen3MoeBadExpertCountsAreRejected) {
  for (auto [n_expert, n_used, what] :
       {std::tuple{4, 5, "expert_used_count"}, std::tuple{4, 0, "expert_used_count"},
        std::tuple{0, 0, "expert_count"}, std::tuple{5000, 2, "expert_count"}}) {
    auto w = TinyQwen3Moe(n_expert, n_used);
    auto r = Build(w);
    ASSERT_FALSE(r.ok()) << n_expert << " " << n_used;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().ToString();
  }
  gguf::GgufWriter w;
  w.SetString("general.architecture", "qwen3moe");
  w.SetU32("qwen3moe.block_count", 1);
  w.SetU32("qwen3moe.embedding_length", 8);
  auto r = Build(w);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("qwen3moe.expert_count"), std::string::npos)
      << r.status().ToString();
}

TEST(ModelLoad, Qwen3MoeWrongExpertShapeIsNamed) {
  auto w = TinyQwen3Moe();
  AddExperts(w, 4, /*down_rows=*/7);
  auto r = Build(w);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("blk.0.ffn_down_exps.weight"), std::string::npos)
      << r.status().ToString();
}

// Phi-3: attn_qkv [q + 2 kv rows] and ffn_up [2 n_ff rows] become row-range
// views of the mapped tensors (gate rows first), no copies.
TEST(ModelLoad, Phi3FusedTensorsAreRowRanges) {
  gguf::GgufWriter w;
  w.SetString("general.architecture", "phi3");
  w.SetU32("phi3.block_count", 1);
  w.SetU32("phi3.embedding_length", 8);
  w.SetU32("phi3.feed_forward_length", 16);
  w.SetU32("phi3.attention.head_count", 2);
  w.SetU32("phi3.attention.head_count_kv", 1);
  w.SetU32("phi3.attention.sliding_window", 4);  // not applied (as llama.cpp)
  w.AddTensor("token_embd.weight", DType::kF32, {8, 4}, F32Bytes(32));
  w.AddTensor("output_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
  w.AddTensor("blk.0.attn_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
  w.AddTensor("blk.0.attn_qkv.weight", DType::kF32, {8, 16}, F32Bytes(128));
  w.AddTensor("blk.0.attn_output.weight", DType::kF32, {8, 8}, F32Bytes(64));
  w.AddTensor("blk.0.ffn_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
  w.AddTensor("blk.0.ffn_up.weight", DType::kF32, {8, 32}, F32Bytes(256));
  w.AddTensor("blk.0.ffn_down.weight", DType::kF32, {16, 8}, F32Bytes(128));
  auto r = Build(w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->hparams().n_swa, 0);
  const LayerWeights& L = (*r)->weights().layers[0];
  const auto* qkv = static_cast<const uint8_t*>(L.wq.data);
  EXPECT_EQ(L.wq.rows, 8);
  EXPECT_EQ(L.wk.rows, 4);
  EXPECT_EQ(L.wv.rows, 4);
  EXPECT_EQ(static_cast<const uint8_t*>(L.wk.data), qkv + 8 * 32);
  EXPECT_EQ(static_cast<const uint8_t*>(L.wv.data), qkv + 12 * 32);
  EXPECT_EQ(L.w_gate.rows, 16);
  EXPECT_EQ(static_cast<const uint8_t*>(L.w_up.data),
            static_cast<const uint8_t*>(L.w_gate.data) + 16 * 32);
  // LongRoPE (Phi-3 128k) is refused by name.
  w.AddTensor("rope_factors_long.weight", DType::kF32, {2}, F32Bytes(2, 1.0f));
  auto lr = Build(w);
  ASSERT_FALSE(lr.ok());
  EXPECT_EQ(lr.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(lr.status().message().find("LongRoPE"), std::string::npos);
}

// Gemma 2: soft-capping from the metadata (50 / 30 when absent), a window on
// even layers (4096 when absent), one RoPE base for all layers.
TEST(ModelLoad, Gemma2SoftcapsAndWindows) {
  gguf::GgufWriter g;
  g.SetString("general.architecture", "gemma2");
  g.SetU32("gemma2.block_count", 3);
  g.SetU32("gemma2.embedding_length", 8);
  g.SetU32("gemma2.feed_forward_length", 32);
  g.SetU32("gemma2.attention.head_count", 2);
  g.SetF32("gemma2.rope.freq_base", 20000.0f);
  g.AddTensor("token_embd.weight", DType::kF32, {8, 4}, F32Bytes(32));
  g.AddTensor("output_norm.weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
  for (int l = 0; l < 3; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    for (const char* n : {"attn_norm", "ffn_norm", "post_attention_norm", "post_ffw_norm"})
      g.AddTensor(b + n + ".weight", DType::kF32, {8}, F32Bytes(8, 1.0f));
    for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_output"})
      g.AddTensor(b + n + ".weight", DType::kF32, {8, 8}, F32Bytes(64));
    g.AddTensor(b + "ffn_gate.weight", DType::kF32, {8, 32}, F32Bytes(256));
    g.AddTensor(b + "ffn_up.weight", DType::kF32, {8, 32}, F32Bytes(256));
    g.AddTensor(b + "ffn_down.weight", DType::kF32, {32, 8}, F32Bytes(256));
  }
  auto r = Build(g);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const HParams& hp = (*r)->hparams();
  EXPECT_EQ(hp.attn_softcap, 50.0f);
  EXPECT_EQ(hp.final_softcap, 30.0f);
  EXPECT_EQ(hp.n_swa, 4096);
  EXPECT_TRUE(hp.IsSwa(0));
  EXPECT_FALSE(hp.IsSwa(1));
  EXPECT_TRUE(hp.IsSwa(2));
  EXPECT_EQ(hp.rope_base_swa, 20000.0);
  g.SetF32("gemma2.attn_logit_softcapping", 2.5f);
  g.SetF32("gemma2.final_logit_softcapping", 0.0f);
  g.SetU32("gemma2.attention.sliding_window", 16);
  auto r2 = Build(g);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ((*r2)->hparams().attn_softcap, 2.5f);
  EXPECT_EQ((*r2)->hparams().final_softcap, 0.0f);
  EXPECT_EQ((*r2)->hparams().n_swa, 16);
  g.SetF32("gemma2.attn_logit_softcapping", -1.0f);
  EXPECT_FALSE(Build(g).ok());
}

TEST(ModelLoad, MissingFileIsIoError) {
  auto r = Model::Load("/nonexistent/model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace stet

// Random-weight models (model/random_model.h): every shape loads as a model and its
// synthetic vocabulary as a tokenizer; hyper-parameters are the real models'; the bytes
// are a function of (shape, type, seed, layers) only — not of the thread count; K-quant
// fallback to q8_0 happens exactly for K % 256 != 0; a forward step gives finite logits.
#include "model/random_model.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/paged_kv.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace stet {
namespace {

struct Built {
  std::string bytes;
  RandomModelSummary summary;
};

Built Build(const std::string& shape, DType type, uint64_t seed, int layers, int threads = 2) {
  RandomModelOptions o;
  o.shape = shape;
  o.type = type;
  o.seed = seed;
  o.n_layers = layers;
  o.n_threads = threads;
  Built b;
  auto w = BuildRandomModel(o, &b.summary);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  if (w.ok()) b.bytes = w->Serialize();
  return b;
}

std::unique_ptr<Model> Load(const std::string& bytes) {
  auto file = gguf::GgufFile::FromBytes(bytes);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto model = Model::FromGguf(std::move(*file));
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(*model) : nullptr;
}

// Runs a short prompt through the model and checks the last logits are finite and vary.
void ExpectFiniteLogits(const Model& m) {
  ThreadPool pool(2);
  Forward fwd(m, &pool, DefaultIsa(), 8);
  PagedKvCache kv = PagedKvCache::Contiguous(m.hparams(), 1, 8, DType::kF16);
  std::vector<BatchToken> batch;
  for (int i = 0; i < 4; ++i) batch.push_back({(i * 7919) % m.hparams().n_vocab, i, 0, i == 3});
  std::vector<float> logits;
  ASSERT_TRUE(fwd.Run(batch, kv, &logits).ok());
  ASSERT_EQ(logits.size(), static_cast<size_t>(m.hparams().n_vocab));
  float lo = logits[0], hi = logits[0];
  for (float v : logits) {
    ASSERT_TRUE(std::isfinite(v));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GT(hi - lo, 0.01f);
  EXPECT_LT(hi - lo, 100.0f);
}

struct Expected {
  const char* shape;
  const char* arch;
  int n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab;
  double rope_base;
  bool qkv_bias, rope_freqs;
};

// From each model's Hugging Face config.json.
const Expected kExpected[] = {
    {"smollm2-135m", "llama", 30, 576, 9, 3, 1536, 49152, 100000.0, false, false},
    {"smollm2-360m", "llama", 32, 960, 15, 5, 2560, 49152, 100000.0, false, false},
    {"qwen2.5-0.5b", "qwen2", 24, 896, 14, 2, 4864, 151936, 1000000.0, true, false},
    {"llama-3.2-1b", "llama", 16, 2048, 32, 8, 8192, 128256, 500000.0, false, true},
    {"tiny", "llama", 2, 256, 4, 2, 512, 1024, 10000.0, false, false},
};

class RandomModelShapes : public ::testing::TestWithParam<Expected> {};

TEST_P(RandomModelShapes, LoadsWithRealHyperParametersAndTokenizer) {
  const Expected& e = GetParam();
  const RandomModelShape* shape = FindRandomModelShape(e.shape);
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->n_layer, e.n_layer);
  Built b = Build(e.shape, DType::kQ4_1, 7, 1);
  auto m = Load(b.bytes);
  ASSERT_NE(m, nullptr);
  const HParams& hp = m->hparams();
  EXPECT_STREQ(hp.arch->name, e.arch);
  EXPECT_EQ(hp.n_layer, 1);
  EXPECT_EQ(hp.n_embd, e.n_embd);
  EXPECT_EQ(hp.n_head, e.n_head);
  EXPECT_EQ(hp.n_head_kv, e.n_head_kv);
  EXPECT_EQ(hp.n_ff, e.n_ff);
  EXPECT_EQ(hp.n_vocab, e.n_vocab);
  EXPECT_EQ(hp.rope_base, e.rope_base);
  EXPECT_TRUE(m->weights().tied_output);
  EXPECT_EQ(m->weights().layers[0].bq.empty(), !e.qkv_bias);
  EXPECT_EQ(m->weights().rope_freq_factors.empty(), !e.rope_freqs);
  if (e.rope_freqs) {  // llama3 scaling: high frequencies untouched, low ones / 32
    EXPECT_EQ(m->weights().rope_freq_factors.front(), 1.0f);
    EXPECT_EQ(m->weights().rope_freq_factors.back(), 32.0f);
  }
  // The output rule: q6_k where n_embd % 256 == 0, else q8_0.
  EXPECT_EQ(m->weights().token_embd.type, e.n_embd % 256 == 0 ? DType::kQ6_K : DType::kQ8_0);
  EXPECT_EQ(m->weights().layers[0].wq.type, DType::kQ4_1);

  auto vocab = VocabFromGguf(m->file());
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ(vocab->model, "gpt2");
  auto tok = Tokenizer::Create(std::move(*vocab));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->n_vocab(), e.n_vocab);
  // Byte-level BPE: any text round-trips, and merges shorten it.
  const std::string text = "Hello world, the quick brown fox! 12345 \xc3\xa9t\xc3\xa9 \n\t<x>";
  const auto ids = (*tok)->Encode(text, false, false);
  EXPECT_LT(ids.size(), text.size());
  EXPECT_EQ((*tok)->Decode(ids), text);
  EXPECT_GE((*tok)->bos(), 0);
  EXPECT_GE((*tok)->eos(), 0);
  EXPECT_TRUE((*tok)->IsEog((*tok)->eos()));

  ExpectFiniteLogits(*m);
}

INSTANTIATE_TEST_SUITE_P(All, RandomModelShapes, ::testing::ValuesIn(kExpected),
                         [](const auto& info) {
                           std::string n = info.param.shape;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

// The bench shapes too big to build in a unit test (bench/run.py writes them):
// their hyper-parameters as published (config.json), the head width where it is not
// n_embd / n_head, Llama 3.1's rope factor.
TEST(RandomModel, BigShapesMatchTheirConfigs) {
  struct Big {
    const char* shape;
    int n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab, n_expert, n_expert_used, head_dim;
    double rope_factor;
  };
  for (const Big& e : {Big{"llama-3.2-3b", 28, 3072, 24, 8, 8192, 128256, 0, 0, 0, 32.0},
                       Big{"llama-3.1-8b", 32, 4096, 32, 8, 14336, 128256, 0, 0, 0, 8.0},
                       Big{"qwen3-30b-a3b", 48, 2048, 32, 4, 768, 151936, 128, 8, 128, 32.0},
                       Big{"olmoe-1b-7b", 16, 2048, 16, 16, 1024, 50304, 64, 8, 0, 32.0}}) {
    SCOPED_TRACE(e.shape);
    const RandomModelShape* s = FindRandomModelShape(e.shape);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->n_layer, e.n_layer);
    EXPECT_EQ(s->n_embd, e.n_embd);
    EXPECT_EQ(s->n_head, e.n_head);
    EXPECT_EQ(s->n_head_kv, e.n_head_kv);
    EXPECT_EQ(s->n_ff, e.n_ff);
    EXPECT_EQ(s->n_vocab, e.n_vocab);
    EXPECT_EQ(s->n_expert, e.n_expert);
    EXPECT_EQ(s->n_expert_used, e.n_expert_used);
    EXPECT_EQ(s->head_dim, e.head_dim);
    EXPECT_EQ(s->rope_factor, e.rope_factor);
    EXPECT_NE(RandomModelShapeList().find(e.shape), std::string::npos);
  }
}

// --type q4_k_m: llama.cpp's mix written directly — q6_k output, attn_v and ffn_down
// in the layers its rule picks (of 2: layer 1), q4_k elsewhere; file type 15.
TEST(RandomModel, MixTypesFollowTheQuantizerRule) {
  RandomModelOptions o;
  o.shape = "tiny";
  o.seed = 3;
  ASSERT_TRUE(SetRandomModelType("q4_k_m", &o).ok());
  EXPECT_EQ(o.type, DType::kQ4_K);
  ASSERT_TRUE(o.more.has_value());
  EXPECT_EQ(*o.more, DType::kQ6_K);
  RandomModelSummary sum;
  auto w = BuildRandomModel(o, &sum);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto m = Load(w->Serialize());
  ASSERT_NE(m, nullptr);
  const auto& L = m->weights().layers;
  EXPECT_EQ(L[0].wv.type, DType::kQ4_K);
  EXPECT_EQ(L[0].w_down.type, DType::kQ4_K);
  EXPECT_EQ(L[1].wv.type, DType::kQ6_K);
  EXPECT_EQ(L[1].w_down.type, DType::kQ6_K);
  EXPECT_EQ(L[1].wq.type, DType::kQ4_K);
  EXPECT_EQ(m->weights().token_embd.type, DType::kQ6_K);
  EXPECT_EQ(*m->file().Find("general.file_type")->AsUInt(), 15u);
  EXPECT_NE(sum.name.find("q4_k_m"), std::string::npos) << sum.name;
  ExpectFiniteLogits(*m);
  RandomModelOptions bad;
  EXPECT_FALSE(SetRandomModelType("q4_k_xl", &bad).ok());
  EXPECT_TRUE(SetRandomModelType("q8_0", &bad).ok());
  EXPECT_FALSE(bad.more.has_value());
}

TEST(RandomModel, SameSeedSameBytesAnyThreadCount) {
  const Built a = Build("tiny", DType::kQ4_K, 42, 0, 1);
  const Built b = Build("tiny", DType::kQ4_K, 42, 0, 3);
  ASSERT_FALSE(a.bytes.empty());
  EXPECT_TRUE(a.bytes == b.bytes);
  const Built c = Build("tiny", DType::kQ4_K, 43, 0, 1);
  ASSERT_EQ(a.bytes.size(), c.bytes.size());
  EXPECT_FALSE(a.bytes == c.bytes);
}

TEST(RandomModel, LayerZeroDoesNotDependOnLayerCount) {
  auto one = Load(Build("tiny", DType::kQ8_0, 5, 1).bytes);
  auto two = Load(Build("tiny", DType::kQ8_0, 5, 2).bytes);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  const auto& w1 = one->weights().layers[0].w_down;
  const auto& w2 = two->weights().layers[0].w_down;
  ASSERT_EQ(w1.rows * w1.row_bytes, w2.rows * w2.row_bytes);
  EXPECT_EQ(std::memcmp(w1.data, w2.data, w1.rows * w1.row_bytes), 0);
}

TEST(RandomModel, EveryTypeLoadsAndRuns) {
  for (DType t : ComputableDTypes()) {  // the type table's rows: a new type is built here too
    SCOPED_TRACE(DTypeName(t));
    Built b = Build("tiny", t, 3, 1);
    EXPECT_EQ(b.summary.n_fallback, 0);  // tiny's K are 256 and 512
    auto m = Load(b.bytes);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->weights().layers[0].w_gate.type, t);
    ExpectFiniteLogits(*m);
  }
}

TEST(RandomModel, MoeTinyIsAQwen3MoeWithQuantizedExperts) {
  Built b = Build("moe-tiny", DType::kQ4_K, 3, 1);
  EXPECT_EQ(b.summary.n_fallback, 0);
  auto m = Load(b.bytes);
  ASSERT_NE(m, nullptr);
  EXPECT_STREQ(m->hparams().arch->name, "qwen3moe");
  EXPECT_EQ(m->hparams().n_expert, 8);
  EXPECT_EQ(m->hparams().n_expert_used, 2);
  const LayerWeights& L = m->weights().layers[0];
  ASSERT_EQ(L.down_exps.size(), 8u);
  EXPECT_EQ(L.down_exps[7].type, DType::kQ4_K);
  EXPECT_EQ(L.router.type, DType::kF32);
  ExpectFiniteLogits(*m);
}

TEST(RandomModel, SuperBlockTypesFallBackToQ8_0WhereKIsNotAMultipleOf256) {
  for (DType t : {DType::kQ2_K, DType::kQ3_K, DType::kIQ4_XS}) {
    Built b = Build("smollm2-135m", t, 1, 2);
    EXPECT_EQ(b.summary.n_fallback, 2 * 6) << DTypeName(t);
  }
  // The 32-block types hold K = 576 as they are.
  for (DType t : {DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL}) {
    Built b = Build("smollm2-135m", t, 1, 2);
    EXPECT_EQ(b.summary.n_fallback, 0) << DTypeName(t);
  }
}

TEST(RandomModel, KQuantFallsBackToQ8_0WhereKIsNotAMultipleOf256) {
  // smollm2-135m: K = 576 for q/k/v/o/gate/up (fallback), K = 1536 for down (q4_k).
  Built b = Build("smollm2-135m", DType::kQ4_K, 1, 2);
  EXPECT_EQ(b.summary.n_fallback, 2 * 6);
  EXPECT_NE(b.summary.name.find("12/14 matrices q8_0"), std::string::npos) << b.summary.name;
  auto m = Load(b.bytes);
  ASSERT_NE(m, nullptr);
  const LayerWeights& l = m->weights().layers[1];
  EXPECT_EQ(l.wq.type, DType::kQ8_0);
  EXPECT_EQ(l.w_up.type, DType::kQ8_0);
  EXPECT_EQ(l.w_down.type, DType::kQ4_K);
  auto name = m->file().GetString("general.name");
  ASSERT_TRUE(name.ok());
  EXPECT_NE(name->find("K%256!=0"), std::string::npos) << *name;
}

TEST(RandomModel, BadOptionsAreErrors) {
  RandomModelOptions o;
  o.shape = "gpt-5";
  auto r = BuildRandomModel(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("smollm2-135m"), std::string::npos);
  o.shape = "tiny";
  o.n_layers = 3;
  EXPECT_FALSE(BuildRandomModel(o).ok());
  EXPECT_FALSE(ParseRandomModelType("q8_1").ok());
  EXPECT_FALSE(ParseRandomModelType("iq2_xxs").ok());
  EXPECT_EQ(*ParseRandomModelType("q6_k"), DType::kQ6_K);
  EXPECT_EQ(*ParseRandomModelType("q5_0"), DType::kQ5_0);
  EXPECT_EQ(*ParseRandomModelType("iq4_xs"), DType::kIQ4_XS);
}

}  // namespace
}  // namespace stet

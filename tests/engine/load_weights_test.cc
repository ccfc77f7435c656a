// Engine::LoadWeights: float weights replaced in place between steps. The
// output follows the new weights bit for bit as if they had been loaded from
// a file; putting the file's values back gives back the file's bytes and
// fingerprint; requests submitted before the call finish with the old
// weights; the prefix cache never serves what the old weights computed; a
// refusal (unknown name, wrong size, a quantized tensor, a value its type
// cannot hold) changes nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "engine/engine.h"
#include "model/random_model.h"
#include "numerics/half.h"
#include "support/test_support.h"

namespace stet {
namespace {

std::string Stories() { return testing::SharedDir() + "/models/stories260K/stories260K.gguf"; }

std::unique_ptr<Engine> Open(const std::string& path, EngineOptions o = {}) {
  auto e = Engine::Open(path, o);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

// The step logits hashes and ids of a greedy run: every bit of every step.
std::vector<std::pair<int32_t, uint64_t>> Steps(Engine& e, std::vector<int32_t> prompt,
                                                int n = 12) {
  RequestParams p;
  p.prompt = std::move(prompt);
  p.max_tokens = n;
  p.sampling.temperature = 0;
  p.logits_hash = true;
  auto c = e.Generate(p);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  std::vector<std::pair<int32_t, uint64_t>> out;
  if (c.ok()) {
    for (const TokenOut& t : c->tokens[0]) out.emplace_back(t.id, t.logits_hash);
  }
  return out;
}

// A float tensor's values as the file holds them.
std::vector<float> FileValues(const Engine& e, const std::string& name) {
  const gguf::TensorInfo* t = e.model().file().FindTensor(name);
  EXPECT_TRUE(t && t->type == DType::kF32) << name;
  if (!t || t->type != DType::kF32) return {};
  std::vector<float> v(static_cast<size_t>(t->n_elements));
  std::memcpy(v.data(), t->data, v.size() * sizeof(float));
  return v;
}

TensorValues Values(const std::string& name, const std::vector<float>& v) {
  return {name, DType::kF32, v.data(), static_cast<int64_t>(v.size())};
}

TEST(LoadWeights, NewWeightsThenTheFileAgain) {
  STET_REQUIRE_FILE(Stories());
  auto e = Open(Stories());
  ASSERT_TRUE(e);
  const std::string fp0 = e->fingerprint();
  const auto base = Steps(*e, {1, 403, 407});
  // The same values: nothing changes, the fingerprint included.
  auto q = FileValues(*e, "blk.0.attn_q.weight");
  auto norm = FileValues(*e, "output_norm.weight");
  ASSERT_TRUE(
      e->LoadWeights({Values("blk.0.attn_q.weight", q), Values("output_norm.weight", norm)}).ok());
  EXPECT_EQ(e->fingerprint(), fp0);
  EXPECT_EQ(Steps(*e, {1, 403, 407}), base);
  // Other values: other logits, another fingerprint naming them.
  std::vector<float> q2 = q, norm2 = norm;
  for (float& x : q2) x *= 1.5f;
  for (float& x : norm2) x *= 0.75f;
  ASSERT_TRUE(
      e->LoadWeights({Values("blk.0.attn_q.weight", q2), Values("output_norm.weight", norm2)})
          .ok());
  const std::string fp1 = e->fingerprint();
  EXPECT_NE(fp1, fp0);
  EXPECT_NE(e->fingerprint_descriptor().find(";weights="), std::string::npos);
  const auto changed = Steps(*e, {1, 403, 407});
  EXPECT_NE(changed, base);
  EXPECT_EQ(Steps(*e, {1, 403, 407}), changed);  // deterministic under the new weights
  // Back to the file's values: the file's bits and fingerprint.
  ASSERT_TRUE(
      e->LoadWeights({Values("blk.0.attn_q.weight", q), Values("output_norm.weight", norm)}).ok());
  EXPECT_EQ(e->fingerprint(), fp0);
  EXPECT_EQ(Steps(*e, {1, 403, 407}), base);
  // The same new weights in another engine give the same bits and fingerprint.
  auto other = Open(Stories());
  ASSERT_TRUE(
      other->LoadWeights({Values("output_norm.weight", norm2), Values("blk.0.attn_q.weight", q2)})
          .ok());
  EXPECT_EQ(other->fingerprint(), fp1);
  EXPECT_EQ(Steps(*other, {1, 403, 407}), changed);
}

TEST(LoadWeights, EarlierRequestsKeepTheirWeightsAndTheCacheForgetsOldOnes) {
  STET_REQUIRE_FILE(Stories());
  auto e = Open(Stories());
  ASSERT_TRUE(e);
  const std::vector<int32_t> prompt = {1,   403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315,
                                       421, 395, 317, 426, 338, 401, 396, 267, 337, 410, 408};
  const auto base = Steps(*e, prompt, 40);  // also leaves the prompt's blocks in the prefix cache
  auto w = FileValues(*e, "blk.1.ffn_down.weight");
  std::vector<float> w2 = w;
  for (float& x : w2) x = -x;
  // Submitted before the call, so it runs with the file's weights, however
  // the engine thread interleaves the two.
  RequestParams p;
  p.prompt = prompt;
  p.max_tokens = 40;
  p.sampling.temperature = 0;
  p.logits_hash = true;
  std::vector<std::pair<int32_t, uint64_t>> early;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  auto sub = e->Submit(p, [&](const RequestEvent& ev) {
    std::lock_guard<std::mutex> lock(mu);
    if (ev.kind == RequestEvent::Kind::kToken)
      early.emplace_back(ev.token.id, ev.token.logits_hash);
    if (ev.kind == RequestEvent::Kind::kFinished) {
      done = true;
      cv.notify_all();
    }
  });
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE(e->LoadWeights({Values("blk.1.ffn_down.weight", w2)}).ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }
  EXPECT_EQ(early, base);
  // After the call: the new weights, never a cached block of the old ones —
  // the same as an engine without a prefix cache.
  const auto after = Steps(*e, prompt, 40);
  EXPECT_NE(after, base);
  EngineOptions no_cache;
  no_cache.prefix_cache = false;
  auto fresh = Open(Stories(), no_cache);
  ASSERT_TRUE(fresh->LoadWeights({Values("blk.1.ffn_down.weight", w2)}).ok());
  EXPECT_EQ(Steps(*fresh, prompt, 40), after);
}

TEST(LoadWeights, RefusalsChangeNothing) {
  STET_REQUIRE_FILE(Stories());
  auto e = Open(Stories());
  ASSERT_TRUE(e);
  const std::string fp0 = e->fingerprint();
  const auto base = Steps(*e, {1, 403});
  auto norm = FileValues(*e, "output_norm.weight");
  std::vector<float> norm2 = norm;
  for (float& x : norm2) x += 1;
  const std::vector<float> short_values(3, 0.0f);
  struct Case {
    std::vector<TensorValues> values;
    StatusCode code;
    const char* says;
  };
  const Case cases[] = {
      {{Values("no.such.weight", norm)}, StatusCode::kNotFound, "no tensor 'no.such.weight'"},
      {{Values("output_norm.weight", norm2), Values("blk.0.attn_q.weight", short_values)},
       StatusCode::kInvalidArgument,
       "has 4096 values"},
      {{Values("output_norm.weight", norm2), Values("output_norm.weight", norm2)},
       StatusCode::kInvalidArgument,
       "given twice"},
      {{{"output_norm.weight", DType::kF16, norm2.data(), 64}},
       StatusCode::kInvalidArgument,
       "give f32 values"},
  };
  for (const Case& c : cases) {
    Status st = e->LoadWeights(c.values);
    EXPECT_EQ(st.code(), c.code) << st.ToString();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
    EXPECT_EQ(e->fingerprint(), fp0);
  }
  EXPECT_EQ(Steps(*e, {1, 403}), base);  // the valid half of a refused call was not applied
}

// A tied embedding (the output matrix is the embedding) in f16: both uses
// follow; f32 values an f16 tensor holds exactly are taken, others refused.
TEST(LoadWeights, TiedHalfPrecisionEmbedding) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "stet_load_weights_tiny_f16.gguf").string();
  RandomModelOptions o;
  o.shape = "tiny";
  o.type = DType::kF16;
  o.seed = 7;
  ASSERT_TRUE(WriteRandomModel(o, path).ok());
  auto e = Open(path);
  ASSERT_TRUE(e);
  ASSERT_TRUE(e->model().weights().tied_output);
  const gguf::TensorInfo* t = e->model().file().FindTensor("token_embd.weight");
  ASSERT_TRUE(t && t->type == DType::kF16);
  const auto base = Steps(*e, {1, 2, 3});
  std::vector<float> v(static_cast<size_t>(t->n_elements));
  const auto* h = reinterpret_cast<const uint16_t*>(t->data);
  for (size_t i = 0; i < v.size(); ++i) v[i] = F16ToF32(h[i]) * 2.0f;  // exact in f16
  ASSERT_TRUE(e->LoadWeights({Values("token_embd.weight", v)}).ok());
  const auto doubled = Steps(*e, {1, 2, 3});
  EXPECT_NE(doubled, base);
  std::vector<uint16_t> back(v.size());
  for (size_t i = 0; i < v.size(); ++i) back[i] = F32ToF16(v[i] * 0.5f);
  ASSERT_TRUE(e->LoadWeights({{"token_embd.weight", DType::kF16, back.data(),
                               static_cast<int64_t>(back.size())}})
                  .ok());
  EXPECT_EQ(Steps(*e, {1, 2, 3}), base);
  v[5] = 1.0f + 1.0f / 4096;  // 13 bits of mantissa: not an f16
  Status st = e->LoadWeights({Values("token_embd.weight", v)});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("value 5"), std::string::npos) << st.message();
  std::filesystem::remove(path);
}

TEST(LoadWeights, QuantizedWeightsAreRefused) {
  const std::string path = testing::ModelCacheDir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  STET_REQUIRE_FILE(path);
  auto e = Open(path);
  ASSERT_TRUE(e);
  const gguf::TensorInfo* t = e->model().file().FindTensor("blk.0.attn_q.weight");
  ASSERT_TRUE(t);
  std::vector<float> v(static_cast<size_t>(t->n_elements), 0.0f);
  Status st = e->LoadWeights({Values("blk.0.attn_q.weight", v)});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("does not re-quantize"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace stet

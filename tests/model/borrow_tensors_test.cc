// Model::BorrowTensors (issue 29, stet.torch): a float model reads caller
// memory in place — its logits equal ReplaceTensors' with the same values bit
// for bit, a change made in that memory is what the next run computes with,
// the 1-D tensors follow after another borrow, the digest says "borrowed",
// and bad calls are refused all or none.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/model.h"
#include "model/paged_kv.h"
#include "model/random_model.h"

namespace stet {
namespace {

std::unique_ptr<Model> TinyF32() {
  RandomModelOptions o;
  o.shape = "tiny";
  o.type = DType::kF32;
  o.seed = 29;
  o.n_layers = 1;
  RandomModelSummary summary;
  auto w = BuildRandomModel(o, &summary);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  auto file = gguf::GgufFile::FromBytes(w->Serialize());
  EXPECT_TRUE(file.ok());
  auto model = Model::FromGguf(std::move(*file));
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return std::move(*model);
}

std::vector<float> Logits(const Model& m) {
  ThreadPool pool(2);
  Forward fwd(m, &pool, DefaultIsa(), 16);
  PagedKvCache kv = PagedKvCache::Contiguous(m.hparams(), 1, 16, DType::kF16);
  std::vector<BatchToken> batch;
  for (int i = 0; i < 5; ++i) batch.push_back({(i * 131 + 7) % m.hparams().n_vocab, i, 0, true});
  std::vector<float> logits;
  EXPECT_TRUE(fwd.Run(batch, kv, &logits).ok());
  return logits;
}

// The file's values of `name`, scaled by `s`.
std::vector<float> Values(const Model& m, const std::string& name, float s) {
  const gguf::TensorInfo* t = m.file().FindTensor(name);
  std::vector<float> v(t->n_elements);
  std::memcpy(v.data(), t->data, t->size_bytes);
  for (float& x : v) x *= s;
  return v;
}

TEST(BorrowTensors, ReadsCallerMemoryInPlace) {
  auto borrowed = TinyF32(), replaced = TinyF32();
  const std::vector<float> base = Logits(*borrowed);
  std::vector<float> q = Values(*borrowed, "blk.0.attn_q.weight", 1.25f);
  std::vector<float> norm = Values(*borrowed, "blk.0.ffn_norm.weight", 0.5f);
  std::vector<TensorValues> vals = {
      {"blk.0.attn_q.weight", DType::kF32, q.data(), static_cast<int64_t>(q.size())},
      {"blk.0.ffn_norm.weight", DType::kF32, norm.data(), static_cast<int64_t>(norm.size())}};
  ASSERT_TRUE(borrowed->BorrowTensors(vals).ok());
  ASSERT_TRUE(replaced->ReplaceTensors(vals).ok());
  EXPECT_EQ(borrowed->WeightsDigest(), "borrowed");
  const std::vector<float> changed = Logits(*borrowed);
  EXPECT_NE(changed, base);
  EXPECT_EQ(0, std::memcmp(changed.data(), Logits(*replaced).data(), changed.size() * 4));
  // A matrix changed in place: the next run reads it, no call needed.
  for (float& x : q) x *= 2.0f;
  const std::vector<float> doubled = Logits(*borrowed);
  EXPECT_NE(doubled, changed);
  for (float& x : q) x *= 0.5f;
  EXPECT_EQ(0, std::memcmp(Logits(*borrowed).data(), changed.data(), changed.size() * 4));
  // A norm (read through a float copy) follows at the next borrow.
  for (float& x : norm) x *= 2.0f;
  ASSERT_TRUE(borrowed->BorrowTensors(vals).ok());
  EXPECT_NE(Logits(*borrowed), changed);
  // Replacing a borrowed tensor takes it back into the model's own memory.
  std::vector<float> file_q = Values(*borrowed, "blk.0.attn_q.weight", 1.0f);
  std::vector<float> file_norm = Values(*borrowed, "blk.0.ffn_norm.weight", 1.0f);
  ASSERT_TRUE(borrowed
                  ->ReplaceTensors({{"blk.0.attn_q.weight", DType::kF32, file_q.data(),
                                     static_cast<int64_t>(file_q.size())},
                                    {"blk.0.ffn_norm.weight", DType::kF32, file_norm.data(),
                                     static_cast<int64_t>(file_norm.size())}})
                  .ok());
  EXPECT_EQ(borrowed->WeightsDigest(), "");
  std::fill(q.begin(), q.end(), 0.0f);
  EXPECT_EQ(0, std::memcmp(Logits(*borrowed).data(), base.data(), base.size() * 4));
}

TEST(BorrowTensors, RefusesBadCallsAllOrNone) {
  auto m = TinyF32();
  const std::vector<float> base = Logits(*m);
  std::vector<float> q = Values(*m, "blk.0.attn_q.weight", 3.0f);
  const int64_t n = static_cast<int64_t>(q.size());
  // The second entry is bad: the first must not be borrowed either.
  EXPECT_EQ(m->BorrowTensors({{"blk.0.attn_q.weight", DType::kF32, q.data(), n},
                              {"blk.0.nope.weight", DType::kF32, q.data(), n}})
                .code(),
            StatusCode::kNotFound);
  EXPECT_EQ(m->BorrowTensors({{"blk.0.attn_q.weight", DType::kF32, q.data(), n},
                              {"blk.0.attn_k.weight", DType::kF16, q.data(), n}})
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(m->BorrowTensors({{"blk.0.attn_q.weight", DType::kF32, q.data(), n - 1}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(m->BorrowTensors({{"blk.0.attn_q.weight", DType::kF32, q.data(), n},
                              {"blk.0.attn_q.weight", DType::kF32, q.data(), n}})
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(m->WeightsDigest(), "");
  EXPECT_EQ(0, std::memcmp(Logits(*m).data(), base.data(), base.size() * 4));
}

}  // namespace
}  // namespace stet

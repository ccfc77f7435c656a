// Tensor parallelism at the forward pass: a model split across n ranks
// (Model::LoadShard, Forward with the group's comm; the ranks are threads of a
// LocalGroup) gives rank 0 logits bitwise equal to one process, for every n
// from 1 to the number of query heads (uneven splits and query-head splits with
// replicated KV heads included), on every architecture stet runs and the real
// models, under chunked prefill with another sequence sharing the batches.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "dist/local_group.h"
#include "model/forward.h"
#include "model/paged_kv.h"
#include "support/test_support.h"

namespace stet {
namespace {

// The batches: sequence 0 prefills its prompt in chunks of `chunk`, sequence 1
// (another prompt) joins in with single tokens; every row asks for logits.
std::vector<std::vector<BatchToken>> Script(int n_vocab, int n_prompt, int chunk) {
  std::vector<std::vector<BatchToken>> steps;
  int pos1 = 0;
  for (int start = 0; start < n_prompt; start += chunk) {
    std::vector<BatchToken> b;
    b.push_back({(pos1 * 13 + 5) % n_vocab, pos1, 1, true});
    ++pos1;
    for (int i = start; i < std::min(n_prompt, start + chunk); ++i) {
      b.push_back({i == 0 ? 1 : (i * 37 + 11) % n_vocab, i, 0, true});
    }
    steps.push_back(std::move(b));
  }
  return steps;
}

// Rank 0's logits of every step, with the model split n ways (n = 1: one process).
std::vector<std::vector<float>> RunSplit(const std::string& path, int n, Isa isa,
                                         const std::vector<std::vector<BatchToken>>& steps) {
  std::vector<std::vector<float>> out(steps.size());
  dist::LocalGroup group(n);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto model = Model::LoadShard(path, r, n);
      if (!model.ok()) {
        errors[r] = model.status().ToString();
        return;
      }
      ThreadPool pool(r % 2 + 1);  // thread counts differ between ranks: no bit may move
      Forward fwd(**model, &pool, isa, 256, NumericsMode::kInvariant, &group.comm(r));
      PagedKvCache kv(**model, 2 * 256 / 16, 16, 2, DType::kF16);
      for (int s = 0; s < 2; ++s) {
        std::vector<int32_t> table(256 / 16);
        for (int b = 0; b < 256 / 16; ++b) table[b] = 2 * b + s;  // interleaved blocks
        kv.SetBlockTable(s, table);
      }
      for (size_t i = 0; i < steps.size(); ++i) {
        std::vector<float> logits;
        Status st = fwd.Run(steps[i], kv, &logits);
        if (!st.ok()) {
          errors[r] = st.ToString();
          return;
        }
        if (r == 0) out[i] = std::move(logits);
        if (r != 0 && !logits.empty()) errors[r] = "a rank other than 0 received logits";
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r << " of " << n;
  return out;
}

void ExpectSameAtEveryDegree(const std::string& path, int n_prompt, int chunk, int max_n = 0) {
  STET_REQUIRE_FILE(path);
  auto whole = Model::Load(path);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  const HParams& hp = (*whole)->hparams();
  const auto steps = Script(hp.n_vocab, n_prompt, chunk);
  const auto want = RunSplit(path, 1, BestIsa(), steps);
  const int top = max_n > 0 ? max_n : MaxRanks(hp);
  for (int n = 2; n <= top; ++n) {
    const auto got = RunSplit(path, n, BestIsa(), steps);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].size(), want[i].size()) << "step " << i << ", " << n << " ranks";
      ASSERT_EQ(0, std::memcmp(got[i].data(), want[i].data(), want[i].size() * sizeof(float)))
          << path << ": logits of step " << i << " differ with " << n << " ranks";
    }
  }
  std::printf("[ tp       ] %s: %d query / %d KV heads, n = 1..%d bitwise equal\n",
              std::filesystem::path(path).filename().c_str(), hp.n_head, hp.n_head_kv, top);
}

TEST(TpForward, EveryArchitectureAndWeightType) {
  const std::string dir = testing::SourceDir() + "/tests/golden/arch";
  int n_models = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".gguf") continue;
    ExpectSameAtEveryDegree(e.path().string(), 20, 7);  // gemma2/3: past their windows
    ++n_models;
  }
  EXPECT_GE(n_models, 18);
}

TEST(TpForward, Stories260K) {  // 8 query / 4 KV heads: 5..8 ranks split query heads
  ExpectSameAtEveryDegree(testing::SharedDir() + "/models/stories260K/stories260K.gguf", 24, 5);
}

TEST(TpForward, SmolLM2Q4_1) {  // 9 query / 3 KV heads: uneven splits
  ExpectSameAtEveryDegree(testing::ModelCacheDir() + "/SmolLM2-135M-Instruct.Q4_1.gguf", 10, 4);
}

TEST(TpForward, Gemma3_270M) {  // 4 query heads, 1 KV head: the KV projection replicated
  ExpectSameAtEveryDegree(testing::ModelCacheDir() + "/gemma-3-270m-q4_k_m.gguf", 10, 4);
}

TEST(TpForward, TooManyRanksIsAClearError) {
  const std::string path = testing::SharedDir() + "/models/stories260K/stories260K.gguf";
  STET_REQUIRE_FILE(path);
  auto m = Model::LoadShard(path, 0, 9);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("at most 8 ranks"), std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace stet

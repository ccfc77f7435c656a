// stories260K (../shared/models/stories260K): greedy decoding from BOS must
// reproduce llama2.c's run.c output (golden_greedy_256steps.llama2c_run.txt)
// and an independent float32 reference's 120 ids and first-step top-5 logits
// (golden_greedy_from_bos.pyref.json). Through the serving engine, so the
// goldens pin the path `stet run` and `stet serve` both take.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "support/test_support.h"

namespace stet {
namespace {

std::string StoriesDir() { return testing::SharedDir() + "/models/stories260K"; }

struct Greedy {
  std::vector<int32_t> ids;
  std::vector<float> first_logits;
};

Greedy RunGreedy(const std::string& path, int n, Isa isa, int threads) {
  EngineOptions eo;
  eo.isa = isa;
  eo.n_threads = threads;
  eo.n_ctx = 512;
  eo.kv_type = DType::kF32;  // the float32 reference keeps its KV in float32
  Greedy g;
  auto engine = Engine::Open(path, eo);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  if (!engine.ok()) return g;
  RequestParams rp;
  rp.prompt = {1};
  rp.max_tokens = n;
  rp.sampling.temperature = 0;
  rp.ignore_eos = true;
  rp.return_logits = true;
  auto done = (*engine)->Generate(rp);
  EXPECT_TRUE(done.ok()) << done.status().ToString();
  if (!done.ok()) return g;
  for (const TokenOut& t : done->tokens[0]) g.ids.push_back(t.id);
  if (!done->tokens[0].empty()) g.first_logits = done->tokens[0][0].logits;
  return g;
}

TEST(Stories260K, GreedyMatchesLlama2cAndPythonReference) {
  const std::string path = StoriesDir() + "/stories260K.gguf";
  STET_REQUIRE_FILE(path);
  auto loaded = LoadModelAndTokenizer(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const Tokenizer& tok = *loaded->tokenizer;

  const auto ref = nlohmann::json::parse(
      testing::ReadFileOrDie(StoriesDir() + "/golden_greedy_from_bos.pyref.json"));
  std::string golden_text =
      testing::ReadFileOrDie(StoriesDir() + "/golden_greedy_256steps.llama2c_run.txt");
  ASSERT_FALSE(golden_text.empty());
  if (golden_text.back() == '\n') golden_text.pop_back();  // run.c ends with a newline

  for (Isa isa : {Isa::kScalar, BestIsa()}) {
    const Greedy g = RunGreedy(path, 256, isa, 2);
    ASSERT_EQ(g.ids.size(), 256u);
    // The 120 ids of the float32 reference.
    const auto& want = ref["generated_ids"];
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(g.ids[i], want[i].get<int32_t>()) << "step " << i << " isa " << IsaName(isa);
    }
    // First-step top-5 logits within 1e-4.
    for (const auto& pair : ref["first_step_top5"]) {
      const int id = pair[0].get<int>();
      EXPECT_NEAR(g.first_logits[id], pair[1].get<float>(), 1e-4) << "token " << id;
    }
    // The text run.c prints: decode drops SentencePiece's first space after BOS.
    EXPECT_EQ(tok.Decode(g.ids), golden_text);
  }
}

}  // namespace
}  // namespace stet

// stories260K (../shared/models/stories260K): greedy decoding from BOS must
// reproduce llama2.c's run.c output (golden_greedy_256steps.llama2c_run.txt)
// and an independent float32 reference's 120 ids and first-step top-5 logits
// (golden_greedy_from_bos.pyref.json).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/session.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace stet {
namespace {

std::string StoriesDir() { return testing::SharedDir() + "/models/stories260K"; }

struct Greedy {
  std::vector<int32_t> ids;
  std::vector<float> first_logits;
};

Greedy RunGreedy(const Model& model, int n, Isa isa, int threads) {
  SessionOptions so;
  so.isa = isa;
  so.n_threads = threads;
  so.n_ctx = 512;
  so.kv_type = DType::kF32;  // the float32 reference keeps its KV in float32
  Session s(model, so);
  SamplingParams sp;
  sp.temperature = 0;
  Greedy g;
  EXPECT_TRUE(s.Generate({1}, n, sp, [](int32_t) { return false; },
                         [&](int32_t id, float) {
                           if (g.ids.empty()) g.first_logits = s.last_logits();
                           g.ids.push_back(id);
                           return true;
                         },
                         nullptr)
                  .ok());
  return g;
}

TEST(Stories260K, GreedyMatchesLlama2cAndPythonReference) {
  const std::string path = StoriesDir() + "/stories260K.gguf";
  STET_REQUIRE_FILE(path);
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto vocab = VocabFromGguf((*model)->file());
  ASSERT_TRUE(vocab.ok());
  auto tok = Tokenizer::Create(std::move(*vocab));
  ASSERT_TRUE(tok.ok());

  const auto ref = nlohmann::json::parse(
      testing::ReadFileOrDie(StoriesDir() + "/golden_greedy_from_bos.pyref.json"));
  std::string golden_text = testing::ReadFileOrDie(StoriesDir() + "/golden_greedy_256steps.llama2c_run.txt");
  ASSERT_FALSE(golden_text.empty());
  if (golden_text.back() == '\n') golden_text.pop_back();  // run.c ends with a newline

  for (Isa isa : {Isa::kScalar, BestIsa()}) {
    const Greedy g = RunGreedy(**model, 256, isa, 2);
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
    EXPECT_EQ((*tok)->Decode(g.ids), golden_text);
  }
}

}  // namespace
}  // namespace stet

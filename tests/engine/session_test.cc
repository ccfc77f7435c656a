// Session: errors for empty and over-long prompts; seeded sampling is
// reproducible across thread counts and prefill chunk sizes.
#include "engine/session.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace stet {
namespace {

std::string Stories() { return testing::SharedDir() + "/models/stories260K/stories260K.gguf"; }

std::vector<int32_t> Generate(const Model& m, const SessionOptions& so, const SamplingParams& sp,
                              const std::vector<int32_t>& prompt, int n) {
  Session s(m, so);
  std::vector<int32_t> out;
  EXPECT_TRUE(s.Generate(prompt, n, sp, [](int32_t) { return false; },
                         [&](int32_t id, float) {
                           out.push_back(id);
                           return true;
                         },
                         nullptr)
                  .ok());
  return out;
}

TEST(Session, RejectsEmptyAndOverlongPrompts) {
  STET_REQUIRE_FILE(Stories());
  auto m = Model::Load(Stories());
  ASSERT_TRUE(m.ok());
  SessionOptions so;
  so.n_ctx = 16;
  Session s(**m, so);
  SamplingParams sp;
  auto noop = [](int32_t, float) { return true; };
  auto never = [](int32_t) { return false; };
  Status st = s.Generate({}, 4, sp, never, noop, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  std::vector<int32_t> long_prompt(16, 5);
  st = s.Generate(long_prompt, 4, sp, never, noop, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("16 tokens"), std::string::npos) << st.ToString();
}

TEST(Session, SeededSamplingSurvivesThreadsChunksAndIsa) {
  STET_REQUIRE_FILE(Stories());
  auto m = Model::Load(Stories());
  ASSERT_TRUE(m.ok());
  SamplingParams sp;
  sp.temperature = 1.0f;
  sp.seed = 42;
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  SessionOptions base;
  base.n_ctx = 256;
  const auto want = Generate(**m, base, sp, prompt, 64);
  for (int threads : {2, 3}) {
    for (int chunk : {1, 2}) {
      for (Isa isa : {Isa::kScalar, BestIsa()}) {
        SessionOptions so = base;
        so.n_threads = threads;
        so.chunk_size = chunk;
        so.isa = isa;
        EXPECT_EQ(Generate(**m, so, sp, prompt, 64), want)
            << "threads " << threads << " chunk " << chunk << " isa " << IsaName(isa);
      }
    }
  }
  sp.seed = 43;
  EXPECT_NE(Generate(**m, base, sp, prompt, 64), want);
}

TEST(Session, StopsAtContextEnd) {
  STET_REQUIRE_FILE(Stories());
  auto m = Model::Load(Stories());
  ASSERT_TRUE(m.ok());
  SessionOptions so;
  so.n_ctx = 10;
  SamplingParams sp;
  sp.temperature = 0;
  // 3 prompt tokens + at most 7 forward positions + 1 final sample.
  const auto out = Generate(**m, so, sp, {1, 403, 407}, 100);
  EXPECT_EQ(out.size(), 8u);
}

}  // namespace
}  // namespace stet

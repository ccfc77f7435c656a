// Constrained decoding through the engine (stories260K): every output spells
// a match of its grammar, ends only where the grammar may end, reports the raw
// model's logprobs, and gives the same bytes with speculation on or off.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/engine.h"
#include "engine/grammar_matcher.h"
#include "support/test_support.h"

namespace stet {
namespace {

std::string Stories() { return testing::SharedDir() + "/models/stories260K/stories260K.gguf"; }

std::shared_ptr<const Grammar> Parse(const std::string& text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return *g;
}

const char* kJsonish = R"(
root ::= "{\"name\": \"" [A-Za-z ]{1,12} "\", \"age\": " [1-9] [0-9]? ", \"tags\": [" tags "]}"
tags ::= ("\"" [a-z]{1,6} "\"" (", \"" [a-z]{1,6} "\""){0,2})?
)";

RequestParams Constrained(const std::shared_ptr<const Grammar>& g, float temperature) {
  RequestParams p;
  p.prompt = {1, 403, 407, 263};  // BOS, "Once upon a"
  p.max_tokens = 80;
  p.n = 3;
  p.sampling.temperature = temperature;
  p.sampling.seed = 17;
  p.grammar = g;
  p.return_logits = true;
  return p;
}

TEST(Constrained, OutputsMatchTheGrammarAndLogprobsAreRaw) {
  STET_REQUIRE_FILE(Stories());
  auto e = Engine::Open(Stories(), {});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  auto g = Parse(kJsonish);
  for (float temp : {0.0f, 1.0f}) {
    auto c = (*e)->Generate(Constrained(g, temp));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (int ch = 0; ch < 3; ++ch) {
      GrammarMatcher m(g);
      ASSERT_TRUE(m.Init().ok());
      auto r = m.Accept(c->text[ch]);
      ASSERT_TRUE(r.ok() && *r) << "choice " << ch << ": " << c->text[ch];
      if (c->finish[ch] == FinishReason::kStop) {
        EXPECT_TRUE(m.CanEnd()) << c->text[ch];
      }
      EXPECT_NE(c->finish[ch], FinishReason::kError);
      for (const TokenOut& t : c->tokens[ch]) {
        const float raw = LogSoftmaxAt(t.logits.data(), static_cast<int>(t.logits.size()), t.id);
        EXPECT_EQ(std::memcmp(&raw, &t.logprob, sizeof raw), 0);
      }
    }
    // The grammar completes well within max_tokens: the choices end on the end token.
    EXPECT_EQ(c->finish[0], FinishReason::kStop) << c->text[0];
  }
}

TEST(Constrained, SameBytesWithSpeculationOnAndOff) {
  STET_REQUIRE_FILE(Stories());
  EngineOptions spec;
  spec.spec.mode = SpecMode::kLookup;
  spec.spec.k = 6;
  spec.spec.ngram_min = 1;
  auto on = Engine::Open(Stories(), spec);
  auto off = Engine::Open(Stories(), {});
  ASSERT_TRUE(on.ok() && off.ok());
  // A repetitive grammar, so prompt lookup drafts often and is sometimes right.
  auto g = Parse(R"(root ::= ("ab" | "a" | "b" | " ")+ "." )");
  for (float temp : {0.0f, 0.9f}) {
    RequestParams p = Constrained(g, temp);
    p.return_logits = false;
    p.logits_hash = true;
    p.max_tokens = 48;
    auto a = (*on)->Generate(p), b = (*off)->Generate(p);
    ASSERT_TRUE(a.ok() && b.ok());
    for (int ch = 0; ch < 3; ++ch) {
      EXPECT_EQ(a->text[ch], b->text[ch]);
      ASSERT_EQ(a->tokens[ch].size(), b->tokens[ch].size());
      for (size_t i = 0; i < a->tokens[ch].size(); ++i) {
        EXPECT_EQ(a->tokens[ch][i].id, b->tokens[ch][i].id);
        EXPECT_EQ(a->tokens[ch][i].logits_hash, b->tokens[ch][i].logits_hash);
      }
    }
  }
  EXPECT_GT((*on)->stats().spec_draft_tokens, 0);
}

TEST(Constrained, AGrammarTooAmbiguousToStartIsRefused) {
  STET_REQUIRE_FILE(Stories());
  auto e = Engine::Open(Stories(), {});
  ASSERT_TRUE(e.ok());
  GrammarLimits lim;
  lim.max_stacks = 4;
  auto g = ParseGbnf("root ::= \"a\" | \"b\" | \"c\" | \"d\" | \"e\"", lim);
  ASSERT_TRUE(g.ok());
  RequestParams p = Constrained(*g, 0);
  std::string field;
  Status st = ValidateRequest(p, (*e)->limits(), &field);
  EXPECT_EQ(field, "grammar");
  EXPECT_NE(st.message().find("parse stacks"), std::string::npos);
  EXPECT_FALSE((*e)->Submit(p, nullptr).ok());
}

}  // namespace
}  // namespace stet

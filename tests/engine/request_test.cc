// The one validation of a request (ValidateRequest): every field's range is
// refused with the field named (what the server maps to OpenAI's `param`),
// the prompt that leaves no room is ResourceExhausted, and the defaults pass.
#include "engine/request.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/grammar_matcher.h"

namespace stet {
namespace {

const RequestLimits kLimits{100, 32, {}};

RequestParams Valid() {
  RequestParams p;
  p.prompt = {1, 2, 3};
  return p;
}

struct Case {
  const char* field;
  std::function<void(RequestParams&)> spoil;
};

TEST(ValidateRequest, DefaultsAndEdgesPass) {
  EXPECT_TRUE(ValidateRequest(Valid(), kLimits).ok());
  RequestParams p = Valid();
  p.prompt = std::vector<int32_t>(31, 99);  // 31 positions + one generated = 32
  p.max_tokens = 0;
  p.n = kMaxChoices;
  p.sampling.temperature = 0;
  p.sampling.top_p = 1;
  p.sampling.min_p = 1;
  p.sampling.logit_bias = {{0, -100.0f}, {99, 100.0f}};
  p.sampling.repetition_penalty = 10;
  p.sampling.presence_penalty = -2;
  p.sampling.frequency_penalty = 2;
  p.stop_ids = {0, 99};
  p.top_logprobs = kMaxTopLogprobs;
  std::string field = "untouched";
  EXPECT_TRUE(ValidateRequest(p, kLimits, &field).ok());
  EXPECT_EQ(field, "untouched");
}

TEST(ValidateRequest, EveryRefusalNamesItsField) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::nanf("");
  const std::vector<Case> cases = {
      {"prompt", [](RequestParams& p) { p.prompt.clear(); }},
      {"prompt", [](RequestParams& p) { p.prompt.push_back(100); }},
      {"prompt", [](RequestParams& p) { p.prompt.push_back(-1); }},
      {"max_tokens", [](RequestParams& p) { p.max_tokens = -1; }},
      {"min_tokens", [](RequestParams& p) { p.min_tokens = -1; }},
      {"n", [](RequestParams& p) { p.n = 0; }},
      {"n", [](RequestParams& p) { p.n = kMaxChoices + 1; }},
      {"temperature", [](RequestParams& p) { p.sampling.temperature = -0.5f; }},
      {"temperature", [&](RequestParams& p) { p.sampling.temperature = inf; }},
      {"temperature", [&](RequestParams& p) { p.sampling.temperature = nan; }},
      {"top_k", [](RequestParams& p) { p.sampling.top_k = -1; }},
      {"top_p", [](RequestParams& p) { p.sampling.top_p = 0; }},
      {"top_p", [](RequestParams& p) { p.sampling.top_p = 1.5f; }},
      {"min_p", [](RequestParams& p) { p.sampling.min_p = -0.1f; }},
      {"min_p", [&](RequestParams& p) { p.sampling.min_p = nan; }},
      {"logit_bias", [](RequestParams& p) { p.sampling.logit_bias[100] = 1; }},
      {"logit_bias", [](RequestParams& p) { p.sampling.logit_bias[5] = 101; }},
      {"logit_bias", [&](RequestParams& p) { p.sampling.logit_bias[5] = -inf; }},
      {"repetition_penalty", [](RequestParams& p) { p.sampling.repetition_penalty = 0; }},
      {"repetition_penalty", [](RequestParams& p) { p.sampling.repetition_penalty = 10.5f; }},
      {"presence_penalty", [](RequestParams& p) { p.sampling.presence_penalty = 2.5f; }},
      {"frequency_penalty", [](RequestParams& p) { p.sampling.frequency_penalty = -3; }},
      {"stop_ids", [](RequestParams& p) { p.stop_ids = {100}; }},
      {"top_logprobs", [](RequestParams& p) { p.top_logprobs = kMaxTopLogprobs + 1; }},
      {"top_logprobs", [](RequestParams& p) { p.top_logprobs = -1; }},
  };
  for (const Case& c : cases) {
    RequestParams p = Valid();
    c.spoil(p);
    std::string field;
    const Status st = ValidateRequest(p, kLimits, &field);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.field << ": " << st.ToString();
    EXPECT_EQ(field, c.field) << st.message();
    EXPECT_EQ(st.message().rfind(c.field, 0), 0u)
        << "the message starts with the field: " << st.message();
  }
}

TEST(ValidateRequest, APromptWithNoRoomIsResourceExhausted) {
  RequestParams p = Valid();
  p.prompt = std::vector<int32_t>(32, 1);
  std::string field;
  const Status st = ValidateRequest(p, kLimits, &field);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(field, "prompt");
  EXPECT_NE(st.message().find("maximum context length is 32 tokens"), std::string::npos)
      << st.message();
}

TEST(NewSeed, DrawsFullWidthSeeds) {
  // 64 bits from std::random_device: 8 draws are distinct and use the high half.
  std::vector<uint64_t> seeds;
  bool high = false;
  for (int i = 0; i < 8; ++i) {
    seeds.push_back(NewSeed());
    high |= seeds.back() >> 32 != 0;
  }
  std::sort(seeds.begin(), seeds.end());
  EXPECT_EQ(std::unique(seeds.begin(), seeds.end()), seeds.end());
  EXPECT_TRUE(high);
}

// A grammar is probed at validation when a vocabulary trie is given: one whose
// first mask goes over the work budget is refused before it queues (issue 25).
TEST(ValidateRequest, ProbesAGrammarsFirstMaskOnTheVocabulary) {
  std::vector<std::string> pieces;
  for (char a = 'a'; a <= 'z'; ++a) {
    for (char b = 'a'; b <= 'z'; ++b) pieces.push_back(std::string{a, b});
  }
  const TokenTrie trie(pieces);
  GrammarLimits lim;
  lim.max_mask_steps = 8000;  // [a-z]+ over 676 letter pairs: a few thousand; the chain: 50x
  std::string chain = "root ::= r0+\n";
  for (int i = 0; i < 50; ++i)
    chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  chain += "r50 ::= [a-z]\n";
  RequestParams p = Valid();
  auto deep = ParseGbnf(chain, lim);
  ASSERT_TRUE(deep.ok()) << deep.status().ToString();
  p.grammar = *deep;
  RequestLimits limits{static_cast<int>(pieces.size()), 32, [&trie] { return &trie; }};
  std::string field;
  Status st = ValidateRequest(p, limits, &field);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(field, "grammar");
  EXPECT_NE(st.message().find("at the first token"), std::string::npos) << st.message();
  // Without a trie (or with a cheap grammar) the same validation passes.
  limits.vocab_trie = nullptr;
  EXPECT_TRUE(ValidateRequest(p, limits, &field).ok());
  auto cheap = ParseGbnf("root ::= [a-z]+", lim);
  ASSERT_TRUE(cheap.ok());
  p.grammar = *cheap;
  limits.vocab_trie = [&trie] { return &trie; };
  EXPECT_TRUE(ValidateRequest(p, limits, &field).ok());
}

// The probe's verdict is kept with the grammar, per vocabulary: the prompts of
// one request, and requests sharing a compiled grammar, pay for it once.
TEST(ValidateRequest, ProbeVerdictIsKeptPerGrammarAndVocabulary) {
  std::vector<std::string> pairs;
  for (char a = 'a'; a <= 'z'; ++a) {
    for (char b = 'a'; b <= 'z'; ++b) pairs.push_back(std::string{a, b});
  }
  const TokenTrie wide(pairs);
  const TokenTrie narrow(std::vector<std::string>{"a", "b"});
  GrammarLimits lim;
  lim.max_mask_steps = 2000;
  std::string chain = "root ::= r0+\n";
  for (int i = 0; i < 50; ++i)
    chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  chain += "r50 ::= [a-z]\n";
  auto g = ParseGbnf(chain, lim);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const std::shared_ptr<const Grammar> grammar = *g;
  EXPECT_EQ(grammar->probe->trie, nullptr);
  const Status first = ProbeFirstMask(grammar, wide);
  EXPECT_FALSE(first.ok());
  EXPECT_EQ(grammar->probe->trie, &wide);
  const Status again = ProbeFirstMask(grammar, wide);
  EXPECT_EQ(again.ToString(), first.ToString());
  // Another vocabulary is probed anew: two tokens cost far less.
  EXPECT_TRUE(ProbeFirstMask(grammar, narrow).ok());
  EXPECT_EQ(grammar->probe->trie, &narrow);
}

}  // namespace
}  // namespace stet

// The token mask: a token is allowed exactly when the matcher accepts all of
// its bytes (checked against a brute-force oracle over a small vocabulary),
// the trie skips nothing it should visit, and the mask depends only on the
// state reached, not on the path or on anything else.
#include "engine/grammar_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stet {
namespace {

std::shared_ptr<const Grammar> Parse(const std::string& text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return *g;
}

// Oracle: a copy of the matcher accepts the token's bytes.
std::vector<uint8_t> BruteMask(const GrammarMatcher& m, const std::vector<std::string>& vocab) {
  std::vector<uint8_t> out(vocab.size(), 0);
  for (size_t i = 0; i < vocab.size(); ++i) {
    if (vocab[i].empty() || vocab[i].size() > TokenTrie::kMaxTokenBytes) continue;
    GrammarMatcher copy = m;
    auto r = copy.Accept(vocab[i]);
    out[i] = r.ok() && *r;
  }
  return out;
}

const std::vector<std::string>& Vocab() {
  static const std::vector<std::string> v = {
      "",    "{",   "}",    "{\"", "\"",   "\":",  ",",    " ",        "  ", "\n", "a",
      "ab",  "abc", "b",    "c",   "1",    "12",   "123",  "-",        ".",  "e",  "true",
      "tr",  "ue",  "null", "é",   "\xC3", "\xA9", "\xE2", "\x82\xAC", "€",  "[",  "]",
      "\"a", "a\"", "\"}",  "x",   "\\",   "\\\"", "ab\"", "aaaa",     ":",  "{}", "[]"};
  return v;
}

TEST(TokenTrie, EveryNonEmptyTokenHasOneEntry) {
  TokenTrie t(Vocab());
  std::vector<int> seen(Vocab().size(), 0);
  for (const auto& e : t.entries()) {
    for (int32_t k = e.tok_begin; k < e.tok_end; ++k) ++seen[t.token_ids()[k]];
  }
  for (size_t i = 0; i < Vocab().size(); ++i) EXPECT_EQ(seen[i], Vocab()[i].empty() ? 0 : 1) << i;
  EXPECT_EQ(t.max_depth(), 4);  // "true", "null", "aaaa"
}

TEST(GrammarMask, EqualsTheBruteForceOracleAlongAGeneration) {
  auto g = Parse(R"(
root   ::= "{" ws "\"" [a-z]* "\"" ws ":" ws value ws "}"
value  ::= "true" | "null" | "-"? [0-9]+ ("." [0-9]+)? | "\"" ([^"\\] | "\\" ["\\])* "\"" | "[" "]"
ws     ::= [ \n]{0,2}
)");
  TokenTrie trie(Vocab());
  GrammarMatcher m(g);
  ASSERT_TRUE(m.Init().ok());
  // Walk a path through the grammar and compare the mask at every step.
  const std::vector<std::string> path = {"{\"",  "ab",       "c",    "\":", " ", "\"", "é",
                                         "\xE2", "\x82\xAC", "\\\"", "a\"", " ", "}"};
  std::vector<uint8_t> mask;
  for (const std::string& tok : path) {
    ASSERT_TRUE(m.FillMask(trie, &mask).ok());
    EXPECT_EQ(mask, BruteMask(m, Vocab())) << "before " << tok;
    auto r = m.Accept(tok);
    ASSERT_TRUE(r.ok() && *r) << tok;
  }
  EXPECT_TRUE(m.CanEnd());
  EXPECT_TRUE(m.Exhausted());
  ASSERT_TRUE(m.FillMask(trie, &mask).ok());
  for (uint8_t a : mask) EXPECT_EQ(a, 0);
}

TEST(GrammarMask, RejectedTokenLeavesTheStateUnchanged) {
  auto g = Parse("root ::= \"ab\" \"c\"*");
  GrammarMatcher m(g);
  ASSERT_TRUE(m.Init().ok());
  EXPECT_FALSE(*m.Accept("abx"));
  EXPECT_FALSE(m.CanEnd());
  EXPECT_TRUE(*m.Accept("ab"));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.Exhausted());
  EXPECT_TRUE(*m.Accept("ccc"));
  EXPECT_TRUE(m.CanEnd());
}

TEST(GrammarMask, DependsOnlyOnTheStateReached) {
  // Two different token paths to the same bytes give the same mask.
  auto g = Parse("root ::= \"[\" (\"1\" | \"12\" | \"a\")* \"]\"");
  TokenTrie trie(Vocab());
  GrammarMatcher a(g), b(g);
  ASSERT_TRUE(a.Init().ok());
  ASSERT_TRUE(b.Init().ok());
  ASSERT_TRUE(*a.Accept("["));
  ASSERT_TRUE(*a.Accept("12"));
  ASSERT_TRUE(*b.Accept("["));
  ASSERT_TRUE(*b.Accept("1"));
  ASSERT_TRUE(*b.Accept("2"));
  std::vector<uint8_t> ma, mb, ma2;
  ASSERT_TRUE(a.FillMask(trie, &ma).ok());
  ASSERT_TRUE(b.FillMask(trie, &mb).ok());
  ASSERT_TRUE(a.FillMask(trie, &ma2).ok());  // asking twice changes nothing
  EXPECT_EQ(ma, mb);
  EXPECT_EQ(ma, ma2);
  EXPECT_EQ(ma, BruteMask(a, Vocab()));
}

TEST(GrammarMask, LargeVocabularyOfAllByteStrings) {
  // All 1- and 2-byte strings: 65,792 tokens; the mask for "inside a JSON
  // string" must equal the oracle on every one (incl. partial UTF-8).
  std::vector<std::string> vocab;
  for (int a = 0; a < 256; ++a) vocab.push_back(std::string(1, static_cast<char>(a)));
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      vocab.push_back(std::string{static_cast<char>(a), static_cast<char>(b)});
    }
  }
  auto g = Parse(R"(root ::= "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt])* "\"")");
  TokenTrie trie(vocab);
  GrammarMatcher m(g);
  ASSERT_TRUE(m.Init().ok());
  ASSERT_TRUE(*m.Accept("\"x"));
  std::vector<uint8_t> mask;
  ASSERT_TRUE(m.FillMask(trie, &mask).ok());
  EXPECT_EQ(mask, BruteMask(m, vocab));
  int allowed = 0;
  for (uint8_t x : mask) allowed += x;
  EXPECT_GT(allowed, 10000);
}

TEST(GrammarMask, TheWalkIsBoundedByItsStepLimit) {
  GrammarLimits lim;
  lim.max_mask_steps = 20;
  auto g = ParseGbnf("root ::= [a-z\"{}:,1-3 ]*", lim);
  ASSERT_TRUE(g.ok());
  TokenTrie trie(Vocab());
  GrammarMatcher m(*g);
  ASSERT_TRUE(m.Init().ok());
  std::vector<uint8_t> mask;
  Status st = m.FillMask(trie, &mask);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("parse-stack steps and rule expansions"), std::string::npos);
}

// Issue 25: a chain grammar (each rule one reference to the next) made every
// advanced stack re-expand the whole chain; the mask counted only the stacks
// (4.2-4.8 s per token on SmolLM2, other tenants stalled). Expansions are
// metered now: the same walk goes over the default budget and stops there.
std::string ChainGrammar(int links) {
  std::string g = "root ::= r0+\n";
  for (int i = 0; i < links; ++i)
    g += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  g += "r" + std::to_string(links) + " ::= [a-z]\n";
  return g;
}

std::vector<std::string> Letters(int max_len) {
  std::vector<std::string> out, level = {""};
  for (int len = 1; len <= max_len; ++len) {
    std::vector<std::string> next;
    for (const std::string& s : level) {
      for (char c = 'a'; c <= 'z'; ++c) next.push_back(s + c);
    }
    out.insert(out.end(), next.begin(), next.end());
    level = std::move(next);
  }
  return out;
}

TEST(GrammarMask, RuleExpansionsCountAgainstTheBudget) {
  const TokenTrie trie(Letters(3));  // 18,278 tokens, every one allowed by the chain
  auto shallow = ParseGbnf(ChainGrammar(10));
  ASSERT_TRUE(shallow.ok()) << shallow.status().ToString();
  GrammarMatcher a(*shallow);
  ASSERT_TRUE(a.Init().ok());
  std::vector<uint8_t> mask;
  ASSERT_TRUE(a.FillMask(trie, &mask).ok());
  int allowed = 0;
  for (uint8_t x : mask) allowed += x;
  EXPECT_EQ(allowed, 18278);
  // 4000 links: ~18k stacks advanced, each re-expanding 4000 rules (7e7 > 2^25).
  auto deep = ParseGbnf(ChainGrammar(4000));
  ASSERT_TRUE(deep.ok()) << deep.status().ToString();
  GrammarMatcher b(*deep);
  ASSERT_TRUE(b.Init().ok());
  Status st = b.FillMask(trie, &mask);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rule expansions"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace stet

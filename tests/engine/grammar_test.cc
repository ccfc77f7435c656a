// The GBNF parser: the syntax it accepts (checked by matching strings through
// the compiled grammar), the grammars it refuses with a message naming the
// problem, and the limits that keep a hostile grammar bounded.
#include "engine/grammar.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/grammar_matcher.h"

namespace stet {
namespace {

std::shared_ptr<const Grammar> Parse(const std::string& text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

// The whole string is accepted and the grammar may end after it.
bool Matches(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  EXPECT_TRUE(m.Init().ok());
  auto r = m.Accept(s);
  return r.ok() && *r && m.CanEnd();
}

std::string ErrorOf(const std::string& text, const GrammarLimits& lim = {}) {
  auto g = ParseGbnf(text, lim);
  EXPECT_FALSE(g.ok()) << text;
  return g.ok() ? "" : g.status().message();
}

TEST(Gbnf, LiteralsAlternationAndSequence) {
  auto g = Parse("root ::= \"ab\" | \"c\" d\nd ::= \"d\"");
  EXPECT_TRUE(Matches(g, "ab"));
  EXPECT_TRUE(Matches(g, "cd"));
  EXPECT_FALSE(Matches(g, "a"));
  EXPECT_FALSE(Matches(g, "abc"));
  EXPECT_FALSE(Matches(g, "c"));
}

TEST(Gbnf, RepetitionOperators) {
  auto g = Parse("root ::= \"a\"* \"b\"+ \"c\"? \"d\"{2} \"e\"{1,3} \"f\"{2,}");
  EXPECT_TRUE(Matches(g, "bddeff"));
  EXPECT_TRUE(Matches(g, "aaabbbcddeeefffff"));
  EXPECT_FALSE(Matches(g, "ddeff"));      // b+ needs one
  EXPECT_FALSE(Matches(g, "bdeff"));      // d{2}
  EXPECT_FALSE(Matches(g, "bddeeeeff"));  // e{1,3}
  EXPECT_FALSE(Matches(g, "bddef"));      // f{2,}
  auto z = Parse("root ::= \"x\"{0,2} \"y\"{0}");
  EXPECT_TRUE(Matches(z, ""));
  EXPECT_TRUE(Matches(z, "xx"));
  EXPECT_FALSE(Matches(z, "xxx"));
  EXPECT_FALSE(Matches(z, "y"));
}

TEST(Gbnf, GroupsAcrossLinesAndComments) {
  auto g = Parse(
      "# a comment line\n"
      "root ::= (\n"
      "    \"a\" | \"b\"  # inside a group\n"
      "  )+ tail\n"
      "  | \"z\"\n"
      "tail ::= \";\"\n");
  EXPECT_TRUE(Matches(g, "abba;"));
  EXPECT_TRUE(Matches(g, "z"));
  EXPECT_FALSE(Matches(g, ";"));
}

TEST(Gbnf, CharacterClasses) {
  auto g = Parse("root ::= [a-c0-9_] [^x-z\\n] [\\]\\-]");
  EXPECT_TRUE(Matches(g, "a!]"));
  EXPECT_TRUE(Matches(g, "9a-"));
  EXPECT_FALSE(Matches(g, "dA]"));
  EXPECT_FALSE(Matches(g, "ay]"));
  EXPECT_FALSE(Matches(g, "a\n]"));
}

TEST(Gbnf, Utf8ClassesAndLiterals) {
  auto g = Parse("root ::= [^\"] \"é€\" [α-ω] .");
  EXPECT_TRUE(Matches(g, "xé€β😀"));
  EXPECT_TRUE(Matches(g, "日é€ωa"));
  EXPECT_FALSE(Matches(g, "\"é€βa"));
  EXPECT_FALSE(Matches(g, "xé€za"));
  // Invalid UTF-8 never matches a class, even a negated one.
  EXPECT_FALSE(Matches(g, std::string("\xC3") + "é€βa"));
  EXPECT_FALSE(Matches(g, std::string("\xED\xA0\x80") + "é€βa"));  // a surrogate
  // Byte by byte: a partial character is accepted and needs its continuation.
  GrammarMatcher m(Parse("root ::= [^a]"));
  ASSERT_TRUE(m.Init().ok());
  ASSERT_TRUE(*m.Accept("\xE2\x82"));
  EXPECT_FALSE(m.CanEnd());
  EXPECT_FALSE(*m.Accept("a"));
  ASSERT_TRUE(*m.Accept("\xAC"));
  EXPECT_TRUE(m.CanEnd());
}

TEST(Gbnf, Escapes) {
  auto g = Parse(R"(root ::= "\x41\u00e9\U0001F600\t\"\\" [\x00-\x1f])");
  EXPECT_TRUE(Matches(g, "Aé😀\t\"\\\x01"));
  EXPECT_FALSE(Matches(g, "Aé😀\t\"\\ "));
}

TEST(Gbnf, RecursionAndJson) {
  auto g = Parse(R"(
root   ::= value
value  ::= object | array | "true" | "null" | [0-9]+
object ::= "{" ( pair ( "," pair )* )? "}"
pair   ::= "\"" [a-z]* "\"" ":" value
array  ::= "[" ( value ( "," value )* )? "]"
)");
  EXPECT_TRUE(Matches(g, R"({"a":[1,true,{"b":null}],"c":{}})"));
  EXPECT_TRUE(Matches(g, "[[[[[]]]]]"));
  EXPECT_FALSE(Matches(g, "[[[[]]]"));
  EXPECT_FALSE(Matches(g, R"({"a":})"));
}

TEST(Gbnf, RefusesBadGrammarsWithAMessage) {
  EXPECT_NE(ErrorOf("").find("root"), std::string::npos);
  EXPECT_NE(ErrorOf("a ::= \"x\"").find("no 'root'"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= foo").find("'foo' is not defined"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"\nroot ::= \"b\"").find("defined twice"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"abc").find("unterminated"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= [abc").find("unterminated"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= (\"a\"").find("expected ')'"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"{3,1}").find("n < m"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= [z-a]").find("out of order"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\\xZZ\"").find("hex"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= * \"a\"").find("line 1 column 10"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= root \"a\" | \"b\"").find("left recursion"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= x\nx ::= \"a\"? root").find("left recursion"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= (\"a\"?)*").find("left recursion"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\xC3\"").find("UTF-8"), std::string::npos);
  EXPECT_NE(ErrorOf("root := \"a\"").find("'::='"), std::string::npos);
}

TEST(Gbnf, LimitsAreEnforced) {
  GrammarLimits lim;
  lim.max_bytes = 64;
  EXPECT_NE(ErrorOf("root ::= \"" + std::string(100, 'a') + "\"", lim).find("bytes"),
            std::string::npos);
  lim = {};
  lim.max_depth = 8;
  EXPECT_NE(ErrorOf("root ::= " + std::string(20, '(') + "\"a\"" + std::string(20, ')'), lim)
                .find("nested"),
            std::string::npos);
  lim = {};
  lim.max_repeat = 100;
  EXPECT_NE(ErrorOf("root ::= \"a\"{1000}", lim).find("repetition count"), std::string::npos);
  lim = {};
  lim.max_rules = 10;
  EXPECT_NE(ErrorOf("root ::= \"a\"{0,50}", lim).find("rules"), std::string::npos);
  lim = {};
  lim.max_elements = 1000;
  EXPECT_NE(ErrorOf("root ::= (\"abcdefghij\"){2000}", lim).find("too large"), std::string::npos);
  // Nesting a million parentheses deep is refused quickly, not a stack overflow.
  EXPECT_NE(ErrorOf("root ::= " + std::string(200000, '(')).find("nested"), std::string::npos);
}

TEST(Gbnf, MatcherStackLimit) {
  // Every 'a' doubles the ways to close what is open: the stack limit stops it, with an error.
  GrammarLimits lim;
  lim.max_stacks = 64;
  auto g = ParseGbnf("root ::= x\nx ::= \"a\" x \"b\" | \"a\" x \"c\" | \"\"", lim);
  ASSERT_TRUE(g.ok());
  GrammarMatcher m(*g);
  ASSERT_TRUE(m.Init().ok());
  bool failed = false;
  for (int i = 0; i < 200 && !failed; ++i) {
    auto r = m.Accept("a");
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("parse stacks"), std::string::npos);
      failed = true;
    }
  }
  EXPECT_TRUE(failed);
}

// Hostile input: random mutations of a valid grammar and random bytes never
// crash or hang the parser, and whatever parses runs through the matcher and
// the mask within its limits.
TEST(Gbnf, RandomMutationsNeverCrashOrHang) {
  const std::string seed_text =
      "root ::= obj\nobj ::= \"{\" ( kv ( \",\" kv )* )? \"}\"\n"
      "kv ::= \"\\\"\" [a-z\\u00e9]{1,3} \"\\\"\" \":\" ( [0-9]+ | obj | \"[\" [^\\]]* \"]\" )?  # "
      "c\n";
  ASSERT_TRUE(ParseGbnf(seed_text).ok());
  std::vector<std::string> vocab;
  for (int b = 32; b < 127; ++b) vocab.push_back(std::string(1, static_cast<char>(b)));
  vocab.push_back("\"a");
  vocab.push_back("{\"");
  vocab.push_back("\xC3\xA9");
  TokenTrie trie(vocab);
  const std::string alphabet = "()[]{}|*+?.^-\\\"#:=, \nabcxyz019u\xC3\xA9";
  uint64_t x = 88172645463325252ULL;
  auto rnd = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  int parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string t = seed_text;
    const int edits = 1 + static_cast<int>(rnd() % 4);
    for (int e = 0; e < edits && !t.empty(); ++e) {
      const size_t at = rnd() % t.size();
      switch (rnd() % 3) {
        case 0:
          t[at] = alphabet[rnd() % alphabet.size()];
          break;
        case 1:
          t.erase(at, 1 + rnd() % 3);
          break;
        default:
          t.insert(at, 1, alphabet[rnd() % alphabet.size()]);
      }
    }
    if (iter % 10 == 0) {  // pure noise too
      t.clear();
      for (int i = 0; i < 40; ++i) t.push_back(static_cast<char>(rnd() & 0xFF));
    }
    GrammarLimits lim;
    lim.max_stacks = 256;
    auto g = ParseGbnf(t, lim);
    if (!g.ok()) {
      EXPECT_FALSE(g.status().message().empty());
      continue;
    }
    ++parsed;
    GrammarMatcher m(*g);
    if (!m.Init().ok()) continue;
    std::vector<uint8_t> mask;
    for (int step = 0; step < 8; ++step) {
      if (!m.FillMask(trie, &mask).ok()) break;
      int pick = -1;
      for (size_t i = 0; i < mask.size(); ++i) {
        if (mask[i] && (pick < 0 || rnd() % 3 == 0)) pick = static_cast<int>(i);
      }
      if (pick < 0) break;
      auto r = m.Accept(vocab[pick]);
      ASSERT_TRUE(!r.ok() || *r) << "a token the mask allowed was refused";
      if (!r.ok()) break;
    }
  }
  EXPECT_GT(parsed, 100);
}

}  // namespace
}  // namespace stet

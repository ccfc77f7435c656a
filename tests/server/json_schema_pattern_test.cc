// JSON Schema `pattern` -> GBNF: JSON-encoded strings the pattern matches
// (searching, as JSON Schema does) match the grammar, others do not; the
// grammar agrees with std::regex (ECMAScript) on ASCII; what a grammar cannot
// express is refused by name, and hostile patterns cost bounded time.
#include "server/structured/json_schema_pattern.h"

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <regex>

#include "engine/grammar.h"
#include "engine/grammar_matcher.h"

namespace stet::server {
namespace {

// The canonical JSON-string content of UTF-8 text (non-ASCII bytes as they are).
std::string Content(const std::string& utf8) {
  std::string out;
  for (unsigned char c : utf8) {
    static const char* kHex = "0123456789abcdef";
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\b' || c == '\t' || c == '\n' || c == '\f' || c == '\r') {
      out += '\\';
      out += c == '\b' ? 'b' : c == '\t' ? 't' : c == '\n' ? 'n' : c == '\f' ? 'f' : 'r';
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::shared_ptr<const Grammar> Compile(const std::string& pattern) {
  auto sg = PatternToGbnf(pattern);
  EXPECT_TRUE(sg.ok()) << pattern << ": " << sg.status().ToString();
  if (!sg.ok()) return nullptr;
  auto g = ParseGbnf("root ::= \"\\\"\" " + sg->body + " \"\\\"\"");
  EXPECT_TRUE(g.ok()) << pattern << ": " << g.status().ToString() << "\n" << sg->body;
  return g.ok() ? *g : nullptr;
}

// `content` as the bytes between the quotes, unchanged; fed one byte at a
// time, as generation feeds tokens (the matcher merges equal states between them).
bool MatchesContent(const std::shared_ptr<const Grammar>& g, const std::string& content) {
  if (!g) return false;
  GrammarMatcher m(g);
  EXPECT_TRUE(m.Init().ok());
  for (char c : "\"" + content + "\"") {
    auto r = m.Accept(std::string_view(&c, 1));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || !*r) return false;
  }
  return m.CanEnd();
}
bool Matches(const std::shared_ptr<const Grammar>& g, const std::string& decoded) {
  return MatchesContent(g, Content(decoded));
}

std::string Refusal(const std::string& pattern) {
  auto sg = PatternToGbnf(pattern);
  EXPECT_FALSE(sg.ok()) << pattern << " -> " << (sg.ok() ? sg->body : "");
  return sg.ok() ? "" : sg.status().message();
}

TEST(JsonSchemaPattern, JsonCharSetEncodesEachCodePointOneWay) {
  EXPECT_EQ(JsonCharSetGbnf({{'a', 'z'}}), "[a-z]");
  EXPECT_EQ(JsonCharSetGbnf({{'"', '"'}}), R"("\\\"")");
  EXPECT_EQ(JsonCharSetGbnf({}), "");
  EXPECT_EQ(JsonCharSetGbnf({{0xD800, 0xDFFF}}), "");
  auto g = ParseGbnf("root ::= \"\\\"\" " + JsonCharSetGbnf({{0, 0x10FFFF}}) + "* \"\\\"\"");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (const char* ok : {"a", "\\\"", "\\\\", "\\n", "\\b", "\\u0001", "\\u001f", "\\u007f",
                         "\xC3\xA9", "\xF0\x9F\x98\x80", "/", "", "a\\tb\\u000b"}) {
    EXPECT_TRUE(MatchesContent(*g, ok)) << ok;
  }
  for (const char* bad : {"\\u0041", "\\/", "\n", "\x7f", "\\u000A", "\\u000a", "\\u001F", "\"",
                          "\\", "\\ud83d\\ude00"}) {
    EXPECT_FALSE(MatchesContent(*g, bad)) << bad;
  }
  auto controls = ParseGbnf("root ::= " + JsonCharSetGbnf({{0x08, 0x0B}}) + "+");
  ASSERT_TRUE(controls.ok()) << controls.status().ToString();
  GrammarMatcher m(*controls);
  ASSERT_TRUE(m.Init().ok());
  EXPECT_TRUE(*m.Accept("\\b\\t\\n\\u000b"));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(*m.Accept("\\u0008"));
}

TEST(JsonSchemaPattern, AnchoredAndUnanchored) {
  auto exact = Compile("^abc$");
  EXPECT_TRUE(Matches(exact, "abc"));
  EXPECT_FALSE(Matches(exact, "abcd"));
  EXPECT_FALSE(Matches(exact, "xabc"));
  EXPECT_FALSE(Matches(exact, ""));
  auto search = Compile("abc");
  EXPECT_TRUE(Matches(search, "abc"));
  EXPECT_TRUE(Matches(search, "xx\"abc\nyy"));
  EXPECT_FALSE(Matches(search, "ab c"));
  auto prefix = Compile("^ab");
  EXPECT_TRUE(Matches(prefix, "ab\xC3\xA9"));
  EXPECT_FALSE(Matches(prefix, "xab"));
  auto suffix = Compile("ab$");
  EXPECT_TRUE(Matches(suffix, "\\ab"));
  EXPECT_FALSE(Matches(suffix, "abx"));
  auto grouped = Compile("(^a$)");
  EXPECT_TRUE(Matches(grouped, "a"));
  EXPECT_FALSE(Matches(grouped, "ab"));
  auto everything = Compile("x*");
  EXPECT_TRUE(Matches(everything, ""));
  EXPECT_TRUE(Matches(everything, "anything\n"));
  auto empty_only = Compile("^$");
  EXPECT_TRUE(Matches(empty_only, ""));
  EXPECT_FALSE(Matches(empty_only, "a"));
}

TEST(JsonSchemaPattern, ClassesAndNegation) {
  auto ident = Compile("^[a-z0-9_-]+$");
  EXPECT_TRUE(Matches(ident, "a-b_9"));
  EXPECT_FALSE(Matches(ident, "A"));
  EXPECT_FALSE(Matches(ident, "a b"));
  auto not_abc = Compile("^[^a-c]$");
  for (const char* ok : {"d", "\xC3\xA9", "\xF0\x9F\x98\x80", "\n", "\"", "\\", "\x01"}) {
    EXPECT_TRUE(Matches(not_abc, ok)) << ok;
  }
  EXPECT_FALSE(Matches(not_abc, "b"));
  auto ends = Compile("^[-a]+[b-]$");
  EXPECT_TRUE(Matches(ends, "-a-"));
  EXPECT_FALSE(Matches(ends, "ac"));
  auto bracket = Compile("^[\\]\\\\.]+$");
  EXPECT_TRUE(Matches(bracket, "].\\"));
  EXPECT_FALSE(Matches(bracket, "a"));
  auto any = Compile("^[^]$");
  EXPECT_TRUE(Matches(any, "\n"));
  auto dead_branch = Compile("^(?:[]|a)$");
  EXPECT_TRUE(Matches(dead_branch, "a"));
  auto backspace = Compile("^[\\b]$");
  EXPECT_TRUE(Matches(backspace, "\b"));
}

TEST(JsonSchemaPattern, ShorthandsAreTheSafeSubset) {
  auto phone = Compile("^\\d{3}-\\d{4}$");
  EXPECT_TRUE(Matches(phone, "555-1234"));
  EXPECT_FALSE(Matches(phone, "555-123"));
  EXPECT_FALSE(Matches(phone, "\xD9\xA1\xD9\xA2\xD9\xA3-1234"));  // Arabic-Indic digits
  auto word = Compile("^\\w+$");
  EXPECT_TRUE(Matches(word, "a_Z9"));
  EXPECT_FALSE(Matches(word, "\xC3\xA9"));
  auto space = Compile("^\\s$");
  for (const char* ok : {" ", "\t", "\n", "\r", "\f", "\v"}) EXPECT_TRUE(Matches(space, ok));
  EXPECT_FALSE(Matches(space, "\xC2\xA0"));
  auto nonspace = Compile("^\\S$");
  EXPECT_TRUE(Matches(nonspace, "a"));
  EXPECT_FALSE(Matches(nonspace, " "));
  EXPECT_FALSE(Matches(nonspace, "\x1c"));      // Python's \s matches it
  EXPECT_FALSE(Matches(nonspace, "\xC3\xA9"));  // ASCII only
  auto nondigit = Compile("^[^\\d]$");
  EXPECT_TRUE(Matches(nondigit, "a"));
  EXPECT_FALSE(Matches(nondigit, "1"));
  EXPECT_FALSE(Matches(nondigit, "\xC3\xA9"));
  auto mixed = Compile("^[\\d\\s]+$");
  EXPECT_TRUE(Matches(mixed, "1 2\t3"));
  EXPECT_FALSE(Matches(mixed, "1a"));
}

TEST(JsonSchemaPattern, CharactersNeedingJsonEscapes) {
  auto quote = Compile("^\"$");
  EXPECT_TRUE(MatchesContent(quote, "\\\""));
  EXPECT_FALSE(MatchesContent(quote, "\""));
  auto backslash = Compile("^\\\\$");
  EXPECT_TRUE(MatchesContent(backslash, "\\\\"));
  auto newline = Compile("^a\\nb$");
  EXPECT_TRUE(MatchesContent(newline, "a\\nb"));
  EXPECT_FALSE(MatchesContent(newline, "a\nb"));
  EXPECT_FALSE(MatchesContent(newline, "a\\u000ab"));
  auto controls = Compile("^[\\x00-\\x1f]+$");
  EXPECT_TRUE(MatchesContent(controls, "\\u0001\\b\\u001f\\u0000"));
  EXPECT_FALSE(MatchesContent(controls, "\\u0008"));
  auto del = Compile("^\\x7f$");
  EXPECT_TRUE(MatchesContent(del, "\\u007f"));
  EXPECT_FALSE(MatchesContent(del, "\x7f"));
  auto slash = Compile("^\\/$");
  EXPECT_TRUE(MatchesContent(slash, "/"));
  EXPECT_FALSE(MatchesContent(slash, "\\/"));
  EXPECT_TRUE(Matches(Compile("^\\cJ\\0\\v\\f\\t\\r$"), std::string("\n\0\v\f\t\r", 6)));
  EXPECT_TRUE(Matches(Compile("^.\\..$"), "\".\\"));
  EXPECT_FALSE(Matches(Compile("^.$"), "\n"));
  EXPECT_FALSE(Matches(Compile("^.$"), "\xE2\x80\xA8"));  // U+2028
}

TEST(JsonSchemaPattern, QuantifierBounds) {
  auto a23 = Compile("^a{2,3}$");
  EXPECT_FALSE(Matches(a23, "a"));
  EXPECT_TRUE(Matches(a23, "aa"));
  EXPECT_TRUE(Matches(a23, "aaa"));
  EXPECT_FALSE(Matches(a23, "aaaa"));
  EXPECT_TRUE(Matches(Compile("^(ab){2}$"), "abab"));
  EXPECT_FALSE(Matches(Compile("^(ab){2}$"), "ab"));
  auto a2 = Compile("^a{2,}$");
  EXPECT_FALSE(Matches(a2, "a"));
  EXPECT_TRUE(Matches(a2, "aaaaaa"));
  EXPECT_TRUE(Matches(Compile("^a{0}b$"), "b"));
  auto lazy = Compile("^a+?b*?c??$");
  EXPECT_TRUE(Matches(lazy, "aabbc"));
  EXPECT_FALSE(Matches(lazy, "bc"));
  auto big = Compile("^x{4096}$");
  EXPECT_TRUE(Matches(big, std::string(4096, 'x')));
  EXPECT_FALSE(Matches(big, std::string(4095, 'x')));
  auto min3 = Compile("a{3}");
  EXPECT_TRUE(Matches(min3, "baaab"));
  EXPECT_FALSE(Matches(min3, "baab"));
}

TEST(JsonSchemaPattern, Alternation) {
  auto pets = Compile("^(cat|dog)$");
  EXPECT_TRUE(Matches(pets, "cat"));
  EXPECT_TRUE(Matches(pets, "dog"));
  EXPECT_FALSE(Matches(pets, "catdog"));
  auto each = Compile("^a|b$");
  EXPECT_TRUE(Matches(each, "ax"));
  EXPECT_TRUE(Matches(each, "xb"));
  EXPECT_FALSE(Matches(each, "xa"));
  auto optional = Compile("^(|a)$");
  EXPECT_TRUE(Matches(optional, ""));
  EXPECT_TRUE(Matches(optional, "a"));
  auto named = Compile("^(?<year>\\d{4})-(?:0[1-9]|1[0-2])$");
  EXPECT_TRUE(Matches(named, "2024-12"));
  EXPECT_FALSE(Matches(named, "2024-13"));
}

TEST(JsonSchemaPattern, RepetitionOfWhatCanBeEmpty) {
  auto a = Compile("^(a?)*$");
  EXPECT_TRUE(Matches(a, ""));
  EXPECT_TRUE(Matches(a, "aaa"));
  EXPECT_FALSE(Matches(a, "ab"));
  EXPECT_TRUE(Matches(Compile("^(a|)*b$"), "aab"));
  EXPECT_TRUE(Matches(Compile("^(a*)*$"), "aa"));
  EXPECT_TRUE(Matches(Compile("^(a*)+$"), ""));
  auto ab = Compile("^(a?b?)*$");
  EXPECT_TRUE(Matches(ab, "abba"));
  EXPECT_FALSE(Matches(ab, "abc"));
  auto two = Compile("^(a?b?){2}$");
  EXPECT_TRUE(Matches(two, "aba"));
  EXPECT_TRUE(Matches(two, ""));
  EXPECT_FALSE(Matches(two, "abba"));
  auto upto = Compile("^(a?b?){0,2}c$");
  EXPECT_TRUE(Matches(upto, "abbc"));
  EXPECT_FALSE(Matches(upto, "abbac"));
  auto more = Compile("^(a{0,3}){2,}$");
  EXPECT_TRUE(Matches(more, "aaaaaaaaaa"));
  EXPECT_TRUE(Matches(more, ""));
}

TEST(JsonSchemaPattern, UnicodeCodePoints) {
  auto e = Compile("^\xC3\xA9+$");
  EXPECT_TRUE(Matches(e, "\xC3\xA9\xC3\xA9"));
  EXPECT_FALSE(Matches(e, "e"));
  EXPECT_TRUE(Matches(Compile("^\\u00e9$"), "\xC3\xA9"));
  auto emoji = Compile("^[\xF0\x9F\x98\x80-\xF0\x9F\x98\x82]$");
  EXPECT_TRUE(Matches(emoji, "\xF0\x9F\x98\x81"));
  EXPECT_FALSE(Matches(emoji, "\xF0\x9F\x98\x83"));
  EXPECT_TRUE(Matches(Compile("^\\uD83D\\uDE00$"), "\xF0\x9F\x98\x80"));
  auto dot = Compile("^.$");
  EXPECT_TRUE(Matches(dot, "\xF0\x9F\x98\x80"));
  EXPECT_TRUE(Matches(dot, "\xC3\xA9"));
  EXPECT_FALSE(Matches(dot, "ab"));
}

TEST(JsonSchemaPattern, Lengths) {
  auto len = [](const std::string& p) {
    auto sg = PatternToGbnf(p);
    EXPECT_TRUE(sg.ok()) << p << ": " << sg.status().ToString();
    return sg.ok() ? std::make_pair(sg->min_len, sg->max_len) : std::pair<int64_t, int64_t>(-2, -2);
  };
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(len("^a{2,5}$"), P(2, 5));
  EXPECT_EQ(len("^\\d{3}-\\d{4}$"), P(8, 8));
  EXPECT_EQ(len("abc"), P(3, -1));
  EXPECT_EQ(len("^(ab|c)?$"), P(0, 2));
  EXPECT_EQ(len("^a*$"), P(0, -1));
  EXPECT_EQ(len("^$"), P(0, 0));
  EXPECT_EQ(len("^\xC3\xA9[\xF0\x9F\x98\x80]{2}$"), P(3, 3));
  EXPECT_EQ(len("^(a{4096}){4096}$"), P(4096 * 4096, 4096 * 4096));
  EXPECT_EQ(len("^(((a{4096}){4096}){4096}){4096}$"), P(int64_t{1} << 40, -1));
}

TEST(JsonSchemaPattern, RefusalsNameTheConstruct) {
  const std::pair<const char*, const char*> cases[] = {
      {"(?=a)", "'(?=' (look-ahead) cannot be expressed"},
      {"(?!a)b", "'(?!'"},
      {"(?<=a)b", "'(?<=' (look-behind)"},
      {"(?<!a)b", "'(?<!'"},
      {"(a)\\1", "'\\1' (back-reference)"},
      {"(?<n>a)\\k<n>", "'\\k' (named back-reference)"},
      {"\\bword", "'\\b' (word boundary)"},
      {"a\\B", "'\\B'"},
      {"\\p{L}", "'\\p{' (Unicode property escape)"},
      {"\\P{L}", "'\\P{'"},
      {"(?i)abc", "'(?i'"},
      {"(abc", "never closed"},
      {"abc)", "unbalanced ')'"},
      {"[abc", "never closed"},
      {"*a", "nothing to repeat"},
      {"a|+", "nothing to repeat"},
      {"{2}", "nothing to repeat"},
      {"a**", "a quantifier follows a quantifier"},
      {"a?+", "a quantifier follows a quantifier"},
      {"^*", "follows an anchor"},
      {"[z-a]", "out of order"},
      {"a{3,2}", "out of order"},
      {"a{5000}", "above 4096"},
      {"a{99999999999999999999999}", "above 4096"},
      {"a^b", "'^'"},
      {"x(^a)", "'^'"},
      {"a$b", "'$'"},
      {"(a$)*", "'$'"},
      {"[]", "matches no string"},
      {"a[]b|[]", "matches no string"},
      {"\\q", "'\\q' (unknown escape)"},
      {"\\u{41}", "'\\u{'"},
      {"\\uD800", "lone surrogate"},
      {"a{", "literal '{'"},
      {"x{,3}", "literal '{'"},
      {"[\\d-z]", "shorthand"},
      {"\\", "lone '\\'"},
      {"\\01", "octal"},
      {"\xff", "UTF-8"},
      {"(?<1a>x)", "group name"},
  };
  for (const auto& [pattern, want] : cases) {
    const std::string got = Refusal(pattern);
    EXPECT_NE(got.find(want), std::string::npos) << pattern << " -> " << got;
  }
  EXPECT_NE(Refusal(std::string(5000, 'a')).find("more than the 4096"), std::string::npos);
  EXPECT_NE(Refusal("^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$").find("look-ahead"), std::string::npos);
}

TEST(JsonSchemaPattern, HostilePatternsStayBounded) {
  const auto start = std::chrono::steady_clock::now();
  std::string deep = std::string(kMaxPatternDepth, '(') + "a" + std::string(kMaxPatternDepth, ')');
  EXPECT_TRUE(Matches(Compile(deep), "xa"));
  EXPECT_NE(Refusal("(" + deep + ")").find("deeper than"), std::string::npos);
  EXPECT_NE(Refusal(std::string(4000, '(')).find("deeper than"), std::string::npos);
  std::string stars;
  for (int i = 0; i < 30; ++i) stars = "(" + stars + "a*)*";
  EXPECT_TRUE(Matches(Compile("^" + stars + "$"), "aaa"));
  std::string quant = "a";
  for (int i = 0; i < kMaxPatternDepth; ++i) quant = "(" + quant + "|b?c?){2,3}";
  auto nested = PatternToGbnf("^" + quant + "$");
  ASSERT_TRUE(nested.ok()) << nested.status().ToString();
  auto g = ParseGbnf("root ::= \"\\\"\" " + nested->body + " \"\\\"\"");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  GrammarMatcher m(*g);
  ASSERT_TRUE(m.Init().ok());
  (void)m.Accept("\"aacbbcabc");  // within the matcher's limits, whatever it says
  std::string nullable_seq = "(";
  for (int i = 0; i < 1000; ++i) nullable_seq += "a?";
  EXPECT_NE(Refusal("^" + nullable_seq + "){2}$").find("larger than"), std::string::npos);
  std::string many;
  while (many.size() + 8 < kMaxPatternBytes) many += "\\d{4096}";
  EXPECT_NE(Refusal(many).find("too large"), std::string::npos);
  (void)PatternToGbnf("^((a?){4096}){4096}$");
  (void)PatternToGbnf("^((((.{4096}){4096}){4096}){4096})*$");
  std::string dots;
  while (dots.size() < kMaxPatternBytes) dots += ".";
  (void)PatternToGbnf(dots);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(s, 5.0);
}

// Every string of `alphabet` up to `max_len` characters.
std::vector<std::string> Strings(const std::string& alphabet, size_t max_len) {
  std::vector<std::string> out = {""};
  for (size_t begin = 0, len = 1; len <= max_len; ++len) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i) {
      for (char c : alphabet) out.push_back(out[i] + c);
    }
    begin = end;
  }
  return out;
}

TEST(JsonSchemaPattern, AgreesWithStdRegexOnAscii) {
  const std::pair<const char*, const char*> table[] = {
      {"abc", "abc"},
      {"^a", "ab"},
      {"b$", "ab"},
      {"^ab*$", "ab"},
      {"a|b", "abc"},
      {"^a|b$", "abc"},
      {"^(a|b)c$", "abc"},
      {"(ab)+", "ab"},
      {"^(ab)+$", "ab"},
      {"^a{2,3}$", "ab"},
      {"a{2}", "ab"},
      {"b{2,}", "ab"},
      {"^(a?)*$", "ab"},
      {"^(a|)*b$", "ab"},
      {"^(a*)*$", "ab"},
      {"^(a?b?)*$", "abc"},
      {"^(a?b?){2}$", "abc"},
      {"^(a?b?){0,2}c$", "abc"},
      {"(a*)+b", "ab"},
      {"^(a?){3}$", "ab"},
      {"^[a-c]+$", "abd"},
      {"^[^a]*$", "ab-"},
      {"[^ab]", "abc"},
      {"^\\d+$", "1a2"},
      {"^\\w\\W$", "a-1"},
      {"\\s", "a b"},
      {"^\\S+$", "a b"},
      {"^[\\d-]+$", "1-a"},
      {"^[^\\d]$", "1a-"},
      {"^[^\\s]+$", "a b"},
      {"^.+$", "a.b"},
      {"a.c", "abc"},
      {"^a.?b$", "ab-"},
      {"^\\.$", ".a"},
      {"^[.]$", ".a"},
      {"x*", "xy"},
      {"^$", "a"},
      {"^", "a"},
      {"$", "a"},
      {"(a|b)*c(a|b)", "abc"},
      {"^(?:ab|a)(?:b|)$", "ab"},
      {"^a+?b??$", "ab"},
      {"^[-a]+$", "-ab"},
      {"^[a-]$", "-ab"},
      {"^(a|ab)(c|bcd)$", "abcd"},
      {"((a)|b)+c?$", "abc"},
      {"^(ab|a)*b{2,}$", "ab"},
      {"^((a|b){2}c?)*$", "abc"},
      {"^[\\]a]$", "]a"},
      {"^\\^\\$$", "^$a"},
      {"a{1,2}b{0,1}$", "ab"},
      {"^(a{0,2}b){1,2}", "ab"},
      {"(ab?){2}", "ab"},
      {"(a|b?)+c", "abc"},
      {"^\"|\\\\$", "\"\\a"},
  };
  int compared = 0;
  for (const auto& [pattern, alphabet] : table) {
    auto g = Compile(pattern);
    ASSERT_TRUE(g) << pattern;
    const std::regex re(pattern, std::regex::ECMAScript);
    for (const std::string& s : Strings(alphabet, 4)) {
      const bool want = std::regex_search(s, re);
      EXPECT_EQ(Matches(g, s), want) << "pattern " << pattern << " on \"" << s << "\"";
      ++compared;
    }
  }
  EXPECT_GT(compared, 4000);
}

// A random pattern over a, b and 1 from a fixed seed: groups, alternation,
// classes and every quantifier form, nested a few levels.
std::string RandomPattern(uint32_t* seed, int depth) {
  auto next = [seed](uint32_t n) {
    *seed = *seed * 1664525u + 1013904223u;
    return (*seed >> 16) % n;
  };
  static const char* kAtoms[] = {"a", "b", "1", ".", "[ab]", "[^a]", "\\d", "\\w", "[a1]"};
  static const char* kQuant[] = {"", "", "", "*", "+", "?", "{2}", "{0,2}", "{1,2}", "{2,}", "*?"};
  std::string out;
  const uint32_t items = 1 + next(3);
  for (uint32_t i = 0; i < items; ++i) {
    std::string atom =
        depth > 0 && next(3) == 0 ? "(" + RandomPattern(seed, depth - 1) + ")" : kAtoms[next(9)];
    out += atom + kQuant[next(11)];
  }
  if (next(4) == 0) out += "|" + RandomPattern(seed, depth - 1 < 0 ? 0 : depth - 1);
  return out;
}

TEST(JsonSchemaPattern, AgreesWithStdRegexOnRandomPatterns) {
  uint32_t seed = 12345;
  const std::vector<std::string> candidates = Strings("ab1-", 4);
  for (int i = 0; i < 300; ++i) {
    std::string pattern = RandomPattern(&seed, 2);
    if (seed % 3 == 0) pattern = "^" + pattern;
    if (seed % 5 == 0) pattern += "$";
    auto g = Compile(pattern);
    ASSERT_TRUE(g) << pattern;
    const std::regex re(pattern, std::regex::ECMAScript);
    for (const std::string& s : candidates) {
      ASSERT_EQ(Matches(g, s), std::regex_search(s, re))
          << "pattern " << pattern << " on \"" << s << "\"";
    }
  }
}

TEST(JsonSchemaPattern, TypicalPydanticPatternsStaySmall) {
  const char* patterns[] = {
      "^[a-z]+$",
      "^\\d{3}-\\d{4}$",
      "^[\\w.+-]+@[\\w-]+\\.[\\w.-]+$",
      "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
      "^\\+?[1-9]\\d{1,14}$",
      "^(https?|ftp)://[^\\s/$.?#].[^\\s]*$",
      "[A-Z]{2,3}",
      "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$",
  };
  for (const char* p : patterns) {
    auto sg = PatternToGbnf(p);
    ASSERT_TRUE(sg.ok()) << p << ": " << sg.status().ToString();
    std::cout << "  " << p << " -> " << sg->body.size() << " bytes: " << sg->body << "\n";
    EXPECT_LT(sg->body.size(), 1024u) << p;
    EXPECT_TRUE(Compile(p)) << p;
  }
  EXPECT_EQ(PatternToGbnf("^[a-z]+$")->body, "[a-z]+");
  EXPECT_EQ(PatternToGbnf("^\\d{3}-\\d{4}$")->body, "[0-9]{3} \"-\" [0-9]{4}");
  auto email = Compile("^[\\w.+-]+@[\\w-]+\\.[\\w.-]+$");
  EXPECT_TRUE(Matches(email, "first.last+tag@example.co.uk"));
  EXPECT_FALSE(Matches(email, "no-at-sign.example"));
}

// PatternTarget::kRawText (a regex as a whole output): raw bytes, quotes,
// backslashes and control characters included, match exactly when
// std::regex_match (ECMAScript, whole text) does.
bool MatchesRaw(const std::string& pattern, const std::string& text) {
  auto sg = PatternToGbnf(pattern, PatternTarget::kRawText);
  EXPECT_TRUE(sg.ok()) << pattern << ": " << sg.status().ToString();
  if (!sg.ok()) return false;
  auto g = ParseGbnf("root ::= " + sg->body);
  EXPECT_TRUE(g.ok()) << pattern << ": " << g.status().ToString() << "\n" << sg->body;
  if (!g.ok()) return false;
  GrammarMatcher m(*g);
  EXPECT_TRUE(m.Init().ok());
  auto r = m.Accept(text);
  return r.ok() && *r && m.CanEnd();
}

TEST(JsonSchemaPattern, RawTextIsMatchedWhole) {
  const std::pair<const char*, const char*> table[] = {
      {"abc", "abc"},
      {"a|b", "ab"},
      {"^a", "ab"},
      {"b$", "ab"},
      {"(ab)+", "ab"},
      {"a{2,3}", "ab"},
      {"[^a]*", "ab\""},
      {"\"[a\\\\]*\"", "a\"\\"},
      {"a\\nb?", "a\nb"},
      {"\\d+\\.\\d", "1."},
      {"(yes|no)!?", "yeno!"},
      {"[\\t ]x", "\t x"},
  };
  int compared = 0;
  for (const auto& [pattern, alphabet] : table) {
    const std::regex re(pattern, std::regex::ECMAScript);
    for (const std::string& s : Strings(alphabet, 4)) {
      if (s.empty()) continue;  // a whole output is never empty
      EXPECT_EQ(MatchesRaw(pattern, s), std::regex_match(s, re))
          << "pattern " << pattern << " on \"" << s << "\"";
      ++compared;
    }
  }
  EXPECT_GT(compared, 1000);
  EXPECT_NE(PatternToGbnf("", PatternTarget::kRawText).status().message().find("empty"),
            std::string::npos);
}

}  // namespace
}  // namespace stet::server

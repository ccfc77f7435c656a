// Lexer: token stream shapes, Jinja2's whitespace control and newline rules
// (checked against Jinja2 3.1.6), and syntax errors with their positions.
#include "template/lexer.h"

#include <gtest/gtest.h>

#include "template/error.h"

namespace stet::tmpl {
namespace {

std::string Kinds(const std::vector<Token>& toks) {
  std::string out;
  for (const Token& t : toks) {
    switch (t.type) {
      case TokType::kData:
        out += "D(" + t.text + ")";
        break;
      case TokType::kVarBegin:
        out += "{{";
        break;
      case TokType::kVarEnd:
        out += "}}";
        break;
      case TokType::kBlockBegin:
        out += "{%";
        break;
      case TokType::kBlockEnd:
        out += "%}";
        break;
      case TokType::kName:
        out += "N(" + t.text + ")";
        break;
      case TokType::kString:
        out += "S(" + t.text + ")";
        break;
      case TokType::kInt:
        out += "I(" + std::to_string(t.int_value) + ")";
        break;
      case TokType::kFloat:
        out += "F(" + t.text + ")";
        break;
      case TokType::kOp:
        out += "O(" + t.text + ")";
        break;
      case TokType::kEof:
        out += "$";
        break;
    }
  }
  return out;
}

std::string Lex(std::string_view src, LexerOptions o = {}) { return Kinds(Tokenize(src, o)); }

TemplateError LexError(std::string_view src) {
  try {
    Tokenize(src, LexerOptions{});
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << src;
  return {};
}

TEST(Lexer, TokenKinds) {
  EXPECT_EQ(Lex("a{{ x.y[0] | f(1, 'q') }}b"),
            "D(a){{N(x)O(.)N(y)O([)I(0)O(])O(|)N(f)O(()I(1)O(,)S(q)O())}}D(b)$");
  EXPECT_EQ(Lex("{% if a == 1 and b != 2.5 %}"), "{%N(if)N(a)O(==)I(1)N(and)N(b)O(!=)F(2.5)%}$");
  EXPECT_EQ(Lex("{{ 2 ** 3 // 4 ~ 'x' }}"), "{{I(2)O(**)I(3)O(//)I(4)O(~)S(x)}}$");
  EXPECT_EQ(Lex("{{ 1_000 + 0x1F + 0b11 + 1e3 }}"), "{{I(1000)O(+)I(31)O(+)I(3)O(+)F(1e3)}}$");
  EXPECT_EQ(Lex("{{ a.0.1 }}"), "{{N(a)O(.)I(0)O(.)I(1)}}$");  // never the float 0.1 after a dot
}

TEST(Lexer, StringEscapes) {
  EXPECT_EQ(Lex(R"({{ 'a\nb\t\x41\u00e9\'' }})"), "{{S(a\nb\tAé')}}$");
  EXPECT_EQ(Lex(R"({{ "\q" }})"), "{{S(\\q)}}$");  // unknown escapes stay as written
  EXPECT_EQ(Lex(R"({{ '\U0001F600' }})"), "{{S(😀)}}$");
}

TEST(Lexer, BracesInsideTagsAreBalanced) {
  // `}}` inside an open dict is two operators, not the end of the tag.
  EXPECT_EQ(Lex("{{ {'a': {'b': 1}} }}"), "{{O({)S(a)O(:)O({)S(b)O(:)I(1)O(})O(})}}$");
}

TEST(Lexer, CommentsAndRaw) {
  EXPECT_EQ(Lex("a{# x {{ y }} #}b"), "D(a)D(b)$");
  EXPECT_EQ(Lex("{% raw %}{{ x }}{% endraw %}"), "D({{ x }})$");
}

TEST(Lexer, TrimAndLstripBlocks) {
  // trim_blocks eats one newline after a block tag; lstrip_blocks the indent before it.
  EXPECT_EQ(Lex("a\n  {% if x %}\n  b\n  {% endif %}\nc"),
            "D(a\n){%N(if)N(x)%}D(  b\n){%N(endif)%}D(c)$");
  // Not after a variable tag, and `+` turns both off.
  EXPECT_EQ(Lex("  {{ x }}\nb"), "D(  ){{N(x)}}D(\nb)$");
  EXPECT_EQ(Lex("  {%+ if x +%}\nb"), "D(  ){%N(if)N(x)%}D(\nb)$");
  // `-` strips all whitespace on its side, newlines included.
  EXPECT_EQ(Lex("a \n {%- if x -%} \n b"), "D(a){%N(if)N(x)%}D(b)$");
  LexerOptions plain{false, false, true};
  EXPECT_EQ(Lex("a\n  {% if x %}\nb\n", plain), "D(a\n  ){%N(if)N(x)%}D(\nb\n)$");
}

TEST(Lexer, Newlines) {
  // \r\n and \r become \n; one trailing newline is dropped (keep_trailing_newline=False).
  EXPECT_EQ(Lex("a\r\nb\rc\n"), "D(a\nb\nc)$");
  EXPECT_EQ(Lex("a\n\n"), "D(a\n)$");
}

TEST(Lexer, Positions) {
  std::vector<Token> toks = Tokenize("ab\n  {{ x }}", LexerOptions{});
  ASSERT_GE(toks.size(), 3u);
  EXPECT_EQ(toks[1].type, TokType::kVarBegin);
  EXPECT_EQ(toks[1].line, 2);
  EXPECT_EQ(toks[1].column, 3);
  EXPECT_EQ(toks[2].column, 6);
}

TEST(Lexer, Errors) {
  TemplateError e = LexError("ok\n{# never closed");
  EXPECT_EQ(e.kind, ErrorKind::kSyntax);
  EXPECT_EQ(e.message, "Missing end of comment tag");
  EXPECT_EQ(e.line, 2);
  e = LexError("{{ a ? b }}");
  EXPECT_EQ(e.message, "unexpected char '?' at 5");
  EXPECT_EQ(e.column, 6);
  EXPECT_EQ(LexError("{{ (a] }}").message, "unexpected ']', expected ')'");
  EXPECT_EQ(LexError("{{ a) }}").message, "unexpected ')'");
  EXPECT_EQ(LexError("{% raw %} no end").message, "Missing end of raw directive");
  EXPECT_EQ(LexError("{{ 'abc }}").kind, ErrorKind::kSyntax);
  EXPECT_EQ(LexError("{{ '\\x4' }}").kind, ErrorKind::kSyntax);
}

}  // namespace
}  // namespace stet::tmpl

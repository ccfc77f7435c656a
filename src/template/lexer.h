// Lexer: template source -> tokens, reproducing Jinja2 3.1's lexer including
// whitespace control (`{%-`, `-%}`, `+`), trim_blocks, lstrip_blocks, newline
// normalisation, keep_trailing_newline=False and brace balancing inside tags.
// Comments are dropped here; `{% raw %}` content becomes a data token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stet::tmpl {

struct LexerOptions {
  // HF transformers' apply_chat_template settings.
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

enum class TokType : uint8_t {
  kData,
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text holds the unescaped value
  kInt,
  kFloat,
  kOp,  // text holds the operator: + - * / // % ** ~ ( ) [ ] { } == != < <= > >= = . : | , ;
  kEof,
};

struct Token {
  TokType type;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int column = 1;
};

// Throws TemplateError(kSyntax) on malformed input (unterminated comment,
// unexpected character, unbalanced brackets, bad escape).
std::vector<Token> Tokenize(std::string_view source, const LexerOptions& options);

// Newline normalisation: \r\n and \r become \n; one trailing newline is
// dropped unless keep_trailing_newline.
std::string NormalizeSource(std::string_view source, bool keep_trailing_newline);

}  // namespace stet::tmpl

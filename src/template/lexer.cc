// Jinja2-compatible lexer (see lexer.h). Mirrors jinja2/lexer.py's regex
// rules by hand: the earliest tag opener wins, `{% raw %}` is tried before a
// plain block, the end-of-tag rule is tried before operators but only while
// brackets are balanced, and lstrip_blocks strips only spaces and tabs.
#include "template/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "template/error.h"
#include "template/python/unicode.h"

namespace stet::tmpl {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Python's str.rstrip() for the text before a `{%-` tag.
std::string_view RStripPy(std::string_view s) {
  if (IsAscii(s)) {
    size_t e = s.size();
    while (e > 0 && (IsSpace(s[e - 1]) || (s[e - 1] >= 0x1C && s[e - 1] <= 0x1F))) --e;
    return s.substr(0, e);
  }
  std::vector<char32_t> cps = DecodeUtf8(s);
  size_t e = cps.size();
  while (e > 0 && PyIsSpace(cps[e - 1])) --e;
  return s.substr(0, EncodeUtf8(cps, 0, e).size());
}

class Lexer {
 public:
  Lexer(std::string src, const LexerOptions& o) : src_(std::move(src)), opt_(o) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> Run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < src_.size()) {
      size_t p = FindOpener(pos);
      if (p == std::string::npos) {
        Emit(TokType::kData, src_.substr(pos), pos);
        break;
      }
      char kind = src_[p + 1];
      char sign =
          (p + 2 < src_.size() && (src_[p + 2] == '-' || src_[p + 2] == '+')) ? src_[p + 2] : 0;
      size_t raw_end = kind == '%' ? MatchRawBegin(p) : std::string::npos;
      std::string_view text(src_.data() + pos, p - pos);
      text = ApplyLStrip(text, sign, kind == '{', line_starting);
      if (!text.empty()) Emit(TokType::kData, std::string(text), pos);
      if (raw_end != std::string::npos) {
        pos = LexRaw(raw_end, line_starting);
        continue;
      }
      size_t body = p + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        pos = SkipComment(body, p, line_starting);
        continue;
      }
      Emit(kind == '{' ? TokType::kVarBegin : TokType::kBlockBegin, "", p);
      pos = LexTag(body, kind == '%', line_starting);
    }
    Emit(TokType::kEof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  size_t FindOpener(size_t pos) const {
    while (true) {
      size_t p = src_.find('{', pos);
      if (p == std::string::npos || p + 1 >= src_.size()) return std::string::npos;
      char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      pos = p + 1;
    }
  }

  // `{%[-+]?\s*raw\s*(-%}\s*|%})`: returns the end of the match, or npos.
  size_t MatchRawBegin(size_t p) const {
    size_t i = p + 2;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    while (i < src_.size() && IsSpace(src_[i])) ++i;
    if (src_.compare(i, 3, "raw") != 0) return std::string::npos;
    i += 3;
    while (i < src_.size() && IsSpace(src_[i])) ++i;
    if (src_.compare(i, 3, "-%}") == 0) {
      i += 3;
      while (i < src_.size() && IsSpace(src_[i])) ++i;
      return i;
    }
    if (src_.compare(i, 2, "%}") == 0) return i + 2;
    return std::string::npos;
  }

  std::string_view ApplyLStrip(std::string_view text, char sign, bool is_variable,
                               bool line_starting) const {
    if (sign == '-') return RStripPy(text);
    if (sign == '+' || !opt_.lstrip_blocks || is_variable) return text;
    size_t nl = text.rfind('\n');
    size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting) return text;
    for (size_t i = l_pos; i < text.size(); ++i) {
      if (text[i] != ' ' && text[i] != '\t') return text;
    }
    return text.substr(0, l_pos);
  }

  // Matches a block end (`+%}`, `-%}\s*`, `%}\n?`) at i; returns its end or npos.
  size_t MatchBlockEnd(size_t i) const {
    if (src_.compare(i, 3, "+%}") == 0) return i + 3;
    if (src_.compare(i, 3, "-%}") == 0) {
      i += 3;
      while (i < src_.size() && IsSpace(src_[i])) ++i;
      return i;
    }
    if (src_.compare(i, 2, "%}") == 0) {
      i += 2;
      if (opt_.trim_blocks && i < src_.size() && src_[i] == '\n') ++i;
      return i;
    }
    return std::string::npos;
  }

  size_t LexRaw(size_t start, bool& line_starting) {
    size_t search = start;
    while (true) {
      size_t q = src_.find("{%", search);
      if (q == std::string::npos) Fail(start, "Missing end of raw directive");
      size_t i = q + 2;
      char sign = (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ? src_[i] : 0;
      if (sign) ++i;
      while (i < src_.size() && IsSpace(src_[i])) ++i;
      if (src_.compare(i, 6, "endraw") == 0) {
        i += 6;
        while (i < src_.size() && IsSpace(src_[i])) ++i;
        size_t end = MatchBlockEnd(i);
        if (end != std::string::npos) {
          std::string_view text(src_.data() + start, q - start);
          text = ApplyLStrip(text, sign, false, line_starting);
          if (!text.empty()) Emit(TokType::kData, std::string(text), start);
          line_starting = src_[end - 1] == '\n';
          return end;
        }
      }
      search = q + 1;
    }
  }

  size_t SkipComment(size_t body, size_t open, bool& line_starting) {
    size_t q = src_.find("#}", body);
    if (q == std::string::npos) Fail(open, "Missing end of comment tag");
    size_t end;
    if (q > body && src_[q - 1] == '-') {
      end = q + 2;
      while (end < src_.size() && IsSpace(src_[end])) ++end;
    } else if (q > body && src_[q - 1] == '+') {
      end = q + 2;
    } else {
      end = q + 2;
      if (opt_.trim_blocks && end < src_.size() && src_[end] == '\n') ++end;
    }
    line_starting = src_[end - 1] == '\n';
    return end;
  }

  size_t LexTag(size_t pos, bool block, bool& line_starting) {
    std::vector<char> balance;
    while (pos < src_.size()) {
      if (balance.empty()) {
        size_t end = std::string::npos;
        if (block) {
          end = MatchBlockEnd(pos);
        } else if (src_.compare(pos, 3, "-}}") == 0) {
          end = pos + 3;
          while (end < src_.size() && IsSpace(src_[end])) ++end;
        } else if (src_.compare(pos, 2, "}}") == 0) {
          end = pos + 2;
        }
        if (end != std::string::npos) {
          Emit(block ? TokType::kBlockEnd : TokType::kVarEnd, "", pos);
          line_starting = src_[end - 1] == '\n';
          return end;
        }
      }
      char c = src_[pos];
      if (IsSpace(c)) {
        ++pos;
      } else if (IsDigit(c)) {
        pos = LexNumber(pos);
      } else if (IsNameStart(c)) {
        size_t e = pos;
        while (e < src_.size() && IsNameChar(src_[e])) ++e;
        Emit(TokType::kName, src_.substr(pos, e - pos), pos);
        pos = e;
      } else if (c == '\'' || c == '"') {
        pos = LexString(pos);
      } else {
        pos = LexOperator(pos, balance);
      }
    }
    return pos;  // end of input inside a tag: the parser reports it
  }

  size_t LexOperator(size_t pos, std::vector<char>& balance) {
    static const char* kTwo[] = {"**", "//", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (src_.compare(pos, 2, op) == 0) {
        Emit(TokType::kOp, op, pos);
        return pos + 2;
      }
    }
    char c = src_[pos];
    if (!std::strchr("+-/*%~[](){}><=.:|,;", c) || c == 0) {
      std::string shown = c == '\'' ? "\"'\"" : std::string("'") + c + "'";
      Fail(pos, "unexpected char " + shown + " at " + std::to_string(pos));
    }
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) Fail(pos, std::string("unexpected '") + c + "'");
      char expected = balance.back();
      balance.pop_back();
      if (expected != c)
        Fail(pos, std::string("unexpected '") + c + "', expected '" + expected + "'");
    }
    Emit(TokType::kOp, std::string(1, c), pos);
    return pos + 1;
  }

  // Digits with optional single underscores between them: returns the end.
  size_t Digits(size_t i, bool (*ok)(char)) const {
    if (i >= src_.size() || !ok(src_[i])) return std::string::npos;
    while (i < src_.size()) {
      if (ok(src_[i])) {
        ++i;
      } else if (src_[i] == '_' && i + 1 < src_.size() && ok(src_[i + 1])) {
        i += 2;
      } else {
        break;
      }
    }
    return i;
  }

  size_t LexNumber(size_t pos) {
    // Float: digits ((.digits)? e[+-]?digits | .digits), not right after a '.'.
    bool after_dot = pos > 0 && src_[pos - 1] == '.';
    size_t int_end = Digits(pos, IsDigit);
    if (!after_dot) {
      size_t e = int_end;
      bool is_float = false;
      if (e < src_.size() && src_[e] == '.') {
        size_t frac = Digits(e + 1, IsDigit);
        if (frac != std::string::npos) e = frac, is_float = true;
      }
      if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
        size_t x = e + 1;
        if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
        size_t exp = Digits(x, IsDigit);
        if (exp != std::string::npos) e = exp, is_float = true;
      }
      if (is_float) {
        std::string text = src_.substr(pos, e - pos);
        text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
        Token& t = Emit(TokType::kFloat, text, pos);
        t.float_value = std::strtod(text.c_str(), nullptr);
        return e;
      }
    }
    // Integer: 0b/0o/0x prefixes, [1-9](_?\d)*, 0(_?0)*.
    int base = 10;
    size_t e;
    char p1 = pos + 1 < src_.size() ? static_cast<char>(src_[pos + 1] | 0x20) : 0;
    if (src_[pos] == '0' && (p1 == 'b' || p1 == 'o' || p1 == 'x')) {
      base = p1 == 'b' ? 2 : p1 == 'o' ? 8 : 16;
      auto ok = base == 2   ? +[](char c) { return c == '0' || c == '1'; }
                : base == 8 ? +[](char c) { return c >= '0' && c <= '7'; }
                            : +[](char c) { return IsHex(c); };
      size_t d = pos + 2;
      if (d < src_.size() && src_[d] == '_') ++d;
      e = Digits(d, ok);
      if (e == std::string::npos) e = pos + 1, base = 10;  // just the "0"
    } else if (src_[pos] == '0') {
      e = Digits(
          pos, +[](char c) { return c == '0'; });
    } else {
      e = int_end;
    }
    std::string text = src_.substr(pos, e - pos);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    const char* digits = text.c_str() + (base == 10 ? 0 : 2);
    errno = 0;
    long long v = std::strtoll(digits, nullptr, base);
    if (errno == ERANGE) Fail(pos, "integer literal too large: " + text);
    Token& t = Emit(TokType::kInt, text, pos);
    t.int_value = v;
    return e;
  }

  size_t LexString(size_t pos) {
    char q = src_[pos];
    size_t i = pos + 1;
    std::string out;
    while (true) {
      if (i >= src_.size())
        Fail(pos, "unexpected char '" + std::string(1, q) + "' at " + std::to_string(pos));
      char c = src_[i];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size())
        Fail(pos, "unexpected char '" + std::string(1, q) + "' at " + std::to_string(pos));
      char n = src_[i + 1];
      i += 2;
      switch (n) {
        case '\n':
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
        case 'u':
        case 'U': {
          int len = n == 'x' ? 2 : n == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int k = 0; k < len; ++k, ++i) {
            if (i >= src_.size() || !IsHex(src_[i]))
              Fail(pos, "truncated \\" + std::string(1, n) + " escape in string");
            cp = cp * 16 + static_cast<uint32_t>(IsDigit(src_[i]) ? src_[i] - '0'
                                                                  : (src_[i] | 0x20) - 'a' + 10);
          }
          if (cp > 0x10FFFF) Fail(pos, "illegal Unicode character in string");
          // A \uD83D\uDE00 pair becomes one code point.
          if (cp >= 0xD800 && cp < 0xDC00 && src_.compare(i, 2, "\\u") == 0 &&
              i + 6 <= src_.size() &&
              std::all_of(src_.begin() + i + 2, src_.begin() + i + 6, IsHex)) {
            uint32_t lo =
                static_cast<uint32_t>(std::strtoul(src_.substr(i + 2, 4).c_str(), nullptr, 16));
            if (lo >= 0xDC00 && lo < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              i += 6;
            }
          }
          AppendUtf8(out, cp);
          break;
        }
        default:
          if (n >= '0' && n <= '7') {
            uint32_t cp = n - '0';
            for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7';
                 ++k, ++i) {
              cp = cp * 8 + (src_[i] - '0');
            }
            AppendUtf8(out, cp);
          } else {
            out += '\\';
            out += n;
          }
      }
    }
    Emit(TokType::kString, std::move(out), pos);
    return i + 1;
  }

  Token& Emit(TokType type, std::string text, size_t offset) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
    t.line = static_cast<int>(line_index + 1);
    t.column = static_cast<int>(offset - line_starts_[line_index] + 1);
    tokens_.push_back(std::move(t));
    return tokens_.back();
  }

  [[noreturn]] void Fail(size_t offset, std::string message) {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
    TemplateError e{ErrorKind::kSyntax, std::move(message)};
    e.line = static_cast<int>(line_index + 1);
    e.column = static_cast<int>(offset - line_starts_[line_index] + 1);
    throw e;
  }

  std::string src_;
  LexerOptions opt_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::string NormalizeSource(std::string_view source, bool keep_trailing_newline) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<Token> Tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(NormalizeSource(source, options.keep_trailing_newline), options).Run();
}

}  // namespace stet::tmpl

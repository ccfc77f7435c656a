// Code point sets and their JSON-string encodings as GBNF text: the pieces
// the pattern compiler and the format grammars build strings from.
#include "server/structured/json_string_chars.h"

#include <algorithm>

namespace stet::server {
namespace chars {

// ---- code point sets ----

CodeRanges Normalize(CodeRanges r) {
  std::sort(r.begin(), r.end());
  CodeRanges out;
  for (auto [lo, hi] : r) {
    hi = std::min(hi, kMaxCp);
    if (lo > hi) continue;
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.emplace_back(lo, hi);
    }
  }
  return out;
}

// `r` (normalized) minus `cut` (normalized).
CodeRanges Subtract(const CodeRanges& r, const CodeRanges& cut) {
  CodeRanges out;
  for (auto [lo, hi] : r) {
    for (auto [clo, chi] : cut) {
      if (chi < lo || clo > hi) continue;
      if (clo > lo) out.emplace_back(lo, clo - 1);
      if (chi >= hi) {
        lo = 1, hi = 0;  // consumed
        break;
      }
      lo = chi + 1;
    }
    if (lo <= hi) out.emplace_back(lo, hi);
  }
  return out;
}

CodeRanges Within(uint32_t lo, uint32_t hi, const CodeRanges& r) {
  return Subtract({{lo, hi}}, Normalize(r));
}
CodeRanges NoSurrogates(const CodeRanges& r) { return Subtract(Normalize(r), {{0xD800, 0xDFFF}}); }
bool Has(const CodeRanges& r, uint32_t c) {
  for (auto [lo, hi] : r) {
    if (c >= lo && c <= hi) return true;
  }
  return false;
}

// ---- GBNF text ----

std::string Hex(uint32_t v, int digits) {
  static const char* kHex = "0123456789abcdef";
  std::string out(digits, '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) out[i] = kHex[v & 15];
  return out;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The canonical JSON-string content of one code point.
std::string JsonEncode(uint32_t cp) {
  static const char kShort[][2] = {{'"', '"'},  {'\\', '\\'}, {0x08, 'b'}, {0x09, 't'},
                                   {0x0A, 'n'}, {0x0C, 'f'},  {0x0D, 'r'}};
  for (const auto& [c, e] : kShort) {
    if (cp == static_cast<uint32_t>(c)) return std::string("\\") + e;
  }
  if (cp < 0x20 || cp == 0x7F) return "\\u" + Hex(cp, 4);
  std::string out;
  AppendUtf8(cp, &out);
  return out;
}

// A GBNF literal of `bytes` (which hold no control characters).
std::string Literal(const std::string& bytes) {
  std::string out = "\"";
  for (char c : bytes) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string RawLiteral(const std::string& bytes) {
  std::string out = "\"";
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7F) {
      out += "\\x" + Hex(u, 2);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// One code point inside a GBNF class: alphanumerics as themselves, the rest escaped.
static std::string ClassChar(uint32_t c) {
  if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
    return std::string(1, static_cast<char>(c));
  }
  if (c < 0x80) return "\\x" + Hex(c, 2);
  return c <= 0xFFFF ? "\\u" + Hex(c, 4) : "\\U" + Hex(c, 8);
}

std::string ClassText(const CodeRanges& r) {
  std::string out = "[";
  for (auto [lo, hi] : r) {
    out += ClassChar(lo);
    if (hi != lo) out += (hi == lo + 1 ? "" : "-") + ClassChar(hi);
  }
  return out + "]";
}

// What may follow the backslash of an escape for the controls, '"' and '\\'
// of `r` (one alternative each: short escapes, u000x, u001x, u007f).
static std::vector<std::string> EscapeTails(const CodeRanges& r) {
  std::vector<std::string> tails;
  CodeRanges letters;
  for (uint32_t c : {0x22u, 0x5Cu, 0x08u, 0x09u, 0x0Au, 0x0Cu, 0x0Du}) {
    if (Has(r, c)) letters.emplace_back(JsonEncode(c)[1], JsonEncode(c)[1]);
  }
  if (!letters.empty()) {
    tails.push_back(letters.size() == 1 ? Literal(std::string(1, letters[0].first))
                                        : ClassText(Normalize(letters)));
  }
  for (uint32_t high = 0; high < 2; ++high) {
    CodeRanges digits;
    uint32_t last = 0;
    for (uint32_t c = high * 16; c < high * 16 + 16; ++c) {
      if (!Has(r, c) || JsonEncode(c)[1] != 'u') continue;
      digits.emplace_back(Hex(c, 1)[0], Hex(c, 1)[0]);
      last = c;
    }
    if (digits.size() == 1) tails.push_back(Literal("u" + Hex(last, 4)));
    if (digits.size() > 1) {
      tails.push_back(Literal("u00" + Hex(high, 1)) + " " + ClassText(Normalize(digits)));
    }
  }
  if (Has(r, 0x7F)) tails.push_back(Literal("u007f"));
  return tails;
}

}  // namespace chars

using namespace chars;  // NOLINT

// One alternative for the printable characters, one for all the escapes (a
// single backslash stack in the matcher, whatever follows).
std::string JsonCharSetGbnf(const CodeRanges& ranges) {
  const CodeRanges r = NoSurrogates(ranges);
  std::vector<std::string> alts;
  const CodeRanges printable = Subtract(r, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}});
  if (printable.size() == 1 && printable[0].first == printable[0].second) {
    alts.push_back(Literal(JsonEncode(printable[0].first)));
  } else if (!printable.empty()) {
    alts.push_back(ClassText(printable));
  }
  const std::vector<std::string> tails = EscapeTails(r);
  bool atomic = true;
  if (tails.size() == 1 && tails[0][0] == '"' && tails[0].find(' ') == std::string::npos) {
    alts.push_back("\"\\\\" + tails[0].substr(1));  // one literal: "\\n", "\\u0001"
  } else if (!tails.empty()) {
    std::string tail = tails[0];
    for (size_t i = 1; i < tails.size(); ++i) tail += " | " + tails[i];
    alts.push_back(Literal("\\") + " " + (tails.size() == 1 ? tail : "( " + tail + " )"));
    atomic = false;
  }
  if (alts.empty()) return "";
  if (alts.size() == 1 && atomic) return alts[0];
  return "( " + alts[0] + (alts.size() > 1 ? " | " + alts[1] : "") + " )";
}

}  // namespace stet::server

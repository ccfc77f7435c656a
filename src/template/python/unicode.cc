// UTF-8 decoding and Python character classes. Case mapping beyond ASCII uses
// glibc's C.UTF-8 tables through a private locale object (never the global
// locale), so results do not depend on the process environment.
#include "template/python/unicode.h"

#include <locale.h>
#include <string.h>
#include <wctype.h>

#include <algorithm>

#include "template/budget.h"

namespace stet::tmpl {
namespace {

locale_t Utf8Locale() {
  static locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  return loc;
}

bool IsEscapedByte(char32_t c) { return c >= 0xDC80 && c <= 0xDCFF; }

}  // namespace

std::vector<char32_t> DecodeUtf8(std::string_view s) {
  ReserveScratch(s.size() * sizeof(char32_t));
  // Four times the scan: the decoded code points are then classified one by
  // one (iswalnum_l, towupper_l, ...), which costs more than decoding them.
  ChargeScan(4 * s.size());
  std::vector<char32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    }
    int len = 0;
    char32_t cp = 0;
    char32_t min = 0;
    if ((b & 0xE0) == 0xC0) {
      len = 2, cp = b & 0x1F, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3, cp = b & 0x0F, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4, cp = b & 0x07, min = 0x10000;
    }
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      unsigned char c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (!ok) {
      out.push_back(0xDC00 + b);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

void AppendUtf8(std::string& out, char32_t cp) {
  if (IsEscapedByte(cp)) {
    out.push_back(static_cast<char>(cp - 0xDC00));
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string EncodeUtf8(const std::vector<char32_t>& cps, size_t begin, size_t end) {
  ChargeScan(end - begin);
  std::string out;
  out.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) AppendUtf8(out, cps[i]);
  return out;
}

bool IsAscii(std::string_view s) {
  ChargeScan(s.size());
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

size_t CodepointCount(std::string_view s) {
  if (IsAscii(s)) return s.size();
  return DecodeUtf8(s).size();
}

bool PyIsSpace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool PyIsLineBreak(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

bool PyIsAlpha(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (IsEscapedByte(c)) return false;
  locale_t loc = Utf8Locale();
  return loc != nullptr && iswalpha_l(static_cast<wint_t>(c), loc);
}

bool PyIsAlnum(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || PyIsAlpha(c);
  if (IsEscapedByte(c)) return false;
  locale_t loc = Utf8Locale();
  return loc != nullptr && iswalnum_l(static_cast<wint_t>(c), loc);
}

bool PyIsPrintable(char32_t c) {
  if (c < 0x80) return c >= 0x20 && c < 0x7F;
  if (c <= 0xA0 || c == 0xAD) return false;
  if (c >= 0xD800 && c <= 0xDFFF) return false;
  if ((c >= 0x2000 && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
      (c >= 0x202A && c <= 0x202E) || (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF ||
      c == 0x1680 || (c >= 0xE000 && c <= 0xF8FF) || c >= 0xF0000) {
    return false;
  }
  locale_t loc = Utf8Locale();
  return loc == nullptr || iswprint_l(static_cast<wint_t>(c), loc);
}

char32_t PyUpper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (IsEscapedByte(c)) return c;
  locale_t loc = Utf8Locale();
  return loc ? static_cast<char32_t>(towupper_l(static_cast<wint_t>(c), loc)) : c;
}

char32_t PyLower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (IsEscapedByte(c)) return c;
  locale_t loc = Utf8Locale();
  return loc ? static_cast<char32_t>(towlower_l(static_cast<wint_t>(c), loc)) : c;
}

bool PyIsUpper(char32_t c) { return PyLower(c) != c; }
bool PyIsLower(char32_t c) { return PyUpper(c) != c; }

namespace {

// Full upper-case mapping: simple mapping plus the common one-to-many case.
void AppendUpper(std::string& out, char32_t c) {
  if (c == 0xDF) {  // ß
    out += "SS";
    return;
  }
  AppendUtf8(out, PyUpper(c));
}

template <typename F>
std::string MapCodepoints(std::string_view s, F f) {
  ReserveBytes(s.size());
  ChargeScan(s.size());
  std::string out;
  out.reserve(s.size());
  if (IsAscii(s)) {
    for (char c : s) f(out, static_cast<char32_t>(static_cast<unsigned char>(c)));
    return out;
  }
  // A case mapping can lengthen the text (U+0390 upper-cases to 3 code points).
  for (char32_t c : DecodeUtf8(s)) f(out, c);
  ReserveBytes(out.size());
  return out;
}

bool IsCased(char32_t c) { return PyIsUpper(c) || PyIsLower(c); }

// A split's piece in its vector: the std::string, three times over while the
// vector doubles (the old and the new buffer live together).
constexpr size_t kPartBytes = 3 * sizeof(std::string);

// Appends a piece of a split: a list of many tiny strings is many times the
// size of the text it came from, so the total is checked as it grows.
void Add(std::vector<std::string>& parts, std::string piece, size_t& total) {
  total += kPartBytes + piece.size();
  ReserveScratch(total);
  ChargeSteps(8);
  parts.push_back(std::move(piece));
}

}  // namespace

std::string PyStrUpper(std::string_view s) {
  return MapCodepoints(s, [](std::string& o, char32_t c) { AppendUpper(o, c); });
}

std::string PyStrLower(std::string_view s) {
  return MapCodepoints(s, [](std::string& o, char32_t c) { AppendUtf8(o, PyLower(c)); });
}

std::string PyStrCapitalize(std::string_view s) {
  bool first = true;
  return MapCodepoints(s, [&first](std::string& o, char32_t c) {
    if (first) {
      AppendUpper(o, c);
      first = false;
    } else {
      AppendUtf8(o, PyLower(c));
    }
  });
}

std::string PyStrTitle(std::string_view s) {
  bool prev_cased = false;
  return MapCodepoints(s, [&prev_cased](std::string& o, char32_t c) {
    if (prev_cased) {
      AppendUtf8(o, PyLower(c));
    } else {
      AppendUpper(o, c);
    }
    prev_cased = IsCased(c);
  });
}

std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<char32_t> cps = DecodeUtf8(s);
  std::vector<char32_t> set;
  if (chars != nullptr) set = DecodeUtf8(*chars);
  auto strip = [&](char32_t c) {
    if (chars == nullptr) return PyIsSpace(c);
    ChargeScan(set.size());
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strip(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip(cps[e - 1])) --e;
  }
  return EncodeUtf8(cps, b, e);
}

std::vector<std::string> PySplit(std::string_view s, const std::string* sep, int64_t maxsplit,
                                 bool from_right) {
  std::vector<std::string> parts;
  size_t parts_bytes =
      0;  // the parts are a temporary as large as 16x the input: checked as they grow
  if (sep != nullptr) {
    // Byte-wise search is exact for UTF-8 separators.
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        size_t hit = FindBytes(s, *sep, pos);
        if (hit == std::string_view::npos) break;
        parts_bytes += kPartBytes + hit - pos;
        ReserveScratch(parts_bytes);
        ChargeSteps(8);
        parts.emplace_back(s.substr(pos, hit - pos));
        pos = hit + sep->size();
      }
      parts.emplace_back(s.substr(pos));
    } else {
      size_t end = s.size();
      std::vector<std::string> rev;
      while (maxsplit < 0 || static_cast<int64_t>(rev.size()) < maxsplit) {
        if (end < sep->size()) break;
        size_t hit = RFindBytes(s, *sep, end - sep->size());
        if (hit == std::string_view::npos) break;
        parts_bytes += kPartBytes + end - hit - sep->size();
        ReserveScratch(parts_bytes);
        ChargeSteps(8);
        rev.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
        end = hit;
      }
      rev.emplace_back(s.substr(0, end));
      parts.assign(rev.rbegin(), rev.rend());
    }
    return parts;
  }
  std::vector<char32_t> cps = DecodeUtf8(s);
  size_t n = cps.size();
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < n && PyIsSpace(cps[i])) ++i;
      if (i == n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        size_t e = n;
        while (e > i && PyIsSpace(cps[e - 1])) --e;
        Add(parts, EncodeUtf8(cps, i, e), parts_bytes);
        break;
      }
      size_t j = i;
      while (j < n && !PyIsSpace(cps[j])) ++j;
      Add(parts, EncodeUtf8(cps, i, j), parts_bytes);
      i = j;
    }
  } else {
    size_t e = n;
    std::vector<std::string> rev;
    while (true) {
      while (e > 0 && PyIsSpace(cps[e - 1])) --e;
      if (e == 0) break;
      if (maxsplit >= 0 && static_cast<int64_t>(rev.size()) >= maxsplit) {
        size_t b = 0;
        while (b < e && PyIsSpace(cps[b])) ++b;
        Add(rev, EncodeUtf8(cps, b, e), parts_bytes);
        break;
      }
      size_t j = e;
      while (j > 0 && !PyIsSpace(cps[j - 1])) --j;
      Add(rev, EncodeUtf8(cps, j, e), parts_bytes);
      e = j;
    }
    parts.assign(rev.rbegin(), rev.rend());
  }
  return parts;
}

std::vector<std::string> PySplitLines(std::string_view s, bool keepends) {
  std::vector<char32_t> cps = DecodeUtf8(s);
  std::vector<std::string> lines;
  size_t lines_bytes = 0;
  size_t start = 0, i = 0;
  while (i < cps.size()) {
    if (!PyIsLineBreak(cps[i])) {
      ++i;
      continue;
    }
    size_t eol = i;
    size_t next = i + 1;
    if (cps[i] == '\r' && next < cps.size() && cps[next] == '\n') ++next;
    Add(lines, EncodeUtf8(cps, start, keepends ? next : eol), lines_bytes);
    start = i = next;
  }
  if (start < cps.size()) Add(lines, EncodeUtf8(cps, start, cps.size()), lines_bytes);
  return lines;
}

size_t FindBytes(std::string_view s, std::string_view sub, size_t pos) {
  if (pos > s.size() || sub.size() > s.size() - pos) return std::string_view::npos;
  if (sub.empty()) return pos;
  // glibc's memmem is linear: Two-Way for long needles, a bounded hash scan for short ones.
  const void* hit = memmem(s.data() + pos, s.size() - pos, sub.data(), sub.size());
  size_t at = hit == nullptr ? std::string_view::npos : static_cast<const char*>(hit) - s.data();
  ChargeScan((hit == nullptr ? s.size() : at) - pos + sub.size());
  return at;
}

size_t RFindBytes(std::string_view s, std::string_view sub, size_t pos) {
  if (sub.size() > s.size()) return std::string_view::npos;
  const size_t m = sub.size();
  const size_t last = std::min(pos, s.size() - m);  // the rightmost start allowed
  if (m == 0) return last;
  // Knuth-Morris-Pratt over both strings read backwards: the first match
  // found is the rightmost one.
  const size_t n = last + m;
  auto text = [&](size_t i) { return s[n - 1 - i]; };
  auto pat = [&](size_t i) { return sub[m - 1 - i]; };
  ReserveScratch(m * sizeof(size_t));
  ChargeScan(m);
  std::vector<size_t> fail(m, 0);
  for (size_t i = 1, k = 0; i < m; ++i) {
    while (k > 0 && pat(i) != pat(k)) k = fail[k - 1];
    if (pat(i) == pat(k)) ++k;
    fail[i] = k;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    while (k > 0 && text(i) != pat(k)) k = fail[k - 1];
    if (text(i) == pat(k)) ++k;
    if (k == m) {
      ChargeScan(i + 1);
      return n - 1 - i;
    }
  }
  ChargeScan(n);
  return std::string_view::npos;
}

}  // namespace stet::tmpl

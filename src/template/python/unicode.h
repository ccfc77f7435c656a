// UTF-8 and Python `str` character semantics for the template engine: code
// point decoding (invalid bytes round-trip as U+DC80+byte, like Python's
// surrogateescape), Python's whitespace / line-break / case rules, substring
// search. Invariants: Decode then Encode returns the input bytes unchanged,
// valid or not; every function here runs in time linear in its input (the
// search included) and charges that work to the running render's budget.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stet::tmpl {

// Code points of `s`; an invalid byte b becomes 0xDC00 + b.
std::vector<char32_t> DecodeUtf8(std::string_view s);
void AppendUtf8(std::string& out, char32_t cp);
std::string EncodeUtf8(const std::vector<char32_t>& cps, size_t begin, size_t end);
inline std::string EncodeUtf8(const std::vector<char32_t>& cps) {
  return EncodeUtf8(cps, 0, cps.size());
}
bool IsAscii(std::string_view s);
// Python len(str): the number of code points.
size_t CodepointCount(std::string_view s);

bool PyIsSpace(char32_t c);      // str.isspace / str.split() / str.strip()
bool PyIsLineBreak(char32_t c);  // str.splitlines boundaries (\r\n counts once)
bool PyIsAlnum(char32_t c);      // approximates str.isalnum, for \w
bool PyIsAlpha(char32_t c);
bool PyIsPrintable(char32_t c);  // str.isprintable (for repr)
char32_t PyUpper(char32_t c);
char32_t PyLower(char32_t c);
bool PyIsUpper(char32_t c);
bool PyIsLower(char32_t c);

std::string PyStrUpper(std::string_view s);
std::string PyStrLower(std::string_view s);
std::string PyStrCapitalize(std::string_view s);  // str.capitalize
std::string PyStrTitle(std::string_view s);       // str.title

// str.strip / lstrip / rstrip; `chars` null means whitespace.
std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split(sep, maxsplit) / rsplit; sep null means runs of whitespace.
std::vector<std::string> PySplit(std::string_view s, const std::string* sep, int64_t maxsplit,
                                 bool from_right);
std::vector<std::string> PySplitLines(std::string_view s, bool keepends);

// s.find(sub, pos) / s.rfind(sub, pos), byte-wise, in time linear in the
// bytes scanned (std::string's are O(len(s) * len(sub)) on input such as
// "aaaa...a" searched for "aaa...ab").
size_t FindBytes(std::string_view s, std::string_view sub, size_t pos = 0);
size_t RFindBytes(std::string_view s, std::string_view sub, size_t pos = std::string_view::npos);

}  // namespace stet::tmpl

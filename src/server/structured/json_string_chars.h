// Code point sets and how a JSON string writes them, as GBNF text: what the
// pattern compiler (json_schema_pattern) and the format grammars build their
// string grammars from. Invariant: JsonCharSetGbnf matches exactly the
// canonical JSON encodings of its set's code points (surrogates excluded).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stet::server {

// Code point ranges: sorted, disjoint, inclusive.
using CodeRanges = std::vector<std::pair<uint32_t, uint32_t>>;

// The JSON-string content for one code point of `ranges`, in its canonical
// encoding: printable ones (>= 0x20 but not '"', '\\' or 0x7F) as themselves
// (a GBNF [class], or a literal for a single one); '"' as \" and '\\' as \\;
// 0x08 0x09 0x0A 0x0C 0x0D as \b \t \n \f \r; other controls (0x00-0x1F,
// 0x7F) as \u00xx with lowercase hex. Surrogates (D800-DFFF) are left out;
// code points above 0x10FFFF are ignored. At most two alternatives (the
// printable class, and one backslash followed by the escapes), so a matcher
// holds one stack for every escape. The result is atomic (a postfix operator
// may follow it); empty when `ranges` holds no character (the caller must then
// treat the set as matching nothing).
std::string JsonCharSetGbnf(const CodeRanges& ranges);

namespace chars {

constexpr uint32_t kMaxCp = 0x10FFFF;
inline const CodeRanges kAll = {{0, 0xD7FF}, {0xE000, kMaxCp}};
inline const CodeRanges kDigit = {{'0', '9'}};
inline const CodeRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
inline const CodeRanges kSpaceNarrow = {{0x09, 0x0D}, {' ', ' '}};  // every engine's space
inline const CodeRanges kSpaceWide = {{0x09, 0x0D}, {0x1C, 0x20}};  // any engine's (ASCII)

CodeRanges Normalize(CodeRanges r);                                // sorted, merged
CodeRanges Subtract(const CodeRanges& r, const CodeRanges& cut);   // both normalized
CodeRanges Within(uint32_t lo, uint32_t hi, const CodeRanges& r);  // [lo, hi] minus r
CodeRanges NoSurrogates(const CodeRanges& r);
bool Has(const CodeRanges& r, uint32_t c);

std::string Hex(uint32_t v, int digits);  // lowercase, zero-padded
void AppendUtf8(uint32_t cp, std::string* out);
std::string JsonEncode(uint32_t cp);            // the canonical JSON-string content
std::string Literal(const std::string& bytes);  // a GBNF literal (no control characters)
// A GBNF literal of any text: quote, backslash and control characters escaped.
std::string RawLiteral(const std::string& bytes);
std::string ClassText(const CodeRanges& r);  // a GBNF [class]

}  // namespace chars
}  // namespace stet::server

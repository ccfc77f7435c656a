// UTF-8 and byte-level helpers shared by the tokenizer algorithms: lead-byte
// lengths as llama.cpp splits text (never reading past the end), strict
// sequence validation for streaming output, and GPT-2's byte <-> printable
// code point map. Invariant: nothing here reads outside the given bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stet::tok {

// Length of the UTF-8 sequence a byte starts, judged by its high nibble only
// (continuation bytes count 1, F8..FF count 4), as llama.cpp splits symbols.
inline size_t Utf8LeadLength(uint8_t b) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[b >> 4];
}

// The length of the symbol starting at `pos`: Utf8LeadLength clipped to the text.
inline size_t Utf8SymbolLength(std::string_view s, size_t pos) {
  const size_t n = Utf8LeadLength(static_cast<uint8_t>(s[pos]));
  return n < s.size() - pos ? n : s.size() - pos;
}

// Appends the UTF-8 encoding of code point `cp` (must be <= 0x10FFFF).
void AppendUtf8(uint32_t cp, std::string* out);

// Strict UTF-8 (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
enum class Utf8Scan {
  kComplete,    // a whole valid sequence of `length` bytes
  kIncomplete,  // a valid prefix that runs into the end of the input
  kInvalid,     // a maximal invalid subpart of `length` bytes (>= 1)
};
// Classifies the sequence starting at s[pos] (pos < s.size()).
Utf8Scan ScanUtf8(std::string_view s, size_t pos, size_t* length);

// GPT-2 byte-level encoding: each byte maps to one printable code point.
// Returns the UTF-8 of the code point standing for byte `b`.
const std::string& ByteToUnicode(uint8_t b);
// Appends the byte-level encoding of every byte of `bytes` to `out`.
void ByteLevelEncode(std::string_view bytes, std::string* out);
// Inverse of ByteToUnicode for one code point: the byte, or -1 when the code
// point is not one of the 256 byte stand-ins.
int UnicodeToByte(uint32_t cp);
// Decodes byte-level text back to bytes; a code point outside the map is
// copied through as its UTF-8 (a malformed vocabulary must not lose text).
std::string ByteLevelDecode(std::string_view text);

}  // namespace stet::tok

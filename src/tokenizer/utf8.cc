// UTF-8 scanning and GPT-2's byte-level map. The byte map is built once,
// thread-safely (function-local statics), and is a bijection between the 256
// bytes and 256 printable code points below U+0144.
#include "tokenizer/utf8.h"

#include <array>

namespace stet::tok {
namespace {

struct ByteMap {
  std::array<uint32_t, 256> byte_to_cp{};
  std::array<std::string, 256> byte_to_utf8;
  std::array<int16_t, 324> cp_to_byte{};  // all stand-ins are < 256 + 68

  ByteMap() {
    cp_to_byte.fill(-1);
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      byte_to_cp[b] = printable(b) ? static_cast<uint32_t>(b) : next++;
    }
    for (int b = 0; b < 256; ++b) {
      AppendUtf8(byte_to_cp[b], &byte_to_utf8[b]);
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteMap& GetByteMap() {
  static const ByteMap map;
  return map;
}

}  // namespace

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

Utf8Scan ScanUtf8(std::string_view s, size_t pos, size_t* length) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) {
    *length = 1;
    return Utf8Scan::kComplete;
  }
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // > U+10FFFF
  } else {
    *length = 1;
    return Utf8Scan::kInvalid;
  }
  for (size_t i = 1; i < need; ++i) {
    if (pos + i >= s.size()) {
      *length = i;
      return Utf8Scan::kIncomplete;
    }
    const auto b = static_cast<uint8_t>(s[pos + i]);
    const uint8_t min = i == 1 ? lo : 0x80;
    const uint8_t max = i == 1 ? hi : 0xBF;
    if (b < min || b > max) {
      *length = i;  // the lead and the valid continuations so far
      return Utf8Scan::kInvalid;
    }
  }
  *length = need;
  return Utf8Scan::kComplete;
}

const std::string& ByteToUnicode(uint8_t b) { return GetByteMap().byte_to_utf8[b]; }

void ByteLevelEncode(std::string_view bytes, std::string* out) {
  const ByteMap& map = GetByteMap();
  for (char c : bytes) out->append(map.byte_to_utf8[static_cast<uint8_t>(c)]);
}

int UnicodeToByte(uint32_t cp) {
  const ByteMap& map = GetByteMap();
  return cp < map.cp_to_byte.size() ? map.cp_to_byte[cp] : -1;
}

std::string ByteLevelDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len = 0;
    if (ScanUtf8(text, pos, &len) != Utf8Scan::kComplete) {
      out.append(text.substr(pos, len));  // not byte-level text: keep it as is
      pos += len;
      continue;
    }
    const auto* p = reinterpret_cast<const uint8_t*>(text.data() + pos);
    uint32_t cp;
    switch (len) {
      case 1:
        cp = p[0];
        break;
      case 2:
        cp = ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
        break;
      case 3:
        cp = ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
        break;
      default:
        cp = ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) |
             (p[3] & 0x3Fu);
    }
    const int b = UnicodeToByte(cp);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(text.substr(pos, len));
    }
    pos += len;
  }
  return out;
}

}  // namespace stet::tok

// UTF-8 scanning (strict RFC 3629 classes, maximal invalid subparts) and the
// GPT-2 byte-level map (a bijection onto printable code points).
#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

#include <set>

namespace stet::tok {
namespace {

Utf8Scan Scan(std::string_view s, size_t* len) { return ScanUtf8(s, 0, len); }

TEST(Utf8Test, ScanClassifiesSequences) {
  size_t len = 0;
  EXPECT_EQ(Scan("a", &len), Utf8Scan::kComplete);
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(Scan("\xC3\xA9", &len), Utf8Scan::kComplete);
  EXPECT_EQ(len, 2u);
  EXPECT_EQ(Scan("\xF0\x9F\xA6\x99", &len), Utf8Scan::kComplete);  // 🦙
  EXPECT_EQ(len, 4u);
  EXPECT_EQ(Scan("\xF0\x9F\xA6", &len), Utf8Scan::kIncomplete);
  EXPECT_EQ(len, 3u);
  EXPECT_EQ(Scan("\xE2", &len), Utf8Scan::kIncomplete);
  EXPECT_EQ(len, 1u);
}

TEST(Utf8Test, ScanRejectsMalformedWithMaximalSubparts) {
  size_t len = 0;
  EXPECT_EQ(Scan("\x80", &len), Utf8Scan::kInvalid);  // lone continuation
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(Scan("\xC0\x80", &len), Utf8Scan::kInvalid);  // overlong lead
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(Scan("\xE0\x80\x80", &len), Utf8Scan::kInvalid);  // overlong 3-byte
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(Scan("\xED\xA0\x80", &len), Utf8Scan::kInvalid);  // surrogate
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(Scan("\xF4\x90\x80\x80", &len), Utf8Scan::kInvalid);  // > U+10FFFF
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(Scan("\xF5", &len), Utf8Scan::kInvalid);
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(Scan("\xF0\x9F\x41", &len), Utf8Scan::kInvalid);  // truncated by 'A'
  EXPECT_EQ(len, 2u);
}

TEST(Utf8Test, ByteLevelMapIsAPrintableBijection) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string& u = ByteToUnicode(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(u).second) << b;
    EXPECT_NE(u, " ");
  }
  EXPECT_EQ(ByteToUnicode(' '), "\xC4\xA0");   // 'Ġ'
  EXPECT_EQ(ByteToUnicode('\n'), "\xC4\x8A");  // 'Ċ'
  EXPECT_EQ(ByteToUnicode('a'), "a");
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string encoded;
  ByteLevelEncode(all, &encoded);
  EXPECT_EQ(ByteLevelDecode(encoded), all);
}

TEST(Utf8Test, ByteLevelDecodeKeepsForeignText) {
  // Code points outside the map (and invalid bytes) pass through unchanged.
  EXPECT_EQ(ByteLevelDecode("\xE2\x82\xAC"), "\xE2\x82\xAC");  // €
  EXPECT_EQ(ByteLevelDecode("\xFF"), "\xFF");
}

TEST(Utf8Test, LeadLengthFollowsTheHighNibble) {
  EXPECT_EQ(Utf8LeadLength(0x41), 1u);
  EXPECT_EQ(Utf8LeadLength(0x80), 1u);
  EXPECT_EQ(Utf8LeadLength(0xC3), 2u);
  EXPECT_EQ(Utf8LeadLength(0xE2), 3u);
  EXPECT_EQ(Utf8LeadLength(0xF0), 4u);
  EXPECT_EQ(Utf8SymbolLength("\xF0\x9F", 0), 2u);  // clipped to the text
}

}  // namespace
}  // namespace stet::tok

// Streaming detokenization: multi-byte characters split across tokens are
// held back until complete, invalid bytes become U+FFFD as soon as they cannot
// complete, and the stream's total equals Decode for valid text.
#include "tokenizer/stream_decoder.h"

#include <gtest/gtest.h>

#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace stet {
namespace {

using testing::MustCreate;
using testing::TinySpmVocab;

constexpr const char kFffd[] = "\xEF\xBF\xBD";
int32_t ByteId(uint8_t b) { return 3 + b; }  // TinySpmVocab's <0xXX>

TEST(StreamDecoderTest, HoldsBackSplitEmojiFromByteTokens) {
  auto tok = MustCreate(TinySpmVocab({{"\xE2\x96\x81", -1}, {"a", -2}}));
  StreamDecoder stream(*tok);
  EXPECT_EQ(stream.Push(3 + 256 + 1), "a");
  // 🦙 = F0 9F A6 99, one byte token at a time.
  EXPECT_EQ(stream.Push(ByteId(0xF0)), "");
  EXPECT_EQ(stream.Push(ByteId(0x9F)), "");
  EXPECT_EQ(stream.Push(ByteId(0xA6)), "");
  EXPECT_EQ(stream.pending_bytes(), 3u);
  EXPECT_EQ(stream.Push(ByteId(0x99)), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(stream.pending_bytes(), 0u);
  EXPECT_EQ(stream.Flush(), "");
}

TEST(StreamDecoderTest, InvalidBytesBecomeReplacementWhenTheyCannotComplete) {
  auto tok = MustCreate(TinySpmVocab({{"a", -2}}));
  StreamDecoder stream(*tok);
  EXPECT_EQ(stream.Push(ByteId(0xFF)), kFffd);                // never valid
  EXPECT_EQ(stream.Push(ByteId(0xF0)), "");                   // could still complete
  EXPECT_EQ(stream.Push(3 + 256), std::string(kFffd) + "a");  // 'a' ends it
  EXPECT_EQ(stream.Push(ByteId(0xE2)), "");
  EXPECT_EQ(stream.Push(ByteId(0x82)), "");
  EXPECT_EQ(stream.Flush(), kFffd);  // one U+FFFD for the maximal subpart E2 82
  EXPECT_EQ(stream.Flush(), "");
}

TEST(StreamDecoderTest, ControlTokensRenderOnlyWhenAsked) {
  auto tok = MustCreate(TinySpmVocab({{"a", -2}}));
  StreamDecoder plain(*tok);
  EXPECT_EQ(plain.Push(2), "");
  StreamDecoder special(*tok, /*render_special=*/true);
  EXPECT_EQ(special.Push(2), "</s>");
  EXPECT_EQ(special.Push(-7), "");  // out of range: nothing, no crash
}

TEST(StreamDecoderTest, ByteLevelEmojiAcrossTokens) {
  const std::string model = testing::ModelCacheDir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  const std::string gpt2 = testing::VectorsDir() + "/ggml-vocab-gpt-2.gguf";
  std::unique_ptr<Tokenizer> tok;
  if (testing::FileExists(model)) {
    tok = testing::LoadGgufTokenizer(model);
  } else {
    STET_REQUIRE_FILE(gpt2);
    tok = testing::LoadGgufTokenizer(gpt2);
  }
  ASSERT_NE(tok, nullptr);
  const std::string text = "emoji 🙂👍 family 👨\u200d👩\u200d👧 llama 🦙 done — ✅";
  const auto ids = tok->Encode(text, false, false);
  StreamDecoder stream(*tok);
  std::string out;
  int held = 0;
  for (int32_t id : ids) {
    const std::string piece = stream.Push(id);
    if (stream.pending_bytes() > 0) ++held;
    size_t len = 0;
    for (size_t pos = 0; pos < piece.size(); pos += len) {
      ASSERT_EQ(tok::ScanUtf8(piece, pos, &len), tok::Utf8Scan::kComplete) << "partial UTF-8";
    }
    out += piece;
  }
  out += stream.Flush();
  EXPECT_EQ(out, text);
  EXPECT_GT(held, 0) << "expected at least one emoji split across tokens";
}

}  // namespace
}  // namespace stet

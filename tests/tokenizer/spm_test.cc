// SentencePiece merging on hand-made vocabularies: best score first, ties to
// the leftmost pair, byte fallback for characters outside the vocabulary, and
// the space prefix after special tokens.
#include <gtest/gtest.h>

#include "tokenizer_test_util.h"

namespace stet {
namespace {

using testing::MustCreate;
using testing::TinySpmVocab;

constexpr int kFirstPiece = 3 + 256;  // after <unk> <s> </s> and the byte tokens

TEST(SpmTest, MergesByBestScoreTiesLeftmost) {
  // "ab" and "bc" score the same: the leftmost pair merges first.
  auto tok = MustCreate(TinySpmVocab({{"\xE2\x96\x81", -1},
                                      {"a", -2},
                                      {"b", -2},
                                      {"c", -2},
                                      {"ab", -1},
                                      {"bc", -1},
                                      {"\xE2\x96\x81"
                                       "a",
                                       -5}}));
  ASSERT_NE(tok, nullptr);
  const int space = kFirstPiece, c = kFirstPiece + 3, ab = kFirstPiece + 4;
  EXPECT_EQ(tok->Encode("abc", false, false), (std::vector<int32_t>{space, ab, c}));
  // A better score wins over position: "bc" now beats "ab".
  auto tok2 = MustCreate(TinySpmVocab({{"\xE2\x96\x81", -1},
                                       {"a", -2},
                                       {"b", -2},
                                       {"c", -2},
                                       {"ab", -1},
                                       {"bc", -0.5},
                                       {"\xE2\x96\x81"
                                        "a",
                                        -5}}));
  const int bc = kFirstPiece + 5, space_a = kFirstPiece + 6;
  EXPECT_EQ(tok2->Encode("abc", false, false), (std::vector<int32_t>{space_a, bc}));
}

TEST(SpmTest, ByteFallbackForUnknownCharacters) {
  auto tok = MustCreate(TinySpmVocab({{"\xE2\x96\x81", -1}, {"a", -2}}));
  // 'é' = C3 A9 is not a piece: two byte tokens (<0xC3> is id 3 + 0xC3).
  EXPECT_EQ(tok->Encode("a\xC3\xA9", false, false),
            (std::vector<int32_t>{kFirstPiece, kFirstPiece + 1, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tok->Decode(tok->Encode("a\xC3\xA9", true, false)), "a\xC3\xA9");
  // Invalid UTF-8 also falls back to bytes, losslessly.
  const std::string bad = "a\xFF\xC3";
  EXPECT_EQ(tok->Decode(tok->Encode(bad, false, false)), bad);
}

TEST(SpmTest, SpacePrefixAndBos) {
  auto tok = MustCreate(TinySpmVocab({{"\xE2\x96\x81", -1},
                                      {"a", -2},
                                      {"\xE2\x96\x81"
                                       "a",
                                       -0.5}}));
  const int space_a = kFirstPiece + 2;
  EXPECT_EQ(tok->Encode("a", true, false), (std::vector<int32_t>{1, space_a}));
  EXPECT_EQ(tok->Encode("", true, false), (std::vector<int32_t>{1}));
  EXPECT_TRUE(tok->Encode("", false, false).empty());
  // Space prefix after a parsed special token, as llama.cpp.
  EXPECT_EQ(tok->Encode("a</s>a", false, true), (std::vector<int32_t>{space_a, 2, space_a}));
  EXPECT_EQ(tok->Decode({1, space_a}), "a");
  EXPECT_EQ(tok->Decode({1, space_a}, /*render_special=*/true), "<s> a");
  EXPECT_EQ(tok->Decode({space_a, space_a}), "a a");
}

TEST(SpmTest, AddSpacePrefixOff) {
  VocabData v = TinySpmVocab({{"\xE2\x96\x81", -1},
                              {"a", -2},
                              {"\xE2\x96\x81"
                               "a",
                               -0.5}});
  v.add_space_prefix = false;
  auto tok = MustCreate(std::move(v));
  EXPECT_EQ(tok->Encode("a", false, false), (std::vector<int32_t>{kFirstPiece + 1}));
  EXPECT_EQ(tok->Decode({kFirstPiece + 2}), " a");
}

TEST(SpmTest, LongTextIsFast) {
  auto tok =
      MustCreate(TinySpmVocab({{"\xE2\x96\x81", -1}, {"a", -2}, {"aa", -1}, {"aaaa", -0.5}}));
  const std::string text(100000, 'a');
  const auto ids = tok->Encode(text, false, false);
  EXPECT_EQ(tok->Decode(ids), text);
}

}  // namespace
}  // namespace stet

// Byte-level BPE on hand-made vocabularies: merges apply lowest rank first,
// equal pairs leftmost first; ignore_merges takes whole pre-tokens that are
// tokens; text that no merge covers falls back to byte-level characters.
#include <gtest/gtest.h>

#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace stet {
namespace {

using testing::MustCreate;
using testing::TinyBpeVocab;

int32_t Id(const Tokenizer& t, const std::string& text) {
  auto id = t.FindToken(text);
  EXPECT_TRUE(id.has_value()) << text;
  return id.value_or(-1);
}

TEST(BpeTest, MergesByRank) {
  auto tok = MustCreate(TinyBpeVocab({{"a", "b"}, {"b", "c"}, {"ab", "c"}}));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("abc", false, false), (std::vector<int32_t>{Id(*tok, "abc")}));
  // "Ġ" + "abc" has no merge: two tokens.
  EXPECT_EQ(tok->Encode(" abc", false, false),
            (std::vector<int32_t>{Id(*tok, "\xC4\xA0"), Id(*tok, "abc")}));
  auto tok2 = MustCreate(TinyBpeVocab({{"b", "c"}, {"a", "b"}, {"ab", "c"}}));
  EXPECT_EQ(tok2->Encode("abc", false, false),
            (std::vector<int32_t>{Id(*tok2, "a"), Id(*tok2, "bc")}));
}

TEST(BpeTest, EqualPairsMergeLeftmostFirst) {
  auto tok = MustCreate(TinyBpeVocab({{"a", "a"}}));
  EXPECT_EQ(tok->Encode("aaa", false, false),
            (std::vector<int32_t>{Id(*tok, "aa"), Id(*tok, "a")}));
}

TEST(BpeTest, IgnoreMergesTakesWholeTokens) {
  // "abc" is a token but no merge sequence reaches it from "a b c".
  VocabData v = TinyBpeVocab({{"a", "b"}});
  testing::AddToken(&v, "abc", TokenType::kNormal);
  auto with_merges = MustCreate(v);
  EXPECT_EQ(with_merges->Encode("abc", false, false),
            (std::vector<int32_t>{Id(*with_merges, "ab"), Id(*with_merges, "c")}));
  v.ignore_merges = true;
  auto ignoring = MustCreate(v);
  EXPECT_EQ(ignoring->Encode("abc", false, false), (std::vector<int32_t>{Id(*ignoring, "abc")}));
}

TEST(BpeTest, ArbitraryBytesRoundTrip) {
  auto tok = MustCreate(TinyBpeVocab({{"a", "b"}}));
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  all += "ab \xF0\x9F\xA6\x99 \xFF\xFE";
  const auto ids = tok->Encode(all, false, false);
  EXPECT_EQ(tok->Decode(ids), all);
}

TEST(BpeTest, LongWordIsFast) {
  // One 200k-character pre-token: the merge queue must not be quadratic.
  auto tok = MustCreate(TinyBpeVocab({{"a", "a"}, {"aa", "aa"}, {"aaaa", "aaaa"}}));
  const std::string text(200000, 'a');
  const auto ids = tok->Encode(text, false, false);
  EXPECT_EQ(ids.size(), text.size() / 8);
  EXPECT_EQ(tok->Decode(ids), text);
}

}  // namespace
}  // namespace stet

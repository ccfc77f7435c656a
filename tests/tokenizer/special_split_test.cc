// Special-token splitting with llama.cpp's semantics, on hand-made vocabularies:
// control tokens only when parse_special, user-defined always, longest token
// text first, lstrip/rstrip swallowing adjacent whitespace.
#include <gtest/gtest.h>

#include "tokenizer_test_util.h"

namespace stet {
namespace {

using testing::AddToken;
using testing::MustCreate;
using testing::TinyBpeVocab;

class SpecialSplitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    v_ = TinyBpeVocab({});
    im_start_ = AddToken(&v_, "<|im_start|>", TokenType::kControl);
    im_end_ = AddToken(&v_, "<|im_end|>", TokenType::kControl);
    think_ = AddToken(&v_, "<think>", TokenType::kUserDefined);
  }
  std::vector<int32_t> Bytes(const Tokenizer& t, std::string_view s) {
    std::vector<int32_t> ids;
    for (char c : s)
      ids.push_back(static_cast<uint8_t>(c) == ' ' ? *t.FindToken("\xC4\xA0")
                                                   : *t.FindToken(std::string(1, c)));
    return ids;
  }
  VocabData v_;
  int32_t im_start_ = -1, im_end_ = -1, think_ = -1;
};

TEST_F(SpecialSplitTest, ControlTokensOnlyWhenParsingSpecials) {
  auto tok = MustCreate(v_);
  const auto parsed = tok->Encode("<|im_start|>ab<|im_end|>", false, true);
  std::vector<int32_t> want = {im_start_};
  for (int32_t id : Bytes(*tok, "ab")) want.push_back(id);
  want.push_back(im_end_);
  EXPECT_EQ(parsed, want);
  const auto literal = tok->Encode("<|im_start|>", false, false);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), im_start_), 0);
  EXPECT_EQ(tok->Decode(literal), "<|im_start|>");
}

TEST_F(SpecialSplitTest, UserDefinedTokensAlwaysSplit) {
  auto tok = MustCreate(v_);
  std::vector<int32_t> want = {think_};
  for (int32_t id : Bytes(*tok, "a")) want.push_back(id);
  EXPECT_EQ(tok->Encode("<think>a", false, false), want);
  EXPECT_EQ(tok->Decode(want), "<think>a");  // user-defined tokens always render
}

TEST_F(SpecialSplitTest, LongestTokenTextFirst) {
  // llama.cpp takes "bcd" (longer) before "ab", even though "ab" starts first.
  const int32_t ab = AddToken(&v_, "ab", TokenType::kUserDefined);
  const int32_t bcd = AddToken(&v_, "bcd", TokenType::kUserDefined);
  auto tok = MustCreate(v_);
  std::vector<int32_t> want = Bytes(*tok, "a");
  want.push_back(bcd);
  EXPECT_EQ(tok->Encode("abcd", false, false), want);
  EXPECT_EQ(tok->Encode("abab", false, false), (std::vector<int32_t>{ab, ab}));
}

TEST_F(SpecialSplitTest, LstripRstripSwallowWhitespace) {
  v_.lstrip.assign(v_.tokens.size(), 0);
  v_.rstrip.assign(v_.tokens.size(), 0);
  v_.lstrip[im_end_] = 1;
  v_.rstrip[im_start_] = 1;
  auto tok = MustCreate(v_);
  std::vector<int32_t> want = {im_start_};
  for (int32_t id : Bytes(*tok, "a")) want.push_back(id);
  want.push_back(im_end_);
  EXPECT_EQ(tok->Encode("<|im_start|> \n a \t<|im_end|>", false, true), want);
  // Without parse_special the strip flags do nothing.
  EXPECT_EQ(tok->Decode(tok->Encode("<|im_start|> a", false, false)), "<|im_start|> a");
}

TEST_F(SpecialSplitTest, AdjacentAndRepeatedSpecials) {
  auto tok = MustCreate(v_);
  EXPECT_EQ(tok->Encode("<|im_end|><|im_end|><|im_start|>", false, true),
            (std::vector<int32_t>{im_end_, im_end_, im_start_}));
  // A partial special token is plain text.
  EXPECT_EQ(tok->Decode(tok->Encode("<|im_end|", false, true)), "<|im_end|");
}

}  // namespace
}  // namespace stet

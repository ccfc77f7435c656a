// Pre-tokenizer splits: the regex families llama.cpp uses per tokenizer.ggml.pre
// name, lossless splitting of arbitrary bytes, and the error for unknown names.
#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include <random>

namespace stet::tok {
namespace {

std::vector<std::string> Split(std::string_view name, std::string_view text) {
  auto pre = PreTokenizer::Create(name);
  EXPECT_TRUE(pre.ok()) << pre.status().ToString();
  if (!pre.ok()) return {};
  std::vector<std::string_view> pieces;
  (*pre)->Split(text, &pieces);
  return {pieces.begin(), pieces.end()};
}

using V = std::vector<std::string>;

TEST(PreTokenizerTest, Gpt2) {
  EXPECT_EQ(Split("gpt-2", "Hello world's  end 123\n"),
            (V{"Hello", " world", "'s", " ", " end", " 123", "\n"}));
}

TEST(PreTokenizerTest, Llama3GroupsDigitsByThreeAndKeepsNewlinesTogether) {
  EXPECT_EQ(Split("llama-bpe", "Hello 1234567 world!\n\n  x"),
            (V{"Hello", " ", "123", "456", "7", " world", "!\n\n", " ", " x"}));
  EXPECT_EQ(Split("llama3", "I'M"), (V{"I", "'M"}));
}

TEST(PreTokenizerTest, ContractionsDoNotCaseFoldBeyondAscii) {
  // U+212A KELVIN SIGN folds to 'k' under Unicode case-insensitivity; HF's
  // (?i:...) would take it, llama.cpp's ASCII classes (and ours) do not.
  EXPECT_EQ(Split("llama-bpe", "'\xE2\x84\xAA"), (V{"'\xE2\x84\xAA"}));
  EXPECT_EQ(Split("llama-bpe", "'s"), (V{"'s"}));
}

TEST(PreTokenizerTest, Qwen2SplitsEveryDigit) {
  EXPECT_EQ(Split("qwen2", "ab 123"), (V{"ab", " ", "1", "2", "3"}));
}

TEST(PreTokenizerTest, SmolLMSplitsDigitsThenGpt2) {
  EXPECT_EQ(Split("smollm", "x 42y"), (V{"x", " ", "4", "2", "y"}));
}

TEST(PreTokenizerTest, UnknownNameListsSupported) {
  auto pre = PreTokenizer::Create("no-such-pre");
  ASSERT_FALSE(pre.ok());
  EXPECT_NE(pre.status().message().find("no-such-pre"), std::string::npos);
  EXPECT_NE(pre.status().message().find("llama-bpe"), std::string::npos);
  EXPECT_NE(pre.status().message().find("smollm"), std::string::npos);
  EXPECT_EQ(FindPreTokenizer("no-such-pre"), nullptr);
  ASSERT_NE(FindPreTokenizer("llama3"), nullptr);
  EXPECT_STREQ(FindPreTokenizer("llama3")->name, "llama-bpe");
}

TEST(PreTokenizerTest, LongRunsMatchWithoutHittingMatchLimits) {
  // A resource-limit failure would leave the run as one unmatched gap.
  const std::string spaces(1 << 20, ' ');
  EXPECT_EQ(Split("llama-bpe", spaces + "x"), (V{spaces.substr(1), " x"}));
  const std::string bangs(1 << 20, '!');
  EXPECT_EQ(Split("gpt-2", "a " + bangs + "\n"), (V{"a", " " + bangs, "\n"}));
  const std::string letters(1 << 20, 'q');
  EXPECT_EQ(Split("qwen2", letters), (V{letters}));
  const std::string upper(1 << 20, 'Q');
  EXPECT_EQ(Split("gpt-4o", upper), (V{upper}));
}

TEST(PreTokenizerTest, EverySupportedRegexCompilesAndSplitsLosslessly) {
  std::mt19937 rng(7);
  const std::string names[] = {"default",   "gpt-2",  "trillion", "llama-bpe", "dbrx",  "qwen2",
                               "stablelm2", "qwen35", "smollm",   "starcoder", "gpt-4o"};
  for (const std::string& name : names) {
    auto pre = PreTokenizer::Create(name);
    ASSERT_TRUE(pre.ok()) << name << ": " << pre.status().ToString();
    for (int trial = 0; trial < 200; ++trial) {
      std::string text(rng() % 64, '\0');
      for (char& c : text) {
        // Mostly ASCII and valid multi-byte text, some invalid bytes.
        const uint32_t r = rng() % 10;
        c = r < 7 ? static_cast<char>(' ' + rng() % 95) : static_cast<char>(rng() % 256);
      }
      std::vector<std::string_view> pieces;
      (*pre)->Split(text, &pieces);
      std::string joined;
      for (auto p : pieces) {
        EXPECT_FALSE(p.empty());
        joined.append(p);
      }
      EXPECT_EQ(joined, text) << name;
    }
  }
}

}  // namespace
}  // namespace stet::tok

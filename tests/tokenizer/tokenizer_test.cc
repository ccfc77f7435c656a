// Tokenizer behaviour on real vocabularies: chat-template control tokens,
// end-of-generation sets, rendering of specials, Decode conventions, encode
// speed on long text and concurrent use.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tokenizer_test_util.h"

namespace stet {
namespace {

using testing::LoadGgufTokenizer;
using testing::LoadJsonTokenizer;

std::unique_ptr<Tokenizer> Llama3() {
  return LoadJsonTokenizer(testing::TokenizerJsonDir() + "/llama3/tokenizer.json",
                           testing::SharedDir() + "/tokenizers/llama3/tokenizer_config.json");
}
std::unique_ptr<Tokenizer> Qwen3() {
  return LoadJsonTokenizer(testing::TokenizerJsonDir() + "/qwen3/tokenizer.json",
                           testing::SharedDir() + "/tokenizers/qwen3/tokenizer_config.json");
}
std::string Llama2Path() {
  return testing::SharedDir() + "/models/llama-2-tiny-random/llama-2-tiny-random.gguf";
}

#define REQUIRE_LLAMA3() STET_REQUIRE_FILE(testing::TokenizerJsonDir() + "/llama3/tokenizer.json")
#define REQUIRE_QWEN3() STET_REQUIRE_FILE(testing::TokenizerJsonDir() + "/qwen3/tokenizer.json")

TEST(TokenizerTest, Llama3ChatTemplateTokens) {
  REQUIRE_LLAMA3();
  auto tok = Llama3();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 128256);
  EXPECT_EQ(tok->bos(), 128000);
  EXPECT_EQ(tok->eos(), 128001);
  EXPECT_EQ(tok->eot(), 128009);  // <|eot_id|>, found by text
  EXPECT_TRUE(tok->add_bos());
  const std::string text = "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>";
  const auto ids = tok->Encode(text, /*add_special=*/true, /*parse_special=*/true);
  ASSERT_GE(ids.size(), 6u);
  EXPECT_EQ(ids[0], 128000);
  EXPECT_EQ(ids[1], 128006);
  EXPECT_EQ(ids.back(), 128009);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 128007), 1);
  EXPECT_EQ(tok->Decode(ids, /*render_special=*/true), "<|begin_of_text|>" + text);
  EXPECT_EQ(tok->Decode(ids), "user\n\nHi!");
  // Not parsing specials: the markers are ordinary text.
  const auto plain = tok->Encode(text, false, false);
  for (int32_t id : plain) EXPECT_LT(id, 128000);
  EXPECT_EQ(tok->Decode(plain), text);
  EXPECT_TRUE(tok->IsEog(128009));
  EXPECT_TRUE(tok->IsEog(128001));
  EXPECT_FALSE(tok->IsEog(128006));
  EXPECT_FALSE(tok->IsEog(9906));
  EXPECT_TRUE(tok->IsControl(128006));
  EXPECT_EQ(tok->FindToken("<|eot_id|>"), 128009);
  EXPECT_EQ(tok->FindToken("no such token text"), std::nullopt);
  EXPECT_EQ(tok->TokenToPiece(128009), "");
  EXPECT_EQ(tok->TokenToPiece(128009, true), "<|eot_id|>");
}

TEST(TokenizerTest, Qwen3SpecialsAndEog) {
  REQUIRE_QWEN3();
  auto tok = Qwen3();
  ASSERT_NE(tok, nullptr);
  const int32_t im_start = *tok->FindToken("<|im_start|>");
  const int32_t im_end = *tok->FindToken("<|im_end|>");
  const int32_t endoftext = *tok->FindToken("<|endoftext|>");
  EXPECT_EQ(tok->eos(), im_end);  // tokenizer_config.json eos_token
  EXPECT_EQ(tok->bos(), -1);
  EXPECT_FALSE(tok->add_bos());
  EXPECT_TRUE(tok->IsEog(im_end));
  EXPECT_TRUE(tok->IsEog(endoftext));
  EXPECT_FALSE(tok->IsEog(im_start));
  const auto ids = tok->Encode("<|im_start|>user\nhi<|im_end|>\n", true, true);
  EXPECT_EQ(ids.front(), im_start);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), im_end), 1);
  // <think> is a non-special added token: user-defined, split even without
  // parse_special, always rendered (llama.cpp's behaviour for such tokens).
  const int32_t think = *tok->FindToken("<think>");
  EXPECT_EQ(tok->type(think), TokenType::kUserDefined);
  const auto t = tok->Encode("<think>\nok", false, false);
  EXPECT_EQ(t.front(), think);
  EXPECT_EQ(tok->Decode(t), "<think>\nok");
}

TEST(TokenizerTest, Llama2SpmDecodeConventions) {
  STET_REQUIRE_FILE(Llama2Path());
  auto tok = LoadGgufTokenizer(Llama2Path());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  EXPECT_EQ(tok->unk(), 0);
  EXPECT_TRUE(tok->IsEog(2));
  const auto ids = tok->Encode("Hello world", true, false);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 15043, 3186}));
  EXPECT_EQ(tok->Decode(ids), "Hello world");
  EXPECT_EQ(tok->Decode(ids, true), "<s> Hello world");
  EXPECT_EQ(tok->TokenToPiece(15043), " Hello");
  EXPECT_EQ(tok->TokenToPiece(3 + 0x0A), "\n");  // <0x0A>
  EXPECT_EQ(tok->TokenToPiece(-1), "");
  EXPECT_EQ(tok->TokenToPiece(1 << 30), "");
  EXPECT_EQ(tok->Decode({-5, 1 << 30}), "");
  EXPECT_FALSE(tok->IsEog(-1));
  // The text "</s>" is not the EOS token unless specials are parsed.
  EXPECT_EQ(tok->Encode("</s>", false, true), (std::vector<int32_t>{2}));
  EXPECT_NE(tok->Encode("</s>", false, false), (std::vector<int32_t>{2}));
}

TEST(TokenizerTest, CleanUpSpacesIsOptIn) {
  REQUIRE_LLAMA3();
  auto tok = Llama3();
  ASSERT_NE(tok, nullptr);
  const std::string text = "Hello , world ! it 's here . ' ok";
  const auto ids = tok->Encode(text, false, false);
  EXPECT_EQ(tok->Decode(ids), text);
  EXPECT_EQ(tok->Decode(ids, false, /*clean_up_spaces=*/true), "Hello, world! it's here.'ok");
}

std::string LongText() {
  std::string base =
      "The quick brown fox jumps over the lazy dog. 1234567890 ÄÖÜ äöü ß — «quotes» "
      "こんにちは世界 🦙🚀 \n\tdef f(x):\n    return x ** 2  # comment\n";
  std::string text;
  while (text.size() < 10000) text += base;
  return text;
}

// A 10k-character mixed text round-trips through every vocabulary. (How fast it
// encodes is a benchmark's question, not a test's: a wall-clock bound on a shared
// 2-core machine only measures the neighbours: bench/tokenizer measures it.)
TEST(TokenizerTest, LongMixedTextRoundTrips) {
  const std::string text = LongText();
  STET_REQUIRE_FILE(Llama2Path());
  STET_REQUIRE_FILE(testing::TokenizerJsonDir() + "/llama3/tokenizer.json");
  STET_REQUIRE_FILE(testing::TokenizerJsonDir() + "/qwen3/tokenizer.json");
  std::vector<std::pair<std::string, std::unique_ptr<Tokenizer>>> toks;
  toks.emplace_back("llama2-spm", LoadGgufTokenizer(Llama2Path()));
  toks.emplace_back("llama3-bpe", Llama3());
  toks.emplace_back("qwen3-bpe", Qwen3());
  for (auto& [name, tok] : toks) {
    ASSERT_NE(tok, nullptr) << name;
    const auto ids = tok->Encode(text, false, false);
    EXPECT_GT(ids.size(), text.size() / 8) << name;
    EXPECT_EQ(tok->Decode(ids), text) << name;
  }
}

TEST(TokenizerTest, ConcurrentEncodeAgrees) {
  REQUIRE_LLAMA3();
  auto tok = Llama3();
  ASSERT_NE(tok, nullptr);
  const std::string text = LongText();
  const auto want = tok->Encode(text, true, true);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) ok[t] += tok->Encode(text, true, true) == want;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[t], 5);
}

TEST(TokenizerTest, CreateRejectsUnknownPreTokenizer) {
  VocabData v = testing::TinyBpeVocab({});
  v.pre = "mystery";
  auto tok = Tokenizer::Create(v);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("mystery"), std::string::npos);
  EXPECT_NE(tok.status().message().find("qwen2"), std::string::npos);
}

TEST(TokenizerTest, CreateRejectsInconsistentVocab) {
  VocabData v = testing::TinyBpeVocab({});
  v.tokens[5] = v.tokens[4];
  EXPECT_FALSE(Tokenizer::Create(v).ok());
  v = testing::TinyBpeVocab({});
  v.bos_id = 100000;
  EXPECT_EQ(Tokenizer::Create(v).status().code(), StatusCode::kOutOfRange);
  v = testing::TinyBpeVocab({});
  v.add_bos = true;
  EXPECT_FALSE(Tokenizer::Create(v).ok());
  v = testing::TinyBpeVocab({});
  v.scores = {1.0f};
  EXPECT_FALSE(Tokenizer::Create(v).ok());
  v = testing::TinyBpeVocab({});
  v.model = "bert";
  EXPECT_EQ(Tokenizer::Create(v).status().code(), StatusCode::kUnimplemented);
  v = testing::TinyBpeVocab({});
  v.tokens[3].clear();
  EXPECT_FALSE(Tokenizer::Create(v).ok());
  EXPECT_FALSE(Tokenizer::Create(VocabData{}).ok());
}

}  // namespace
}  // namespace stet

// VocabFromGguf on GGUFs built in memory with GgufWriter: defaults per model
// and pre-tokenizer, explicit keys overriding them, and an error naming the key
// for every missing or mistyped one.
#include <gtest/gtest.h>

#include "tokenizer_test_util.h"

namespace stet {
namespace {

std::vector<std::string> SpmTokens() {
  std::vector<std::string> t = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    t.push_back(hex);
  }
  for (const char* p : {"\xE2\x96\x81", "a",
                        "\xE2\x96\x81"
                        "a"})
    t.push_back(p);
  return t;
}

gguf::GgufWriter SpmWriter() {
  gguf::GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetString("tokenizer.ggml.model", "llama");
  const auto tokens = SpmTokens();
  w.SetStringArray("tokenizer.ggml.tokens", tokens);
  std::vector<float> scores(tokens.size(), 0.0f);
  scores.back() = 1.0f;
  w.SetF32Array("tokenizer.ggml.scores", scores);
  std::vector<int32_t> types(tokens.size(), 1);
  types[0] = 2;
  types[1] = types[2] = 3;
  for (int b = 0; b < 256; ++b) types[3 + b] = 6;
  w.SetI32Array("tokenizer.ggml.token_type", types);
  return w;
}

Result<VocabData> Load(const gguf::GgufWriter& w) {
  auto file = gguf::GgufFile::FromBytes(w.Serialize());
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return file.status();
  return VocabFromGguf(**file);
}

TEST(VocabGgufTest, SpmDefaults) {
  auto v = Load(SpmWriter());
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->model, "llama");
  EXPECT_EQ(v->bos_id, 1);
  EXPECT_EQ(v->eos_id, 2);
  EXPECT_EQ(v->unk_id, 0);
  EXPECT_TRUE(v->add_bos);
  EXPECT_FALSE(v->add_eos);
  EXPECT_TRUE(v->add_space_prefix);
  EXPECT_EQ(v->token_types[3], TokenType::kByte);
  auto tok = Tokenizer::Create(std::move(v).value());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->Encode("a", true, false), (std::vector<int32_t>{1, 3 + 256 + 2}));
}

TEST(VocabGgufTest, KeysOverrideDefaults) {
  auto w = SpmWriter();
  w.SetBool("tokenizer.ggml.add_bos_token", false);
  w.SetBool("tokenizer.ggml.add_eos_token", true);
  w.SetBool("tokenizer.ggml.add_space_prefix", false);
  w.SetU32("tokenizer.ggml.eos_token_id", 1);
  w.SetU32("tokenizer.ggml.padding_token_id", 2);
  w.SetU32("tokenizer.ggml.bos_token_id", 999999);  // out of range: default kept, as llama.cpp
  auto v = Load(w);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->add_bos);
  EXPECT_TRUE(v->add_eos);
  EXPECT_FALSE(v->add_space_prefix);
  EXPECT_EQ(v->eos_id, 1);
  EXPECT_EQ(v->pad_id, 2);
  EXPECT_EQ(v->bos_id, 1);
}

TEST(VocabGgufTest, BpeDefaultsFollowThePreTokenizer) {
  gguf::GgufWriter w;
  w.SetString("tokenizer.ggml.model", "gpt2");
  w.SetString("tokenizer.ggml.pre", "llama-bpe");
  w.SetStringArray("tokenizer.ggml.tokens", {"a", "b", "ab", "<|begin_of_text|>", "<|eot_id|>"});
  w.SetI32Array("tokenizer.ggml.token_type", {1, 1, 1, 3, 3});
  w.SetStringArray("tokenizer.ggml.merges", {"a b", "malformed"});
  w.SetU32("tokenizer.ggml.bos_token_id", 3);
  auto v = Load(w);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->add_bos);
  EXPECT_TRUE(v->ignore_merges);
  EXPECT_TRUE(v->clean_spaces);
  EXPECT_FALSE(v->add_space_prefix);
  EXPECT_EQ(v->eos_id, -1);
  ASSERT_EQ(v->merges.size(), 2u);
  EXPECT_TRUE(v->merges[1].first.empty());  // kept as a rank placeholder
  auto tok = Tokenizer::Create(std::move(v).value());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->Encode("ab", true, false), (std::vector<int32_t>{3, 2}));
  EXPECT_EQ((*tok)->eot(), 4);
  EXPECT_TRUE((*tok)->IsEog(4));
}

void ExpectError(const gguf::GgufWriter& w, StatusCode code, const std::string& needle) {
  auto v = Load(w);
  ASSERT_FALSE(v.ok()) << needle;
  EXPECT_EQ(v.status().code(), code) << v.status().ToString();
  EXPECT_NE(v.status().message().find(needle), std::string::npos) << v.status().ToString();
}

TEST(VocabGgufTest, Errors) {
  gguf::GgufWriter empty;
  empty.SetString("general.architecture", "llama");
  ExpectError(empty, StatusCode::kNotFound, "tokenizer.ggml.model");

  gguf::GgufWriter bert;
  bert.SetString("tokenizer.ggml.model", "bert");
  ExpectError(bert, StatusCode::kUnimplemented, "bert");

  gguf::GgufWriter model_type;
  model_type.SetU32("tokenizer.ggml.model", 1);
  ExpectError(model_type, StatusCode::kInvalidArgument, "tokenizer.ggml.model");

  gguf::GgufWriter no_tokens;
  no_tokens.SetString("tokenizer.ggml.model", "llama");
  ExpectError(no_tokens, StatusCode::kNotFound, "tokenizer.ggml.tokens");

  gguf::GgufWriter int_tokens;
  int_tokens.SetString("tokenizer.ggml.model", "llama");
  int_tokens.SetI32Array("tokenizer.ggml.tokens", {1, 2});
  ExpectError(int_tokens, StatusCode::kInvalidArgument, "tokenizer.ggml.tokens");

  auto short_scores = SpmWriter();
  short_scores.SetF32Array("tokenizer.ggml.scores", {0.0f});
  ExpectError(short_scores, StatusCode::kInvalidArgument, "tokenizer.ggml.scores");

  auto string_types = SpmWriter();
  string_types.SetStringArray("tokenizer.ggml.token_type", {"x"});
  ExpectError(string_types, StatusCode::kInvalidArgument, "tokenizer.ggml.token_type");

  auto bad_bool = SpmWriter();
  bad_bool.SetString("tokenizer.ggml.add_bos_token", "yes");
  ExpectError(bad_bool, StatusCode::kInvalidArgument, "tokenizer.ggml.add_bos_token");

  auto bad_id = SpmWriter();
  bad_id.SetString("tokenizer.ggml.eos_token_id", "2");
  ExpectError(bad_id, StatusCode::kInvalidArgument, "tokenizer.ggml.eos_token_id");

  gguf::GgufWriter no_merges;
  no_merges.SetString("tokenizer.ggml.model", "gpt2");
  no_merges.SetStringArray("tokenizer.ggml.tokens", {"a"});
  ExpectError(no_merges, StatusCode::kNotFound, "tokenizer.ggml.merges");
}

TEST(VocabGgufTest, UnknownPreTokenizerFailsAtCreateWithTheSupportedList) {
  gguf::GgufWriter w;
  w.SetString("tokenizer.ggml.model", "gpt2");
  w.SetString("tokenizer.ggml.pre", "future-model");
  w.SetStringArray("tokenizer.ggml.tokens", {"a"});
  w.SetStringArray("tokenizer.ggml.merges", {});
  auto v = Load(w);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  auto tok = Tokenizer::Create(std::move(v).value());
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("future-model"), std::string::npos);
  EXPECT_NE(tok.status().message().find("llama-bpe"), std::string::npos);
}

}  // namespace
}  // namespace stet

// VocabFromTokenizerJson: hand-written tokenizer.json files covering both merge
// forms, added tokens, id holes, post-processor BOS/EOS and tokenizer_config
// overrides, plus the errors for inputs stet cannot or will not load.
#include <gtest/gtest.h>

#include "tokenizer_test_util.h"

namespace stet {
namespace {

// A byte-level vocabulary of "a", "b", "Ġ", "ab" with a configurable tail.
std::string Json(const std::string& merges, const std::string& pre, const std::string& extra = "") {
  return R"({"version": "1.0", "added_tokens": [
      {"id": 4, "content": "<|end|>", "special": true, "lstrip": false, "rstrip": true},
      {"id": 6, "content": "<tool>", "special": false}],
    "pre_tokenizer": )" +
         pre + R"(,
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "\u0120": 2, "ab": 3},
              "merges": )" +
         merges + "}" + extra + "}";
}
const char kByteLevel[] = R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})";

TEST(VocabJsonTest, LoadsBothMergeFormsAndAddedTokens) {
  for (const std::string merges : {R"(["a b"])", R"([["a", "b"]])"}) {
    auto v = VocabFromTokenizerJson(Json(merges, kByteLevel), "");
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->model, "gpt2");
    EXPECT_EQ(v->pre, "gpt-2");
    ASSERT_EQ(v->tokens.size(), 7u);
    EXPECT_EQ(v->merges.size(), 1u);
    EXPECT_EQ(v->merges[0], (std::pair<std::string, std::string>("a", "b")));
    EXPECT_EQ(v->token_types[4], TokenType::kControl);
    EXPECT_EQ(v->token_types[6], TokenType::kUserDefined);
    EXPECT_EQ(v->tokens[5], "[PAD5]");  // the hole
    EXPECT_EQ(v->token_types[5], TokenType::kUnused);
    EXPECT_EQ(v->rstrip[4], 1);
    auto tok = Tokenizer::Create(std::move(v).value());
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    EXPECT_EQ((*tok)->Encode("ab", false, false), (std::vector<int32_t>{3}));
    EXPECT_EQ((*tok)->Encode("ab<|end|>  b", false, true), (std::vector<int32_t>{3, 4, 1}));
    EXPECT_TRUE((*tok)->IsEog(4));
  }
}

TEST(VocabJsonTest, IdentifiesPreTokenizers) {
  const std::string llama3 = R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated"},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})";
  auto v = VocabFromTokenizerJson(Json(R"(["a b"])", llama3), "");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->pre, "llama-bpe");
  EXPECT_TRUE(v->ignore_merges);  // llama.cpp's default for llama-bpe
  const std::string smollm = R"({"type": "Sequence", "pretokenizers": [
      {"type": "Digits", "individual_digits": true}, )" +
                             std::string(kByteLevel) + "]}";
  v = VocabFromTokenizerJson(Json(R"(["a b"])", smollm), "");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->pre, "smollm");
}

TEST(VocabJsonTest, SpecialTokensFromPostProcessorAndConfig) {
  const std::string pp = R"(, "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<|end|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]})";
  auto v = VocabFromTokenizerJson(Json(R"(["a b"])", kByteLevel, pp), "");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->add_bos);
  EXPECT_EQ(v->bos_id, 4);
  v = VocabFromTokenizerJson(Json(R"(["a b"])", kByteLevel, pp),
                             R"({"add_bos_token": false, "eos_token": {"content": "<|end|>"},
                                 "pad_token": "<tool>", "clean_up_tokenization_spaces": false})");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->add_bos);
  EXPECT_EQ(v->eos_id, 4);
  EXPECT_EQ(v->pad_id, 6);
  EXPECT_FALSE(v->clean_spaces);
}

void ExpectError(const std::string& json, const std::string& config, const std::string& needle) {
  auto v = VocabFromTokenizerJson(json, config);
  ASSERT_FALSE(v.ok()) << needle;
  EXPECT_NE(v.status().message().find(needle), std::string::npos) << v.status().ToString();
}

TEST(VocabJsonTest, Errors) {
  ExpectError("", "", "tokenizer.json");
  ExpectError("{not json", "", "parse");
  ExpectError("[1, 2]", "", "model");
  ExpectError(R"({"model": {"type": "Unigram", "vocab": []}})", "", "Unigram");
  ExpectError(R"({"model": {"type": "BPE", "vocab": [1]}})", "", "model.vocab");
  ExpectError(Json(R"(["a b"])", "null"), "", "pre_tokenizer");
  ExpectError(Json(R"(["a b"])", R"({"type": "Metaspace"})"), "", "Metaspace");
  ExpectError(Json(R"(["a b"])", R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\w+"}}, {"type": "ByteLevel"}]})"),
              "", "matches no known pre-tokenizer");
  ExpectError(Json(R"([42])", kByteLevel), "", "merge");
  ExpectError(Json(R"("a b")", kByteLevel), "", "merges");
  ExpectError(Json(R"(["a b"])", kByteLevel), R"({"eos_token": "<missing>"})", "<missing>");
  ExpectError(Json(R"(["a b"])", kByteLevel), "[]", "tokenizer_config.json");
  ExpectError(R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []},
                 "pre_tokenizer": {"type": "ByteLevel"}})",
              "", "not an integer id");
  ExpectError(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 100000000}, "merges": []},
                 "pre_tokenizer": {"type": "ByteLevel"}})",
              "", "far beyond");
}

TEST(VocabJsonTest, AddBosWithoutBosFailsAtCreate) {
  auto v = VocabFromTokenizerJson(Json(R"(["a b"])", kByteLevel),
                                  R"({"add_bos_token": true, "bos_token": 7})");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  auto tok = Tokenizer::Create(std::move(v).value());
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("bos"), std::string::npos);
}

}  // namespace
}  // namespace stet

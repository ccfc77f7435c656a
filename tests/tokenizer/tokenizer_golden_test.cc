// Golden tokenization against llama.cpp: its test-tokenizer-0 vectors
// (shared/tokenizers/llamacpp-vectors, generated from the HF tokenizers) for
// five vocabularies, the full Llama-2 vocabulary inside a model GGUF, and
// tests/golden/smollm2/llamacpp_tokenize.json (llama.cpp via llama-cpp-python
// on SmolLM2-135M-Instruct, with and without special-token parsing).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/stream_decoder.h"
#include "tokenizer_test_util.h"

namespace stet {
namespace {

using testing::LoadGgufTokenizer;
using testing::LoadJsonTokenizer;
using testing::ReadVectors;
using testing::VectorsDir;

std::string Ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

// Every vector must match; returns the number that did.
int CheckVectors(const Tokenizer& tok, const std::string& vectors_base) {
  const auto cases = ReadVectors(vectors_base);
  EXPECT_FALSE(cases.empty()) << vectors_base;
  int passed = 0;
  for (const auto& c : cases) {
    const std::vector<int32_t> got = tok.Encode(c.text, /*add_special=*/false,
                                                /*parse_special=*/false);
    EXPECT_EQ(got, c.ids) << "text: '" << c.text << "'\n got: " << Ids(got)
                          << "\nwant: " << Ids(c.ids);
    if (got == c.ids) ++passed;
  }
  std::printf("[vectors] %s: %d/%zu passed\n", vectors_base.c_str(), passed, cases.size());
  return passed;
}

// Decode(Encode(s)) == s, and streaming the same ids gives the same text.
void CheckRoundTrip(const Tokenizer& tok, const std::string& vectors_base) {
  for (const auto& c : ReadVectors(vectors_base)) {
    const auto ids = tok.Encode(c.text, false, false);
    EXPECT_EQ(tok.Decode(ids), c.text) << "ids: " << Ids(ids);
    const auto with_bos = tok.Encode(c.text, true, false);
    EXPECT_EQ(tok.Decode(with_bos), c.text) << "ids: " << Ids(with_bos);
    if (tok.vocab().add_space_prefix) continue;  // the stream keeps the prefix space
    StreamDecoder stream(tok);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.Push(id);
    streamed += stream.Flush();
    EXPECT_EQ(streamed, c.text);
  }
}

struct GgufVocabCase {
  const char* vectors;  // NAME in ggml-vocab-NAME.gguf.{inp,out}
  const char* gguf;     // path relative to the shared dir
};

void PrintTo(const GgufVocabCase& c, std::ostream* os) { *os << c.vectors << " @ " << c.gguf; }

class GgufVectorsTest : public ::testing::TestWithParam<GgufVocabCase> {};

TEST_P(GgufVectorsTest, MatchesLlamaCpp) {
  const std::string path = testing::SharedDir() + "/" + GetParam().gguf;
  const std::string base = VectorsDir() + "/ggml-vocab-" + GetParam().vectors + ".gguf";
  STET_REQUIRE_FILE(path);
  STET_REQUIRE_FILE(base + ".inp");
  auto tok = LoadGgufTokenizer(path);
  ASSERT_NE(tok, nullptr);
  const auto n = ReadVectors(base).size();
  EXPECT_EQ(CheckVectors(*tok, base), static_cast<int>(n));
  CheckRoundTrip(*tok, base);
}

INSTANTIATE_TEST_SUITE_P(
    Vocabs, GgufVectorsTest,
    ::testing::Values(
        GgufVocabCase{"gpt-2", "tokenizers/llamacpp-vectors/ggml-vocab-gpt-2.gguf"},
        GgufVocabCase{"llama-spm", "tokenizers/llamacpp-vectors/ggml-vocab-llama-spm.gguf"},
        GgufVocabCase{"phi-3", "tokenizers/llamacpp-vectors/ggml-vocab-phi-3.gguf"},
        GgufVocabCase{"llama-spm", "models/llama-2-tiny-random/llama-2-tiny-random.gguf"}),
    [](const auto& info) {
      std::string name = std::string(info.param.vectors) + "_" +
                         (std::string(info.param.gguf).find("models/") == 0 ? "model" : "vocab");
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

struct JsonVocabCase {
  const char* vectors;
  const char* dir;  // tokenizers/<dir>/tokenizer.json(.xz) + tokenizer_config.json
};

void PrintTo(const JsonVocabCase& c, std::ostream* os) { *os << c.vectors << " @ " << c.dir; }

class JsonVectorsTest : public ::testing::TestWithParam<JsonVocabCase> {};

TEST_P(JsonVectorsTest, MatchesLlamaCpp) {
  const std::string json = testing::TokenizerJsonDir() + "/" + GetParam().dir + "/tokenizer.json";
  const std::string config =
      testing::SharedDir() + "/tokenizers/" + GetParam().dir + "/tokenizer_config.json";
  const std::string base = VectorsDir() + "/ggml-vocab-" + GetParam().vectors + ".gguf";
  STET_REQUIRE_FILE(json);
  STET_REQUIRE_FILE(config);
  STET_REQUIRE_FILE(base + ".inp");
  auto tok = LoadJsonTokenizer(json, config);
  ASSERT_NE(tok, nullptr);
  const auto n = ReadVectors(base).size();
  EXPECT_EQ(CheckVectors(*tok, base), static_cast<int>(n));
  CheckRoundTrip(*tok, base);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, JsonVectorsTest,
                         ::testing::Values(JsonVocabCase{"llama-bpe", "llama3"},
                                           JsonVocabCase{"qwen2", "qwen3"}),
                         [](const auto& info) {
                           std::string name = info.param.vectors;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST(SmolLM2GoldenTest, MatchesLlamaCppTokenizeAndDetokenize) {
  const std::string model = testing::ModelCacheDir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  const std::string golden = testing::SourceDir() + "/tests/golden/smollm2/llamacpp_tokenize.json";
  STET_REQUIRE_FILE(model);
  STET_REQUIRE_FILE(golden);
  auto tok = LoadGgufTokenizer(model);
  ASSERT_NE(tok, nullptr);
  const auto doc = nlohmann::json::parse(testing::ReadFileOrDie(golden));
  ASSERT_TRUE(doc.contains("cases"));
  EXPECT_EQ(doc.value("add_bos", true), tok->add_bos());
  int passed = 0, total = 0;
  for (const auto& c : doc["cases"]) {
    const std::string text = c["text"].get<std::string>();
    for (const bool special : {false, true}) {
      const std::string suffix = special ? "true" : "false";
      const auto want = c["ids_special_" + suffix].get<std::vector<int32_t>>();
      const auto got = tok->Encode(text, /*add_special=*/false, /*parse_special=*/special);
      EXPECT_EQ(got, want) << "parse_special=" << special << " text: '" << text << "'";
      // The golden detokenizes with special=true.
      EXPECT_EQ(tok->Decode(want, /*render_special=*/true),
                c["detok_special_" + suffix].get<std::string>());
      passed += got == want;
      ++total;
    }
  }
  std::printf("[golden] smollm2 llamacpp_tokenize.json: %d/%d passed\n", passed, total);
}

}  // namespace
}  // namespace stet

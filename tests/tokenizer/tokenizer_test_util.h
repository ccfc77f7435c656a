// Test helpers for the tokenizer layer: loading a Tokenizer from a shared GGUF
// or tokenizer.json, and reading llama.cpp's test-tokenizer-0 vector files
// (.inp: strings separated by "\n__ggml_vocab_test__\n"; .out: one line of
// space-separated ids per string; encoded with add_special=false,
// parse_special=false).
#pragma once

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "format/gguf.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace stet::testing {

// Directory holding the decompressed tokenizer.json files (set by CMake).
inline std::string TokenizerJsonDir() { return STET_TOKENIZER_JSON_DIR; }
inline std::string VectorsDir() { return SharedDir() + "/tokenizers/llamacpp-vectors"; }

inline std::unique_ptr<Tokenizer> LoadGgufTokenizer(const std::string& path) {
  auto file = gguf::GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << path << ": " << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto vocab = VocabFromGguf(**file);
  EXPECT_TRUE(vocab.ok()) << path << ": " << vocab.status().ToString();
  if (!vocab.ok()) return nullptr;
  auto tok = Tokenizer::Create(std::move(vocab).value());
  EXPECT_TRUE(tok.ok()) << path << ": " << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

inline std::unique_ptr<Tokenizer> LoadJsonTokenizer(const std::string& json_path,
                                                    const std::string& config_path) {
  const std::string json = ReadFileOrDie(json_path);
  const std::string config = config_path.empty() ? "" : ReadFileOrDie(config_path);
  auto vocab = VocabFromTokenizerJson(json, config);
  EXPECT_TRUE(vocab.ok()) << json_path << ": " << vocab.status().ToString();
  if (!vocab.ok()) return nullptr;
  auto tok = Tokenizer::Create(std::move(vocab).value());
  EXPECT_TRUE(tok.ok()) << json_path << ": " << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

struct VectorCase {
  std::string text;
  std::vector<int32_t> ids;
};

// Reads NAME.inp / NAME.out exactly as llama.cpp's test-tokenizer-0 does.
inline std::vector<VectorCase> ReadVectors(const std::string& base) {
  const std::string inp = ReadFileOrDie(base + ".inp");
  const std::string out = ReadFileOrDie(base + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<std::vector<int32_t>> ids;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    std::vector<int32_t> line;
    size_t p = pos;
    while (p < eol) {
      while (p < eol && (out[p] == ' ' || out[p] == '\r')) ++p;
      if (p >= eol) break;
      size_t q = p;
      while (q < eol && out[q] != ' ' && out[q] != '\r') ++q;
      line.push_back(std::stoi(out.substr(p, q - p)));
      p = q;
    }
    ids.push_back(std::move(line));
    pos = eol + 1;
  }
  EXPECT_EQ(texts.size(), ids.size()) << base;
  std::vector<VectorCase> cases;
  for (size_t i = 0; i < texts.size() && i < ids.size(); ++i) {
    cases.push_back({texts[i], ids[i]});
  }
  return cases;
}

}  // namespace stet::testing

namespace stet::testing {

// A small SentencePiece vocabulary: <unk> <s> </s>, the 256 byte tokens, then
// `pieces` (text, score) as normal tokens.
inline VocabData TinySpmVocab(const std::vector<std::pair<std::string, float>>& pieces) {
  VocabData v;
  v.model = "llama";
  auto add = [&](std::string text, float score, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(score);
    v.token_types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    add(hex, 0, TokenType::kByte);
  }
  for (const auto& [text, score] : pieces) add(text, score, TokenType::kNormal);
  ApplyVocabDefaults(&v);
  return v;
}

// A small byte-level BPE vocabulary: the 256 byte-level characters, then one
// token per merge result, in merge order.
inline VocabData TinyBpeVocab(const std::vector<std::pair<std::string, std::string>>& merges,
                              const std::string& pre = "gpt-2") {
  VocabData v;
  v.model = "gpt2";
  v.pre = pre;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    s = tok::ByteToUnicode(static_cast<uint8_t>(b));
    v.tokens.push_back(s);
  }
  for (const auto& m : merges) {
    v.merges.push_back(m);
    if (std::find(v.tokens.begin(), v.tokens.end(), m.first + m.second) == v.tokens.end()) {
      v.tokens.push_back(m.first + m.second);
    }
  }
  v.token_types.assign(v.tokens.size(), TokenType::kNormal);
  ApplyVocabDefaults(&v);
  return v;
}

inline std::unique_ptr<Tokenizer> MustCreate(VocabData v) {
  auto t = Tokenizer::Create(std::move(v));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

// Appends `id` as a new token of `type` and returns its id.
inline int32_t AddToken(VocabData* v, const std::string& text, TokenType type) {
  v->tokens.push_back(text);
  if (!v->scores.empty()) v->scores.push_back(0);
  v->token_types.resize(v->tokens.size() - 1, TokenType::kNormal);
  v->token_types.push_back(type);
  if (!v->lstrip.empty()) v->lstrip.push_back(0);
  if (!v->rstrip.empty()) v->rstrip.push_back(0);
  return static_cast<int32_t>(v->tokens.size() - 1);
}

}  // namespace stet::testing

// libFuzzer target for the tokenizer layer. Any bytes, in one of four modes
// chosen by the first byte: Encode (BPE, then checks ids are in range and that
// Decode gives the text back — byte-level BPE is lossless), Encode (SPM: ids in
// range), ids -> TokenToPiece/Decode/StreamDecoder (the stream must emit only
// valid UTF-8), and VocabFromTokenizerJson on the bytes as a tokenizer.json.
// Vocabularies: built in, or the file named by $STET_TOKENIZER_FUZZ_VOCAB
// (a GGUF, or a tokenizer.json when the name ends in .json) used for both.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

using stet::Tokenizer;
using stet::TokenType;
using stet::VocabData;

void Require(bool cond, const char* what) {
  if (!cond) {
    std::fprintf(stderr, "tokenizer_fuzz: invariant failed: %s\n", what);
    std::abort();
  }
}

int32_t Add(VocabData* v, const std::string& text, TokenType type, float score = 0) {
  v->tokens.push_back(text);
  v->token_types.push_back(type);
  if (v->model == "llama") v->scores.push_back(score);
  return static_cast<int32_t>(v->tokens.size() - 1);
}

void AddSpecials(VocabData* v) {
  Add(v, "<|im_start|>", TokenType::kControl);
  Add(v, "<|im_end|>", TokenType::kControl);
  Add(v, "<|im", TokenType::kControl);  // a prefix of the others
  Add(v, "<think>", TokenType::kUserDefined);
  Add(v, "\xE2\x96\x81<tool>", TokenType::kUserDefined);
}

VocabData BuiltinBpe() {
  VocabData v;
  v.model = "gpt2";
  v.pre = "llama-bpe";
  for (int b = 0; b < 256; ++b)
    Add(&v, stet::tok::ByteToUnicode(static_cast<uint8_t>(b)), TokenType::kNormal);
  const char* merges[][2] = {{"\xC4\xA0", "t"},        {"h", "e"}, {"\xC4\xA0t", "he"}, {"i", "n"},
                             {"\xC4\xA0", "\xC4\xA0"}, {"1", "2"}, {"\xC3", "\xA9"},    {"e", "r"}};
  for (const auto& m : merges) {
    v.merges.emplace_back(m[0], m[1]);
    const std::string joined = std::string(m[0]) + m[1];
    bool have = false;
    for (const auto& t : v.tokens) have = have || t == joined;
    if (!have) Add(&v, joined, TokenType::kNormal);
  }
  AddSpecials(&v);
  stet::ApplyVocabDefaults(&v);
  v.add_bos = false;
  return v;
}

VocabData BuiltinSpm() {
  VocabData v;
  v.model = "llama";
  Add(&v, "<unk>", TokenType::kUnknown);
  Add(&v, "<s>", TokenType::kControl);
  Add(&v, "</s>", TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    Add(&v, hex, TokenType::kByte);
  }
  const char* pieces[] = {"\xE2\x96\x81",
                          "a",
                          "b",
                          "ab",
                          ("\xE2\x96\x81"
                           "a"),
                          "\xE2\x96\x81\xE2\x96\x81",
                          "\xC3\xA9",
                          "t",
                          "he",
                          "the",
                          "\xE2\x96\x81the"};
  float score = -1;
  for (const char* p : pieces) Add(&v, p, TokenType::kNormal, score -= 0.5f);
  AddSpecials(&v);
  v.scores.resize(v.tokens.size(), 0);
  stet::ApplyVocabDefaults(&v);
  return v;
}

std::unique_ptr<Tokenizer> FromEnv() {
  const char* path = std::getenv("STET_TOKENIZER_FUZZ_VOCAB");
  if (path == nullptr || *path == '\0') return nullptr;
  const std::string p = path;
  stet::Result<VocabData> vocab = stet::InvalidArgument("unset");
  if (p.size() > 5 && p.compare(p.size() - 5, 5, ".json") == 0) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    vocab = stet::VocabFromTokenizerJson(ss.str(), "");
  } else {
    auto file = stet::gguf::GgufFile::Open(p);
    if (!file.ok()) {
      std::fprintf(stderr, "tokenizer_fuzz: %s\n", file.status().ToString().c_str());
      std::abort();
    }
    vocab = stet::VocabFromGguf(**file);
  }
  Require(vocab.ok(), "STET_TOKENIZER_FUZZ_VOCAB loads");
  auto tok = Tokenizer::Create(std::move(vocab).value());
  Require(tok.ok(), "STET_TOKENIZER_FUZZ_VOCAB builds a tokenizer");
  return std::move(tok).value();
}

struct Tokenizers {
  std::unique_ptr<Tokenizer> bpe, spm;
  bool external = false;
  Tokenizers() {
    if (auto t = FromEnv()) {
      external = true;
      bpe = std::move(t);
      return;
    }
    auto b = Tokenizer::Create(BuiltinBpe());
    auto s = Tokenizer::Create(BuiltinSpm());
    Require(b.ok() && s.ok(), "built-in vocabularies build");
    bpe = std::move(b).value();
    spm = std::move(s).value();
  }
};

const Tokenizers& Get() {
  static const Tokenizers t;
  return t;
}

void CheckIds(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  for (int32_t id : ids) Require(id >= 0 && id < tok.n_vocab(), "encoded id in range");
}

void CheckStream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool render_special) {
  stet::StreamDecoder stream(tok, render_special);
  std::string out;
  for (int32_t id : ids) out += stream.Push(id);
  out += stream.Flush();
  Require(stream.pending_bytes() == 0, "flush empties the stream");
  size_t len = 0;
  for (size_t pos = 0; pos < out.size(); pos += len) {
    Require(stet::tok::ScanUtf8(out, pos, &len) == stet::tok::Utf8Scan::kComplete,
            "stream output is valid UTF-8");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Tokenizers& toks = Get();
  const uint8_t mode = data[0];
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool add_special = mode & 0x10;
  const bool parse_special = mode & 0x20;
  switch (mode & 3) {
    case 0: {  // byte-level BPE: lossless
      const Tokenizer& tok = *toks.bpe;
      const auto ids = tok.Encode(rest, add_special, parse_special);
      CheckIds(tok, ids);
      if (!toks.external && !add_special) {
        Require(tok.Decode(ids, /*render_special=*/true) == rest, "BPE Decode(Encode(s)) == s");
      }
      CheckStream(tok, ids, parse_special);
      break;
    }
    case 1: {  // SentencePiece
      const Tokenizer& tok = toks.spm ? *toks.spm : *toks.bpe;
      const auto ids = tok.Encode(rest, add_special, parse_special);
      CheckIds(tok, ids);
      (void)tok.Decode(ids, parse_special, /*clean_up_spaces=*/true);
      CheckStream(tok, ids, parse_special);
      break;
    }
    case 2: {  // arbitrary ids, in range or not
      for (const Tokenizer* tok : {toks.bpe.get(), toks.spm.get()}) {
        if (tok == nullptr) continue;
        std::vector<int32_t> ids;
        for (size_t i = 0; i + 2 <= rest.size(); i += 2) {
          const int32_t raw =
              static_cast<uint8_t>(rest[i]) | (static_cast<uint8_t>(rest[i + 1]) << 8);
          ids.push_back((mode & 0x40) ? raw - 2 : raw % (tok->n_vocab() + 2) - 1);
        }
        (void)tok->Decode(ids, mode & 0x80, mode & 0x08);
        for (int32_t id : ids) (void)tok->IsEog(id);
        CheckStream(*tok, ids, mode & 0x80);
      }
      break;
    }
    case 3: {  // the bytes as a tokenizer.json
      auto vocab = stet::VocabFromTokenizerJson(rest, "");
      if (!vocab.ok()) break;
      auto tok = Tokenizer::Create(std::move(vocab).value());
      if (!tok.ok()) break;
      const auto ids = (*tok)->Encode("Hello, world! 123 <think>", add_special, parse_special);
      CheckIds(**tok, ids);
      (void)(*tok)->Decode(ids, true);
      break;
    }
  }
  return 0;
}

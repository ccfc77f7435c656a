// Tokenizer throughput: bytes of prompt text encoded per second, for the
// vocabularies of ../shared (Llama 3 and Qwen 3 byte-level BPE from their
// tokenizer.json, Llama 2 SentencePiece from a GGUF) on three texts: mixed
// prose/code/non-Latin script, source code, and a run of spaces (the hostile
// prompt of issue 12: one pre-token as long as the text).
//
//   build/bin/stet_tokenizer_bench [--benchmark_filter=llama3]
//   STET_SHARED_DIR=/path/to/shared overrides the shared directory.
//
// Vocabularies whose files are missing are reported and left out (tokenizer.json
// is read as is or through `xz -dc` from tokenizer.json.xz).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "format/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace {

using stet::Tokenizer;

std::string SharedDir() {
  const char* env = std::getenv("STET_SHARED_DIR");
  return env != nullptr ? env : STET_SHARED_DIR_DEFAULT;
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

// ../shared ships tokenizer.json xz-compressed: read it through `xz -dc`.
bool ReadXz(const std::string& path, std::string* out) {
  if (!std::ifstream(path).good()) return false;
  FILE* p = popen(("xz -dc '" + path + "'").c_str(), "r");
  if (p == nullptr) return false;
  char buf[1 << 16];
  size_t n;
  out->clear();
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  return pclose(p) == 0 && !out->empty();
}

std::unique_ptr<Tokenizer> FromJson(const std::string& dir) {
  std::string json, config;
  if (!ReadFile(dir + "/tokenizer.json", &json) && !ReadXz(dir + "/tokenizer.json.xz", &json))
    return nullptr;
  ReadFile(dir + "/tokenizer_config.json", &config);
  auto vocab = stet::VocabFromTokenizerJson(json, config);
  if (!vocab.ok()) return nullptr;
  auto tok = Tokenizer::Create(std::move(vocab).value());
  return tok.ok() ? std::move(tok).value() : nullptr;
}

std::unique_ptr<Tokenizer> FromGguf(const std::string& path) {
  auto file = stet::gguf::GgufFile::Open(path);
  if (!file.ok()) return nullptr;
  auto vocab = stet::VocabFromGguf(**file);
  if (!vocab.ok()) return nullptr;
  auto tok = Tokenizer::Create(std::move(vocab).value());
  return tok.ok() ? std::move(tok).value() : nullptr;
}

std::string Repeat(const std::string& base, size_t bytes) {
  std::string text;
  while (text.size() < bytes) text += base;
  return text;
}

std::string MixedText() {
  return Repeat(
      "The quick brown fox jumps over the lazy dog. 1234567890 ÄÖÜ äöü ß — «quotes» "
      "こんにちは世界 🦙🚀 Numbers like 3.14159 and 2,718 appear; so do URLs "
      "(https://example.com/a?b=c) and e-mail addresses.\n",
      64 << 10);
}

std::string CodeText() {
  return Repeat(
      "def tokenize(text: str) -> list[int]:\n"
      "    ids = []\n"
      "    for word in text.split():\n"
      "        ids.extend(vocab.get(word, [UNK]))  # unknown words\n"
      "    return ids\n\n"
      "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }\n",
      64 << 10);
}

std::string Spaces() { return std::string(256 << 10, ' '); }

void Encode(benchmark::State& state, const Tokenizer* tok, const std::string* text) {
  size_t n_ids = 0;
  for (auto _ : state) {
    auto ids = tok->Encode(*text, /*add_special=*/true, /*parse_special=*/false);
    n_ids = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text->size()));
  state.counters["ids"] = static_cast<double>(n_ids);
  state.counters["bytes/id"] = static_cast<double>(text->size()) / std::max<size_t>(n_ids, 1);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const std::string shared = SharedDir();
  struct Vocab {
    const char* name;
    std::unique_ptr<Tokenizer> tok;
  };
  Vocab vocabs[] = {
      {"llama3-bpe", FromJson(shared + "/tokenizers/llama3")},
      {"qwen3-bpe", FromJson(shared + "/tokenizers/qwen3")},
      {"llama2-spm", FromGguf(shared + "/models/llama-2-tiny-random/llama-2-tiny-random.gguf")},
  };
  static const std::string texts[] = {MixedText(), CodeText(), Spaces()};
  static const char* text_names[] = {"mixed_64KiB", "code_64KiB", "spaces_256KiB"};
  int registered = 0;
  for (auto& v : vocabs) {
    if (v.tok == nullptr) {
      std::fprintf(stderr, "stet_tokenizer_bench: %s not found under %s, left out\n", v.name,
                   shared.c_str());
      continue;
    }
    for (int t = 0; t < 3; ++t) {
      benchmark::RegisterBenchmark((std::string(v.name) + "/" + text_names[t]).c_str(), Encode,
                                   v.tok.get(), &texts[t])
          ->Unit(benchmark::kMillisecond);
      ++registered;
    }
  }
  if (registered == 0) {
    std::fprintf(stderr, "stet_tokenizer_bench: no vocabulary found (set STET_SHARED_DIR)\n");
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// A model file's tokenizer and the metadata that picks its chat template, for
// tests that render chat prompts without loading the weights. Header-only:
// only the tests that include it link the tokenizer and format layers.
#pragma once

#include <memory>
#include <string>

#include "format/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace stet::testing {

struct GgufTokenizer {
  std::unique_ptr<Tokenizer> tokenizer;  // null when the file is missing or does not load
  std::string architecture;              // general.architecture
  std::string name;                      // general.name and general.basename
};

inline GgufTokenizer LoadGgufTokenizer(const std::string& path) {
  GgufTokenizer out;
  auto f = gguf::GgufFile::Open(path);
  if (!f.ok()) return out;
  auto v = VocabFromGguf(**f);
  if (!v.ok()) return out;
  auto t = Tokenizer::Create(std::move(*v));
  if (!t.ok()) return out;
  out.tokenizer = std::move(*t);
  const auto str = [&](const char* key) {
    auto s = (*f)->GetString(key);
    return s.ok() ? *s : std::string();
  };
  out.architecture = str("general.architecture");
  out.name = str("general.name") + " " + str("general.basename");
  return out;
}

}  // namespace stet::testing

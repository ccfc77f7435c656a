// Regex pre-tokenizers for byte-level BPE: the table of supported
// tokenizer.ggml.pre names (with the flags llama.cpp ties to each) and a PCRE2
// splitter. Invariant: splitting is lossless — the pieces, concatenated, are
// exactly the input bytes, valid UTF-8 or not.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace stet::tok {

struct PreTokenizerInfo {
  const char* name;            // canonical name (e.g. "llama-bpe")
  const char* aliases;         // other tokenizer.ggml.pre names, space-separated
  const char* const* regexes;  // applied in sequence; nullptr-terminated
  bool add_bos;                // llama.cpp's default when add_bos_token is absent
  bool clean_spaces;           // llama.cpp's clean_up_tokenization_spaces default
  bool ignore_merges;
  // The Split regex as written in HF tokenizer.json files (nullptr if none);
  // VocabFromTokenizerJson identifies the pre-tokenizer by it.
  const char* hf_split_regex;
};

// nullptr when the name is not supported.
const PreTokenizerInfo* FindPreTokenizer(std::string_view name);
// "default, gpt-2 (phi-2, ...), llama-bpe (llama3, ...), ..." for error messages.
std::string SupportedPreTokenizers();

class PreTokenizer {
 public:
  static Result<std::unique_ptr<PreTokenizer>> Create(std::string_view name);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Splits `text` as llama.cpp does: each regex in turn splits every current
  // piece into its matches and the unmatched gaps between them. Appends the
  // pieces (views into `text`). Thread-safe.
  void Split(std::string_view text, std::vector<std::string_view>* pieces) const;

 private:
  struct Regex;
  PreTokenizer() = default;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace stet::tok

// VocabData: a tokenizer vocabulary independent of where it came from (a GGUF's
// tokenizer.ggml.* keys or a Hugging Face tokenizer.json), and the loaders that
// fill it. Loaders apply llama.cpp's conventional defaults for absent flags, so
// the same vocabulary from either source tokenizes identically.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace stet::gguf {
class GgufFile;
}

namespace stet {

// GGUF tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct VocabData {
  // "llama" (SentencePiece, merges by score with byte fallback) or "gpt2"
  // (byte-level BPE, merges by rank after a regex pre-tokenizer).
  std::string model;
  // Pre-tokenizer name as in tokenizer.ggml.pre ("llama-bpe", "qwen2", "smollm",
  // ...); "default" for SentencePiece. See SupportedPreTokenizers().
  std::string pre = "default";
  std::vector<std::string> tokens;
  std::vector<float> scores;           // one per token (SPM merge priority), or empty
  std::vector<TokenType> token_types;  // one per token, or empty (all normal)
  // BPE merges in rank order (rank = index). Parts may themselves contain spaces.
  std::vector<std::pair<std::string, std::string>> merges;
  // Per-token special-token matching attributes (HF AddedToken lstrip/rstrip):
  // when a special token is split out of text, whitespace to its left/right is
  // dropped. Empty or one per token.
  std::vector<uint8_t> lstrip;
  std::vector<uint8_t> rstrip;

  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  int32_t eot_id = -1;  // end of turn (<|eot_id|>, <|im_end|>, ...), detected by text when absent
  int32_t eom_id = -1;  // end of message (<|eom_id|>)

  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;  // SPM: prepend ' ' to text that starts a fragment
  bool ignore_merges = false;     // BPE: a pre-token that is itself a token skips merging
  bool clean_spaces = false;      // HF clean_up_tokenization_spaces (Decode option)
};

// Reads tokenizer.ggml.* from a GGUF. Errors name the key and what was found.
Result<VocabData> VocabFromGguf(const gguf::GgufFile& file);

// Reads a Hugging Face tokenizer.json (model.type "BPE" with a ByteLevel
// pre-tokenizer) and, when non-empty, its tokenizer_config.json (bos/eos/pad
// tokens, add_bos_token, add_eos_token, clean_up_tokenization_spaces).
Result<VocabData> VocabFromTokenizerJson(std::string_view tokenizer_json,
                                         std::string_view tokenizer_config_json);

// Flag and id defaults for a model type ("llama" / "gpt2") and pre-tokenizer
// name, as llama.cpp assumes them when a file does not say. Unknown names
// leave the struct unchanged (Tokenizer::Create reports them).
void ApplyVocabDefaults(VocabData* vocab);

// llama.cpp's load-time conventions that depend only on token texts: eot/eom
// found by text when unset; tokens that look like end-of-generation or FIM
// markers (<|im_end|>, <|endoftext|>, <|file_sep|>, ...) become control tokens;
// gpt-oss's <|channel|>/<|message|>/<|start|>/<|constrain|> become user-defined.
// Idempotent.
void ApplySpecialTokenConventions(VocabData* vocab);

// The ids that end generation, sorted: eos, eot, eom, tokens with end-of-turn
// texts and FIM pad/repo/file-separator tokens (llama.cpp's EOG set).
std::vector<int32_t> EndOfGenerationIds(const VocabData& vocab);

// Structural checks: sizes agree, ids are in range, token texts are unique and
// non-empty, the model and pre-tokenizer are supported.
Status ValidateVocab(const VocabData& vocab);

}  // namespace stet

// SentencePiece-style encoding (tokenizer.ggml.model "llama"): starting from
// UTF-8 characters, repeatedly merge the adjacent pair whose concatenation is
// the highest-scoring token (ties: leftmost first), then emit byte tokens
// (<0xXX>) for characters that never became tokens — llama.cpp's algorithm.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/token_map.h"

namespace stet::tok {

class SpmEncoder {
 public:
  // All references must outlive the encoder. `scores` is empty or one per token.
  SpmEncoder(const TokenMap& map, const std::vector<float>& scores, int32_t unk_id);

  // `text` is already normalized: spaces escaped as U+2581 and the space
  // prefix added. Appends token ids to `out`.
  void Encode(std::string_view text, std::vector<int32_t>* out) const;

  // The token for one byte: <0xXX>, else the one-byte text, else unk (or -1).
  int32_t ByteToken(uint8_t b) const { return byte_tokens_[b]; }

 private:
  float Score(int32_t id) const;

  const TokenMap& map_;
  const std::vector<float>& scores_;
  int32_t byte_tokens_[256];
};

}  // namespace stet::tok

// SentencePiece bigram merging: pair_merge.h's greedy merge, highest token
// score first, over the whole text.
#include "tokenizer/spm.h"

#include <cstdio>

#include "tokenizer/pair_merge.h"

namespace stet::tok {

SpmEncoder::SpmEncoder(const TokenMap& map, const std::vector<float>& scores, int32_t unk_id)
    : map_(map), scores_(scores) {
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    int32_t id = map_.Find(hex);
    if (id < 0) id = map_.Find(std::string(1, static_cast<char>(b)));
    byte_tokens_[b] = id >= 0 ? id : unk_id;
  }
}

float SpmEncoder::Score(int32_t id) const {
  return static_cast<size_t>(id) < scores_.size() ? scores_[id] : 0.0f;
}

void SpmEncoder::Encode(std::string_view text, std::vector<int32_t>* out) const {
  if (text.empty()) return;
  // A pair merges when its text is a token, by that token's score.
  auto priority = [this](std::string_view joined, size_t) -> std::optional<float> {
    const int32_t id = map_.Find(joined);
    if (id < 0) return std::nullopt;
    return Score(id);
  };
  MergePairs<float>(text, priority, [&](std::string_view piece) {
    const int32_t id = map_.Find(piece);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
    // Only single characters can fail to be tokens (merges only make tokens).
    for (char c : piece) {
      const int32_t byte_id = byte_tokens_[static_cast<uint8_t>(c)];
      if (byte_id >= 0) out->push_back(byte_id);
    }
  });
}

}  // namespace stet::tok

// Byte-level BPE word encoding (tokenizer.ggml.model "gpt2"): starting from the
// characters of one byte-level-encoded pre-token, repeatedly apply the
// lowest-ranked merge among adjacent pairs (ties: leftmost first) — llama.cpp's
// algorithm, with merge lookups that never copy strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/token_map.h"

namespace stet::tok {

class BpeEncoder {
 public:
  // `map` must outlive the encoder. Merges are in rank order; entries with an
  // empty side are placeholders that never match (their rank stays taken).
  BpeEncoder(const TokenMap& map, const std::vector<std::pair<std::string, std::string>>& merges,
             bool ignore_merges, int32_t unk_id);

  // Appends the tokens of one pre-token already in byte-level form.
  void EncodeWord(std::string_view word, std::vector<int32_t>* out) const;

 private:
  struct MergeKey {
    std::string_view joined;  // left + right
    size_t left_size;
    bool operator==(const MergeKey& o) const {
      return left_size == o.left_size && joined == o.joined;
    }
  };
  struct MergeKeyHash {
    size_t operator()(const MergeKey& k) const {
      return std::hash<std::string_view>()(k.joined) ^ (k.left_size * 0x9E3779B97F4A7C15ull);
    }
  };
  // -1 when no merge joins these two adjacent spans.
  int32_t Rank(std::string_view joined, size_t left_size) const;

  const TokenMap& map_;
  bool ignore_merges_;
  int32_t unk_id_;
  std::vector<std::string> joined_;  // storage the keys point into
  std::unordered_map<MergeKey, int32_t, MergeKeyHash> ranks_;
};

}  // namespace stet::tok

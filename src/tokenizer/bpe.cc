// BPE merging per pre-token: pair_merge.h's greedy merge, lowest merge rank
// first.
#include "tokenizer/bpe.h"

#include "tokenizer/pair_merge.h"
#include "tokenizer/utf8.h"

namespace stet::tok {

BpeEncoder::BpeEncoder(const TokenMap& map,
                       const std::vector<std::pair<std::string, std::string>>& merges,
                       bool ignore_merges, int32_t unk_id)
    : map_(map), ignore_merges_(ignore_merges), unk_id_(unk_id) {
  joined_.reserve(merges.size());
  for (const auto& [left, right] : merges) joined_.push_back(left + right);
  ranks_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    if (merges[i].first.empty() || merges[i].second.empty()) continue;
    // The first (lowest) rank of a duplicated merge wins.
    ranks_.emplace(MergeKey{joined_[i], merges[i].first.size()}, static_cast<int32_t>(i));
  }
}

int32_t BpeEncoder::Rank(std::string_view joined, size_t left_size) const {
  auto it = ranks_.find(MergeKey{joined, left_size});
  return it == ranks_.end() ? -1 : it->second;
}

void BpeEncoder::EncodeWord(std::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const int32_t id = map_.Find(word);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  // Priority -rank: the lowest rank merges first.
  auto priority = [this](std::string_view joined, size_t left_size) -> std::optional<int32_t> {
    const int32_t rank = Rank(joined, left_size);
    if (rank < 0) return std::nullopt;
    return -rank;
  };
  MergePairs<int32_t>(word, priority, [&](std::string_view piece) {
    const int32_t id = map_.Find(piece);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
    // A merge produced text that is not a token (a malformed vocabulary), or a
    // character has no token: fall back to one token per character.
    for (size_t pos = 0; pos < piece.size();) {
      const size_t len = Utf8SymbolLength(piece, pos);
      const int32_t char_id = map_.Find(piece.substr(pos, len));
      if (char_id >= 0) {
        out->push_back(char_id);
      } else if (unk_id_ >= 0) {
        out->push_back(unk_id_);
      }
      pos += len;
    }
  });
}

}  // namespace stet::tok

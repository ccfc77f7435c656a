// BPE merging with a priority queue over a linked list of symbols: O(n log n)
// per pre-token. A queued pair is stale once either side has grown or been
// absorbed (sizes only grow, so equal total size means both are unchanged).
#include "tokenizer/bpe.h"

#include <queue>

#include "tokenizer/utf8.h"

namespace stet::tok {
namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  size_t start;
  size_t n;  // 0 once merged into its left neighbour
};

struct Bigram {
  int32_t rank;
  int32_t left;
  int32_t right;
  size_t size;
};

// Lowest rank first; among equal ranks the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

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
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (size_t pos = 0; pos < word.size();) {
    const size_t len = Utf8SymbolLength(word, pos);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, pos + len == word.size() ? -1 : index + 1, pos, len});
    pos += len;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols[left].n + symbols[right].n;
    const int32_t rank = Rank(word.substr(symbols[left].start, size), symbols[left].n);
    if (rank < 0) return;
    queue.push({rank, left, right, size});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

  for (int32_t i = 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = word.substr(symbols[i].start, symbols[i].n);
    const int32_t id = map_.Find(piece);
    if (id >= 0) {
      out->push_back(id);
      continue;
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
  }
}

}  // namespace stet::tok

// The greedy pair merge SentencePiece (spm.cc) and BPE (bpe.cc) share, with a
// priority queue over a linked list of symbols: O(n log n) in the text length.
// The text starts as its UTF-8 characters; the adjacent pair of highest
// priority (the leftmost among equals) merges, again and again, until no pair
// has one. A queued pair is stale once either side has grown or been absorbed
// (sizes only grow, so an equal total size means both are unchanged); pairs
// are checked on pop, never searched for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "tokenizer/utf8.h"

namespace stet::tok {

// priority(joined, left_size): the merge priority of the pair whose text is
// `joined` (its left side the first left_size bytes), or nullopt when the pair
// does not merge; higher merges first. each(piece) then gets the final pieces
// in text order. text must not be empty.
template <typename Priority, typename PriorityFn, typename EachFn>
void MergePairs(std::string_view text, PriorityFn&& priority, EachFn&& each) {
  struct Symbol {
    int32_t prev;
    int32_t next;
    size_t start;
    size_t n;  // 0 once merged into its left neighbour
  };
  struct Bigram {
    Priority priority;
    int32_t left;
    int32_t right;
    size_t size;
  };
  // Highest priority first; among equals the leftmost pair.
  struct BigramLess {
    bool operator()(const Bigram& a, const Bigram& b) const {
      return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
    }
  };

  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = Utf8SymbolLength(text, pos);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, pos + len == text.size() ? -1 : index + 1, pos, len});
    pos += len;
  }

  std::vector<Bigram> storage;
  storage.reserve(symbols.size());
  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue(BigramLess(),
                                                                     std::move(storage));
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols[left].n + symbols[right].n;
    const std::optional<Priority> p =
        priority(text.substr(symbols[left].start, size), symbols[left].n);
    if (!p) return;
    queue.push({*p, left, right, size});
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
    each(text.substr(symbols[i].start, symbols[i].n));
  }
}

}  // namespace stet::tok

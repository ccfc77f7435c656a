// SentencePiece bigram merging with a priority queue over a linked list of
// symbols: O(n log n) in the text length. A queued pair is stale once either
// side has changed length; pairs are checked on pop, never searched for.
#include "tokenizer/spm.h"

#include <cstdio>
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
  float score;
  int32_t left;
  int32_t right;
  size_t size;
};

// Highest score first; among equal scores the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

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
    const int32_t id = map_.Find(text.substr(symbols[left].start, size));
    if (id < 0) return;
    queue.push({Score(id), left, right, size});
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
    const Symbol& sym = symbols[i];
    const std::string_view piece = text.substr(sym.start, sym.n);
    const int32_t id = map_.Find(piece);
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    // Only single characters can fail to be tokens (merges only make tokens).
    for (char c : piece) {
      const int32_t byte_id = byte_tokens_[static_cast<uint8_t>(c)];
      if (byte_id >= 0) out->push_back(byte_id);
    }
  }
}

}  // namespace stet::tok

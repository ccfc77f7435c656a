// Special-token splitting. A trie scan first finds which special tokens occur
// at all (O(text * match depth)), so the llama.cpp-ordered passes run only for
// those: vocabularies with thousands of specials stay fast on long text.
#include "tokenizer/special_split.h"

#include <algorithm>

namespace stet::tok {
namespace {

bool IsSpecialType(TokenType t) {
  return t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
}

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

SpecialSplitter::SpecialSplitter(const VocabData& vocab) : vocab_(vocab) {
  const auto n = static_cast<int32_t>(vocab.tokens.size());
  rank_.assign(n, -1);
  if (!vocab.token_types.empty()) {
    for (int32_t id = 0; id < n; ++id) {
      if (IsSpecialType(vocab.token_types[id]) && !vocab.tokens[id].empty()) order_.push_back(id);
    }
  }
  std::stable_sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
    return vocab.tokens[a].size() > vocab.tokens[b].size();
  });
  for (size_t i = 0; i < order_.size(); ++i) rank_[order_[i]] = static_cast<int32_t>(i);

  std::fill(std::begin(root_children_), std::end(root_children_), -1);
  nodes_.emplace_back();
  for (int32_t id : order_) {
    int32_t node = 0;
    for (char c : vocab.tokens[id]) {
      const auto byte = static_cast<uint8_t>(c);
      int32_t child = Child(node, byte);
      if (child < 0) {
        child = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        if (node == 0) {
          root_children_[byte] = child;
        } else {
          nodes_[node].children.emplace_back(byte, child);
        }
      }
      node = child;
    }
    nodes_[node].token = id;
  }
}

int32_t SpecialSplitter::Child(int32_t node, uint8_t byte) const {
  if (node == 0) return root_children_[byte];
  for (const auto& [b, child] : nodes_[node].children) {
    if (b == byte) return child;
  }
  return -1;
}

void SpecialSplitter::Split(std::string_view text, bool parse_special,
                            std::vector<Fragment>* out) const {
  out->clear();
  if (text.empty()) return;
  out->push_back({-1, 0, text.size()});
  if (order_.empty()) return;

  std::vector<uint8_t> present(order_.size(), 0);
  bool any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    int32_t node = 0;
    for (size_t j = i; j < text.size(); ++j) {
      node = Child(node, static_cast<uint8_t>(text[j]));
      if (node < 0) break;
      const int32_t id = nodes_[node].token;
      if (id < 0) continue;
      const TokenType type = vocab_.token_types[id];
      if (parse_special || type == TokenType::kUserDefined) {
        present[rank_[id]] = 1;
        any = true;
      }
    }
  }
  if (!any) return;
  for (size_t r = 0; r < order_.size(); ++r) {
    if (present[r]) SplitOne(text, order_[r], out);
  }
}

void SpecialSplitter::SplitOne(std::string_view text, int32_t id,
                               std::vector<Fragment>* frags) const {
  const std::string& special = vocab_.tokens[id];
  const bool lstrip = static_cast<size_t>(id) < vocab_.lstrip.size() && vocab_.lstrip[id];
  const bool rstrip = static_cast<size_t>(id) < vocab_.rstrip.size() && vocab_.rstrip[id];
  std::vector<Fragment> result;
  result.reserve(frags->size() + 2);
  for (const Fragment& frag : *frags) {
    if (frag.token >= 0) {
      result.push_back(frag);
      continue;
    }
    size_t offset = frag.offset;
    size_t length = frag.length;
    while (length > 0) {
      const size_t match = text.substr(0, offset + length).find(special, offset);
      if (match == std::string_view::npos) {
        result.push_back({-1, offset, length});
        break;
      }
      size_t left_length = match - offset;
      if (lstrip) {
        while (left_length > 0 && IsAsciiSpace(text[offset + left_length - 1])) --left_length;
      }
      if (left_length > 0) result.push_back({-1, offset, left_length});
      result.push_back({id, 0, 0});
      size_t right_offset = match + special.size();
      size_t right_length = offset + length - right_offset;
      if (rstrip) {
        while (right_length > 0 && IsAsciiSpace(text[right_offset])) {
          ++right_offset;
          --right_length;
        }
      }
      offset = right_offset;
      length = right_length;
    }
  }
  frags->swap(result);
}

}  // namespace stet::tok

// Splits text around special tokens before the model's algorithm sees it, with
// llama.cpp's semantics: special tokens are taken longest text first (ties: lower
// id), each splitting every remaining text fragment at all its occurrences;
// lstrip/rstrip tokens swallow adjacent ASCII whitespace. User-defined tokens
// always split; control and unknown tokens only when parsing specials.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace stet::tok {

struct Fragment {
  int32_t token = -1;  // >= 0: a special token; -1: text[offset, offset + length)
  size_t offset = 0;
  size_t length = 0;
};

class SpecialSplitter {
 public:
  // `vocab` must outlive the splitter.
  explicit SpecialSplitter(const VocabData& vocab);

  void Split(std::string_view text, bool parse_special, std::vector<Fragment>* out) const;

 private:
  struct Node {
    int32_t token = -1;  // the special token ending here, or -1
    std::vector<std::pair<uint8_t, int32_t>> children;
  };
  int32_t Child(int32_t node, uint8_t byte) const;
  void SplitOne(std::string_view text, int32_t id, std::vector<Fragment>* frags) const;

  const VocabData& vocab_;
  std::vector<int32_t> order_;  // special token ids, longest text first
  std::vector<int32_t> rank_;   // id -> position in order_, -1 if not special
  std::vector<Node> nodes_;     // trie of special token texts; nodes_[0] is the root
  int32_t root_children_[256];
};

}  // namespace stet::tok

// Text -> id lookup over token strings owned elsewhere (the Tokenizer's
// VocabData, which never changes after construction). Lookups take any
// string_view, so the algorithms probe spans of their input without copying.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stet::tok {

class TokenMap {
 public:
  // `tokens` must outlive the map and not be modified. First id wins on
  // duplicates (ValidateVocab rejects them before a Tokenizer is built).
  explicit TokenMap(const std::vector<std::string>& tokens) {
    map_.reserve(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
      map_.emplace(std::string_view(tokens[i]), static_cast<int32_t>(i));
    }
  }
  // -1 when `text` is not a token.
  int32_t Find(std::string_view text) const {
    auto it = map_.find(text);
    return it == map_.end() ? -1 : it->second;
  }

 private:
  std::unordered_map<std::string_view, int32_t> map_;
};

}  // namespace stet::tok

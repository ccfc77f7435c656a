#include "engine/text_stream.h"

#include <algorithm>

namespace stet {

TextStream::TextStream(const Tokenizer& tok, const std::vector<std::string>* stops)
    : decoder_(tok), stops_(stops) {}

std::string TextStream::Push(int32_t id, bool* stopped) {
  held_ += decoder_.Push(id);
  return Release(false, stopped);
}

std::string TextStream::Finish() {
  held_ += decoder_.Flush();
  bool stopped = false;
  return Release(true, &stopped);
}

std::string TextStream::Release(bool final, bool* stopped) {
  *stopped = false;
  // The earliest complete stop string wins.
  size_t cut = std::string::npos;
  for (const std::string& s : *stops_) {
    if (!s.empty()) cut = std::min(cut, held_.find(s));
  }
  if (cut != std::string::npos) {
    *stopped = true;
    std::string out = held_.substr(0, cut);
    held_.clear();
    return out;
  }
  // Hold back the longest suffix that could still grow into a stop string.
  size_t keep = 0;
  if (!final) {
    for (const std::string& s : *stops_) {
      if (s.empty()) continue;
      for (size_t len = std::min(s.size() - 1, held_.size()); len > keep; --len) {
        if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
          keep = len;
          break;
        }
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

}  // namespace stet

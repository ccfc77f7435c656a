// SSE reading and writing. Line splitting accepts "\n", "\r\n" and a bare
// "\r" (the spec allows all three), including a "\r\n" pair that straddles two chunks.
#include "wire/sse.h"

namespace stet::wire {

void SseParser::Feed(std::string_view chunk, std::vector<SseEvent>* out) {
  if (!bom_checked_ && !chunk.empty()) {
    buffer_.append(chunk);
    if (buffer_.size() < 3 &&
        std::string_view("\xEF\xBB\xBF").substr(0, buffer_.size()) == buffer_) {
      return;  // maybe a byte-order mark split across chunks
    }
    bom_checked_ = true;
    std::string all;
    all.swap(buffer_);
    std::string_view v(all);
    if (v.substr(0, 3) == "\xEF\xBB\xBF") v.remove_prefix(3);
    Feed(v, out);
    return;
  }
  size_t start = 0;
  for (size_t i = 0; i < chunk.size(); ++i) {
    const char c = chunk[i];
    if (saw_cr_) {
      saw_cr_ = false;
      if (c == '\n') {
        start = i + 1;
        continue;
      }
    }
    if (c == '\n' || c == '\r') {
      buffer_.append(chunk.substr(start, i - start));
      Line(buffer_, out);
      buffer_.clear();
      start = i + 1;
      saw_cr_ = (c == '\r');
    }
  }
  buffer_.append(chunk.substr(start));
}

void SseParser::Finish(std::vector<SseEvent>* out) {
  if (!buffer_.empty()) {
    Line(buffer_, out);
    buffer_.clear();
  }
  Dispatch(out);
}

void SseParser::Line(std::string_view line, std::vector<SseEvent>* out) {
  if (line.empty()) {
    Dispatch(out);
    return;
  }
  if (line[0] == ':') return;  // comment / keep-alive
  std::string_view field = line, value;
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) pending_.data.push_back('\n');
    pending_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    pending_.event = std::string(value);
  } else if (field == "id") {
    pending_.id = std::string(value);
  }  // "retry" and unknown fields are ignored, as the spec says
}

void SseParser::Dispatch(std::vector<SseEvent>* out) {
  if (has_data_) out->push_back(pending_);
  pending_ = SseEvent{};
  has_data_ = false;
}

std::string SseData(std::string_view data) {
  std::string s = "data: ";
  s.append(data);
  s += "\n\n";
  return s;
}

std::string SseTyped(std::string_view type, std::string_view data) {
  std::string s = "event: ";
  s.append(type);
  s += "\ndata: ";
  s.append(data);
  s += "\n\n";
  return s;
}

}  // namespace stet::wire

// ForEachLine and Trim (text_lines.h).
#include "base/text_lines.h"

namespace stet {

Status ForEachLine(std::string_view text,
                   const std::function<Status(const std::string& line, int lineno)>& fn,
                   const char* blank) {
  int lineno = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(at, end - at));
    at = end + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(blank) == std::string::npos) continue;
    STET_RETURN_IF_ERROR(fn(line, lineno));
  }
  return Status::Ok();
}

std::string Trim(std::string_view s, const char* chars) {
  const size_t b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(chars) - b + 1));
}

}  // namespace stet

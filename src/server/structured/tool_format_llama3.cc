// Llama 3.x tool calls: {"name", "parameters"} as the whole answer, after an
// optional <|python_tag|>, several separated by ";".
#include <nlohmann/json.hpp>
#include <string_view>

#include "server/structured/tool_call_json.h"
#include "server/structured/tool_formats.h"

namespace stet::server {

namespace {

using namespace tool_json;

constexpr std::string_view kTag = "<|python_tag|>";

class Llama3 final : public ToolCallFormat {
 public:
  const char* name() const override { return "llama3"; }
  bool Detects(const std::string& src) const override {
    return src.find(kTag) != npos ||
           (src.find("<|start_header_id|>") != npos && src.find("\"parameters\"") != npos);
  }
  std::string TemplateSample() const override {
    return "<|start_header_id|>assistant<|end_header_id|>\n\n{{- '<|python_tag|>' }}";
  }
  const char* ArgumentsKey() const override { return "parameters"; }
  std::string ForcedRoot(bool many, const std::string&) const override {
    return many ? "call (\"; \" call)*" : "call";
  }
  bool Parse(const std::string& s, const Json& tools, std::vector<ToolCall>* out,
             size_t* first) const override {
    *first = 0;
    size_t pos = SkipSpace(s, 0);
    if (StartsWith(s, pos, kTag)) pos += kTag.size();
    while (true) {
      size_t end = 0;
      auto j = ParseJsonAt(s, SkipSpace(s, pos), &end);
      if (!j || !AddCall(*j, tools, out)) return false;
      pos = SkipSpace(s, end);
      if (pos == s.size()) return true;
      if (s[pos] != ';') return false;
      ++pos;
    }
  }
  size_t CallBound(const std::string& raw) const override { return WholeJsonBound(raw, kTag); }
  std::string Write(const std::vector<ToolCall>& calls) const override {
    return WriteCalls(calls, "parameters", "; ");
  }
};

}  // namespace

const ToolCallFormat& Llama3ToolFormat() {
  static const Llama3 f;
  return f;
}

}  // namespace stet::server

// Hermes / Qwen tool calls: <tool_call>{"name", "arguments"}</tool_call>,
// repeated, after optional content (the closing tag may be cut off at the end
// of the answer, where the model stopped on its end-of-turn token).
#include <nlohmann/json.hpp>
#include <string_view>

#include "server/structured/tool_call_json.h"
#include "server/structured/tool_formats.h"

namespace stet::server {

namespace {

using namespace tool_json;

constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";

class Hermes final : public ToolCallFormat {
 public:
  const char* name() const override { return "hermes"; }
  bool Detects(const std::string& src) const override { return src.find(kOpen) != npos; }
  std::string TemplateSample() const override {
    return "{{- '<tool_call>\\n' + tool_call | tojson + '\\n</tool_call>' }}";
  }
  std::string ForcedRoot(bool many, const std::string&) const override {
    const std::string one = R"("<tool_call>\n" call "\n</tool_call>")";
    return one + (many ? " (\"\\n\" " + one + ")*" : "");
  }
  bool Parse(const std::string& s, const Json& tools, std::vector<ToolCall>* out,
             size_t* first) const override {
    *first = s.find(kOpen);
    if (*first == npos) return false;
    size_t pos = *first;
    while ((pos = SkipSpace(s, pos)) < s.size()) {
      if (!StartsWith(s, pos, kOpen)) return false;
      size_t end = 0;
      auto j = ParseJsonAt(s, SkipSpace(s, pos + kOpen.size()), &end);
      if (!j || !AddCall(*j, tools, out)) return false;
      pos = SkipSpace(s, end);
      if (StartsWith(s, pos, kClose)) {
        pos += kClose.size();
      } else if (pos != s.size()) {
        return false;
      }
    }
    return !out->empty();
  }
  size_t CallBound(const std::string& raw) const override { return MarkerBound(raw, kOpen); }
  std::string Write(const std::vector<ToolCall>& calls) const override {
    return WriteCalls(calls, "arguments", "\n", "<tool_call>\n", "\n</tool_call>");
  }
};

}  // namespace

const ToolCallFormat& HermesToolFormat() {
  static const Hermes f;
  return f;
}

}  // namespace stet::server

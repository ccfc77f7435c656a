// Mistral tool calls: [TOOL_CALLS] then a JSON array of {"name", "arguments"}
// (v3), or name[CALL_ID]id[ARGS]{json} per call, each after its own
// [TOOL_CALLS] (v7 and later).
#include <nlohmann/json.hpp>
#include <string_view>

#include "server/structured/tool_call_json.h"
#include "server/structured/tool_formats.h"

namespace stet::server {

namespace {

using namespace tool_json;

constexpr std::string_view kCalls = "[TOOL_CALLS]", kArgs = "[ARGS]", kId = "[CALL_ID]";

// [{...}, ...] right after the marker: the whole rest of the answer.
bool ParseArray(const std::string& s, size_t pos, const Json& tools, std::vector<ToolCall>* out) {
  size_t end = 0;
  auto j = ParseJsonAt(s, pos, &end);
  if (!j || !j->is_array() || j->empty() || SkipSpace(s, end) != s.size()) return false;
  for (const Json& o : *j) {
    if (!AddCall(o, tools, out)) return false;
  }
  return true;
}

// name[CALL_ID]id[ARGS]{...}, repeated after [TOOL_CALLS].
bool ParseNamed(const std::string& s, size_t pos, const Json& tools, std::vector<ToolCall>* out) {
  while (true) {
    const size_t args = s.find(kArgs, pos);
    if (args == npos) return false;
    std::string name = s.substr(pos, args - pos);
    const size_t id = name.find(kId);
    if (id != npos) name.resize(id);
    size_t end = 0;
    auto j = ParseJsonAt(s, args + kArgs.size(), &end);
    if (!j || !AddNamedCall(Trim(name), *j, tools, out)) return false;
    pos = SkipSpace(s, end);
    if (pos == s.size()) return true;
    if (!StartsWith(s, pos, kCalls)) return false;
    pos += kCalls.size();
  }
}

class Mistral final : public ToolCallFormat {
 public:
  const char* name() const override { return "mistral"; }
  bool Detects(const std::string& src) const override { return src.find(kCalls) != npos; }
  std::string TemplateSample() const override {
    return "{{- '[TOOL_CALLS]' + message.tool_calls | tojson }}";
  }
  std::string ForcedRoot(bool many, const std::string& ws) const override {
    return "\"[TOOL_CALLS][\" call" + (many ? " (\",\" " + ws + " call)*" : std::string()) +
           " \"]\"";
  }
  bool Parse(const std::string& s, const Json& tools, std::vector<ToolCall>* out,
             size_t* first) const override {
    *first = s.find(kCalls);
    if (*first == npos) return false;
    const size_t pos = SkipSpace(s, *first + kCalls.size());
    if (pos < s.size() && s[pos] == '[') return ParseArray(s, pos, tools, out);
    return ParseNamed(s, pos, tools, out);
  }
  size_t CallBound(const std::string& raw) const override { return MarkerBound(raw, kCalls); }
  std::string Write(const std::vector<ToolCall>& calls) const override {
    return "[TOOL_CALLS][" + WriteCalls(calls, "arguments", ", ") + "]";
  }
};

}  // namespace

const ToolCallFormat& MistralToolFormat() {
  static const Mistral f;
  return f;
}

}  // namespace stet::server

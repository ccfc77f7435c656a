// The generic JSON tool-call format, for templates that teach none of the
// others (and the ChatML fallback): the whole answer one JSON value — a call
// {"name", "arguments"}, an array of calls, {"tool_calls": [...]} or
// {"tool_call": {...}}, calls possibly in OpenAI's {"function": {...}} shape.
#include <nlohmann/json.hpp>

#include "server/structured/tool_call_json.h"
#include "server/structured/tool_formats.h"

namespace stet::server {

namespace {

using namespace tool_json;

// The calls a parsed answer holds, in any of the accepted wrappings.
Json CallList(const Json& j) {
  if (j.is_object() && j.contains("tool_calls")) return j["tool_calls"];
  if (j.is_object() && j.contains("tool_call")) return Json::array({j["tool_call"]});
  if (j.is_array()) return j;
  return Json::array({j});
}

class Generic final : public ToolCallFormat {
 public:
  const char* name() const override { return "generic"; }
  bool Detects(const std::string&) const override { return true; }
  std::string TemplateSample() const override { return "{{ messages[0]['content'] }}"; }
  std::string ForcedRoot(bool many, const std::string& ws) const override {
    return many ? "call | \"[\" call (\",\" " + ws + " call)* \"]\"" : "call";
  }
  bool Parse(const std::string& s, const Json& tools, std::vector<ToolCall>* out,
             size_t* first) const override {
    *first = 0;
    size_t end = 0;
    auto j = ParseJsonAt(s, SkipSpace(s, 0), &end);
    if (!j || SkipSpace(s, end) != s.size()) return false;
    const Json calls = CallList(*j);
    if (!calls.is_array() || calls.empty()) return false;
    for (const Json& o : calls) {
      // {"function": {"name", "arguments"}} as OpenAI writes calls, or the call itself.
      const Json& call = o.is_object() && o.contains("function") ? o["function"] : o;
      if (!AddCall(call, tools, out)) return false;
    }
    return true;
  }
  size_t CallBound(const std::string& raw) const override { return WholeJsonBound(raw); }
  std::string Write(const std::vector<ToolCall>& calls) const override {
    const std::string all = WriteCalls(calls, "arguments", ", ");
    return calls.size() == 1 ? all : "[" + all + "]";
  }
};

}  // namespace

const ToolCallFormat& GenericToolFormat() {
  static const Generic f;
  return f;
}

}  // namespace stet::server

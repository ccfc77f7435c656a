// What every tool-call format shares: the registry lookups, the parse that
// numbers the calls, the forced-call grammar around the format's root, and
// call ids (the calls' JSON is the wire module's).
#include "server/structured/tool_calls.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "server/structured/json_schema.h"
#include "server/structured/tool_call_json.h"

namespace stet::server {

namespace {

uint64_t Mix(uint64_t x) {  // SplitMix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One alternative of the `call` rule: {"name": "<fname>", "<key>": <args>}.
std::string CallAlternative(const std::string& fname, const std::string& key,
                            const std::string& args, const std::string& ws) {
  return std::string("\"{\" ") + ws + " " + GbnfLiteral("\"name\"") + " " + ws + " \":\" " + ws +
         " " + GbnfLiteral(Json(fname).dump()) + " " + ws + " \",\" " + ws + " " +
         GbnfLiteral("\"" + key + "\"") + " " + ws + " \":\" " + ws + " " + args + " " + ws +
         " \"}\"";
}

}  // namespace

const ToolCallFormat& DetectToolCallFormat(const std::string& src) {
  for (const ToolCallFormat* f : ToolCallFormats()) {
    if (f->Detects(src)) return *f;
  }
  return *ToolCallFormats().back();  // the generic format detects anything
}

const ToolCallFormat* FindToolCallFormat(const std::string& name) {
  for (const ToolCallFormat* f : ToolCallFormats()) {
    if (name == f->name()) return f;
  }
  return nullptr;
}

ParsedAnswer ParseToolCalls(const ToolCallFormat& f, const std::string& raw,
                            const std::string& text, const Json& tools, uint64_t seed, int choice) {
  ParsedAnswer out;
  out.content = text;
  if (!tools.is_array() || tools.empty()) return out;
  std::vector<ToolCall> calls;
  size_t first = 0;
  if (!f.Parse(raw, tools, &calls, &first)) return out;
  for (size_t i = 0; i < calls.size(); ++i)
    calls[i].id = ToolCallId(seed, choice, static_cast<int>(i));
  out.content = tool_json::Trim(raw.substr(0, first));
  out.calls = std::move(calls);
  return out;
}

Result<std::string> ToolCallGbnf(const ToolCallFormat& f, const Json& tools,
                                 const std::string& name, bool parallel, const Json* text_schema) {
  JsonGrammarBuilder b;
  const std::string ws = b.Blanks();
  std::string calls;
  for (const Json& t : tools) {
    if (!t.is_object()) continue;
    const Json& fn = t.contains("function") ? t["function"] : t;
    if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string()) continue;
    const std::string fname = fn["name"].get<std::string>();
    if (!name.empty() && fname != name) continue;
    Json params = fn.value("parameters", Json(nullptr));
    if (params.is_null()) params = Json{{"type", "object"}};
    auto args = b.AddSchema(params, "args-" + fname);
    if (!args.ok()) {
      return InvalidArgument("tool '" + fname + "' parameters: " + args.status().message());
    }
    calls += (calls.empty() ? "" : " | ") + CallAlternative(fname, f.ArgumentsKey(), *args, ws);
  }
  if (calls.empty()) {
    return InvalidArgument(name.empty() ? "no function in 'tools' to call"
                                        : "the function '" + name + "' is not in 'tools'");
  }
  b.AddRule("call", calls);
  const std::string root = f.ForcedRoot(parallel && name.empty(), ws);
  if (!text_schema) {
    b.AddRule("root", root);
    return b.Text();
  }
  auto text = b.AddSchema(*text_schema, "text");
  if (!text.ok()) return InvalidArgument("the response format: " + text.status().message());
  b.AddRule("calls", root);
  b.AddRule("root", "calls | " + *text);
  return b.Text();
}

std::string ToolCallId(uint64_t seed, int choice, int index) {
  const uint64_t a = Mix(seed ^ Mix((static_cast<uint64_t>(static_cast<uint32_t>(choice)) << 32) |
                                    static_cast<uint32_t>(index)));
  const uint64_t b = Mix(a);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx%08llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b >> 32));
  return std::string("call_") + buf;
}

}  // namespace stet::server

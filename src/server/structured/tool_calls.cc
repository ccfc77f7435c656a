// Tool-call parsing per template family. Every parser either accounts for
// the whole answer after its content (calls and whitespace only) or gives
// up, so a half-written or invented call is returned to the client as text.
#include "server/structured/tool_calls.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace stet::server {

namespace {

constexpr size_t npos = std::string::npos;

bool StartsWith(const std::string& s, size_t pos, std::string_view p) {
  return s.compare(pos, p.size(), p) == 0;
}

size_t SkipSpace(const std::string& s, size_t pos) {
  while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\n' || s[pos] == '\t' || s[pos] == '\r'))
    ++pos;
  return pos;
}

std::string Trim(const std::string& s) {
  const size_t b = SkipSpace(s, 0);
  size_t e = s.size();
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\n' || s[e - 1] == '\t' || s[e - 1] == '\r'))
    --e;
  return s.substr(b, e - b);
}

// Just past the JSON object or array that starts at s[pos]; npos when there is none.
size_t JsonEnd(const std::string& s, size_t pos) {
  if (pos >= s.size() || (s[pos] != '{' && s[pos] != '[')) return npos;
  int depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return npos;
}

std::optional<Json> ParseJsonAt(const std::string& s, size_t pos, size_t* end) {
  *end = JsonEnd(s, pos);
  if (*end == npos) return std::nullopt;
  Json j = Json::parse(s.begin() + static_cast<std::ptrdiff_t>(pos),
                       s.begin() + static_cast<std::ptrdiff_t>(*end), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

bool KnownTool(const Json& tools, const std::string& name) {
  if (!tools.is_array()) return false;
  for (const Json& t : tools) {
    if (!t.is_object()) continue;
    const Json& fn = t.contains("function") ? t["function"] : t;  // chat's nesting, or flat
    if (fn.is_object() && fn.contains("name") && fn["name"].is_string() &&
        fn["name"].get<std::string>() == name) {
      return true;
    }
  }
  return false;
}

// Arguments as a JSON object's compact text; a string holding one counts too.
std::optional<std::string> ArgumentsText(const Json& args) {
  if (args.is_object()) return Dump(args);
  if (args.is_string()) {
    Json j = Json::parse(args.get<std::string>(), nullptr, false);
    if (!j.is_discarded() && j.is_object()) return Dump(j);
  }
  return std::nullopt;
}

// {"name", "arguments" | "parameters"} naming one of the request's tools.
bool AddCall(const Json& o, const Json& tools, std::vector<ToolCall>* out) {
  if (!o.is_object() || !o.contains("name") || !o["name"].is_string()) return false;
  const std::string name = o["name"].get<std::string>();
  if (!KnownTool(tools, name)) return false;
  const Json args =
      o.contains("arguments") ? o["arguments"] : o.value("parameters", Json::object());
  auto text = ArgumentsText(args);
  if (!text) return false;
  out->push_back({"", name, *text});
  return true;
}

bool AddNamedCall(const std::string& name, const Json& args, const Json& tools,
                  std::vector<ToolCall>* out) {
  Json o = Json::object();
  o["name"] = name;
  o["arguments"] = args;
  return AddCall(o, tools, out);
}

// <tool_call>{json}</tool_call>, repeated; the closing tag may be cut off at the end.
bool ParseHermes(const std::string& s, size_t first, const Json& tools,
                 std::vector<ToolCall>* out) {
  constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
  size_t pos = first;
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

// [<|python_tag|>]{"name", "parameters"}[; {...}]
bool ParseLlama3(const std::string& s, const Json& tools, std::vector<ToolCall>* out) {
  constexpr std::string_view kTag = "<|python_tag|>";
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

// [TOOL_CALLS][{...}, ...] (v3), or [TOOL_CALLS]name[CALL_ID]id[ARGS]{...} per call (v7+).
bool ParseMistral(const std::string& s, size_t first, const Json& tools,
                  std::vector<ToolCall>* out) {
  constexpr std::string_view kCalls = "[TOOL_CALLS]", kArgs = "[ARGS]", kId = "[CALL_ID]";
  size_t pos = SkipSpace(s, first + kCalls.size());
  if (pos < s.size() && s[pos] == '[') {
    size_t end = 0;
    auto j = ParseJsonAt(s, pos, &end);
    if (!j || !j->is_array() || j->empty() || SkipSpace(s, end) != s.size()) return false;
    for (const Json& o : *j) {
      if (!AddCall(o, tools, out)) return false;
    }
    return true;
  }
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

// The whole answer one JSON value: {"tool_calls": [...]}, {"tool_call": {...}}, a call, or an array
// of calls.
bool ParseGeneric(const std::string& s, const Json& tools, std::vector<ToolCall>* out) {
  size_t end = 0;
  auto j = ParseJsonAt(s, SkipSpace(s, 0), &end);
  if (!j || SkipSpace(s, end) != s.size()) return false;
  Json calls;
  if (j->is_object() && j->contains("tool_calls")) {
    calls = (*j)["tool_calls"];
  } else if (j->is_object() && j->contains("tool_call")) {
    calls = Json::array({(*j)["tool_call"]});
  } else if (j->is_array()) {
    calls = *j;
  } else {
    calls = Json::array({*j});
  }
  if (!calls.is_array() || calls.empty()) return false;
  for (const Json& o : calls) {
    // {"function": {"name", "arguments"}} as OpenAI writes calls, or the call itself.
    const Json& call = o.is_object() && o.contains("function") ? o["function"] : o;
    if (!AddCall(call, tools, out)) return false;
  }
  return true;
}

uint64_t Mix(uint64_t x) {  // SplitMix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

ToolCallFormat DetectToolCallFormat(const std::string& src) {
  if (src.find("<tool_call>") != npos) return ToolCallFormat::kHermes;
  if (src.find("[TOOL_CALLS]") != npos) return ToolCallFormat::kMistral;
  if (src.find("<|python_tag|>") != npos ||
      (src.find("<|start_header_id|>") != npos && src.find("\"parameters\"") != npos)) {
    return ToolCallFormat::kLlama3;
  }
  return ToolCallFormat::kGeneric;
}

const char* ToolCallFormatName(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama3:
      return "llama3";
    case ToolCallFormat::kMistral:
      return "mistral";
    case ToolCallFormat::kGeneric:
      return "generic";
  }
  return "generic";
}

ParsedAnswer ParseToolCalls(ToolCallFormat f, const std::string& raw, const std::string& text,
                            const Json& tools, uint64_t seed, int choice) {
  ParsedAnswer out;
  out.content = text;
  if (!tools.is_array() || tools.empty()) return out;
  std::vector<ToolCall> calls;
  size_t first = 0;
  bool ok = false;
  switch (f) {
    case ToolCallFormat::kHermes:
      first = raw.find("<tool_call>");
      ok = first != npos && ParseHermes(raw, first, tools, &calls);
      break;
    case ToolCallFormat::kMistral:
      first = raw.find("[TOOL_CALLS]");
      ok = first != npos && ParseMistral(raw, first, tools, &calls);
      break;
    case ToolCallFormat::kLlama3:
      ok = ParseLlama3(raw, tools, &calls);
      break;
    case ToolCallFormat::kGeneric:
      ok = ParseGeneric(raw, tools, &calls);
      break;
  }
  if (!ok) return out;
  for (size_t i = 0; i < calls.size(); ++i)
    calls[i].id = ToolCallId(seed, choice, static_cast<int>(i));
  out.content = Trim(raw.substr(0, first));
  out.calls = std::move(calls);
  return out;
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

Json ToolCallsJson(const std::vector<ToolCall>& calls, bool indexed) {
  Json arr = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json c = Json::object();
    if (indexed) c["index"] = i;
    c["id"] = calls[i].id;
    c["type"] = "function";
    Json fn = Json::object();
    fn["name"] = calls[i].name;
    fn["arguments"] = calls[i].arguments;
    c["function"] = std::move(fn);
    arr.push_back(std::move(c));
  }
  return arr;
}

}  // namespace stet::server

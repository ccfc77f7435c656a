// The tool-call formats' shared reading of call objects.
#include "server/structured/tool_call_json.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace stet::server::tool_json {

namespace {

bool Blank(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

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

}  // namespace

size_t SkipSpace(const std::string& s, size_t pos) {
  while (pos < s.size() && Blank(s[pos])) ++pos;
  return pos;
}

std::string Trim(const std::string& s) {
  const size_t b = SkipSpace(s, 0);
  size_t e = s.size();
  while (e > b && Blank(s[e - 1])) --e;
  return s.substr(b, e - b);
}

size_t MarkerBound(const std::string& s, std::string_view marker) {
  const size_t at = s.find(marker);
  if (at != npos) return at;
  const size_t longest = std::min(s.size(), marker.size() - 1);
  for (size_t n = longest; n > 0; --n) {
    if (s.compare(s.size() - n, n, marker.substr(0, n)) == 0) return s.size() - n;
  }
  return s.size();
}

size_t WholeJsonBound(const std::string& s, std::string_view tag) {
  const size_t p = SkipSpace(s, 0);
  if (p == s.size() || s[p] == '{' || s[p] == '[') return 0;
  const size_t n = std::min(tag.size(), s.size() - p);
  return n > 0 && s.compare(p, n, tag.substr(0, n)) == 0 ? 0 : npos;
}

std::optional<Json> ParseJsonAt(const std::string& s, size_t pos, size_t* end) {
  *end = JsonEnd(s, pos);
  if (*end == npos) return std::nullopt;
  Json j = Json::parse(s.begin() + static_cast<std::ptrdiff_t>(pos),
                       s.begin() + static_cast<std::ptrdiff_t>(*end), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

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

std::string CallObject(const ToolCall& call, const char* key) {
  return "{\"name\": " + Dump(Json(call.name)) + ", \"" + key + "\": " + call.arguments + "}";
}

std::string WriteCalls(const std::vector<ToolCall>& calls, const char* key, const std::string& sep,
                       const std::string& open, const std::string& close) {
  std::string out;
  for (size_t i = 0; i < calls.size(); ++i) {
    out += (i ? sep : "") + open + CallObject(calls[i], key) + close;
  }
  return out;
}

}  // namespace stet::server::tool_json

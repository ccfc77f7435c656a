// What every tool-call format's parser reads a call with: blanks, the JSON
// object or array at a position (never throwing, bounded by the text), and a
// call object {"name", "arguments" | "parameters"} that must name one of the
// request's tools. Invariant: a call that is not well-formed JSON naming a
// known tool with object arguments is refused (false), never guessed at.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/api_error.h"
#include "server/structured/tool_calls.h"

namespace stet::server::tool_json {

constexpr size_t npos = std::string::npos;

inline bool StartsWith(const std::string& s, size_t pos, std::string_view p) {
  return s.compare(pos, p.size(), p) == 0;
}
// The first position at or after `pos` that is not a blank (space, \n, \t, \r).
size_t SkipSpace(const std::string& s, size_t pos);
std::string Trim(const std::string& s);

// Where `marker` could begin in `s`, a prefix of a longer text: its first
// occurrence, else where a suffix of `s` that starts it begins, else s.size().
size_t MarkerBound(const std::string& s, std::string_view marker);
// The same for an answer that is one JSON value (after blanks, and after
// `tag` when it is not empty): 0 while it may still be one, npos once its
// first non-blank bytes are neither `tag` nor "{" / "[".
size_t WholeJsonBound(const std::string& s, std::string_view tag = {});

// The JSON object or array that starts at s[pos], parsed; *end just past it.
std::optional<Json> ParseJsonAt(const std::string& s, size_t pos, size_t* end);

// {"name", "arguments" | "parameters"} naming one of `tools` (chat's nested
// shape, or flat), its arguments a JSON object (or a string holding one):
// appended to `out` with compact arguments.
bool AddCall(const Json& o, const Json& tools, std::vector<ToolCall>* out);
bool AddNamedCall(const std::string& name, const Json& args, const Json& tools,
                  std::vector<ToolCall>* out);

// {"name": <name>, "<key>": <arguments>}: a call written as the models write them.
std::string CallObject(const ToolCall& call, const char* key);
// The calls as CallObject(call, key), each between `open` and `close`, joined by `sep`:
// every format writes its calls this way, in its own punctuation.
std::string WriteCalls(const std::vector<ToolCall>& calls, const char* key, const std::string& sep,
                       const std::string& open = "", const std::string& close = "");

}  // namespace stet::server::tool_json

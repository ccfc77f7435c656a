// Function tools on /v1/responses: the Responses shapes mapped onto the chat
// machinery (template tools, tool-call parsing, constrained decoding of a
// forced call) and back. Request side: `tools` (flat {"type": "function",
// "name", "description", "parameters", "strict"}) become chat's nested tools,
// `tool_choice` ("none", "auto", "required", {"type": "function", "name"})
// and `parallel_tool_calls` mean what they mean on chat; input items
// `function_call` and `function_call_output` become an assistant message's
// tool_calls and tool messages. Output side: a parsed call is a
// {"type": "function_call", "id", "call_id", "name", "arguments", "status"}
// item, its ids derived from (seed, choice, index) as chat's are. Invariant:
// what is not a well-formed call stays text, never an error.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>

#include "http/api_error.h"
#include "server/structured/tool_calls.h"

namespace stet::server {

struct ResponsesTools {
  Json chat_tools;            // chat's nested shape for the template and the parser; null when none
  Json echo = Json::array();  // the request's tools as given (the response object echoes them)
  Json tool_choice = "auto";  // as given
  std::string forced;         // "*" for "required", the name for a named function, else empty
  bool parallel = true;       // parallel_tool_calls
  bool parse = false;         // tools given and tool_choice not "none"
};

// tools, tool_choice and parallel_tool_calls; 400s name the field.
std::optional<ApiError> ReadResponsesTools(const Json& body, ResponsesTools* out);

// The function names of the calls seen so far in one input, by call id (the
// first call with an id names it), so each output item finds its call's name
// in O(1): the conversion of an input is linear in its items.
using CallNames = std::unordered_map<std::string, std::string>;

// One input item of type function_call or function_call_output, appended to
// `messages` (consecutive calls join one assistant message). `ip` names the
// item in errors ("input[3]"); `names` carries the calls from item to item.
std::optional<ApiError> AppendToolItem(const Json& item, const std::string& ip, Json* messages,
                                       CallNames* names);

// "fc_" + the call id's digits: the output item's id.
std::string FunctionCallItemId(const ToolCall& call);

// {"type": "function_call", "id", "call_id", "name", "arguments", "status"}
Json FunctionCallItem(const ToolCall& call, const char* status);

}  // namespace stet::server

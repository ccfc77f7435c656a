// Tool calls parsed out of a model's answer, in the format its chat template
// teaches (detected from the template text, as llama.cpp does): Hermes / Qwen
// <tool_call>{json}</tool_call>, Llama 3.x {"name", "parameters"} (after
// <|python_tag|> or alone), Mistral [TOOL_CALLS] (a JSON array, or
// name[ARGS]{json} per call), and a generic JSON fallback. Invariants: an
// answer that is not entirely well-formed calls (bad JSON, an unknown
// function, text after a call) comes back as text, never an error; call ids
// depend only on (seed, choice, call index), so a replay gives the same ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "http/api_error.h"

namespace stet::server {

enum class ToolCallFormat { kHermes, kLlama3, kMistral, kGeneric };

ToolCallFormat DetectToolCallFormat(const std::string& template_source);
const char* ToolCallFormatName(ToolCallFormat f);  // "hermes", "llama3", "mistral", "generic"

struct ToolCall {
  std::string id;         // ToolCallId(seed, choice, index)
  std::string name;       // one of the request's functions
  std::string arguments;  // a JSON object, as compact text
};

struct ParsedAnswer {
  std::string content;  // text before the calls (trimmed), or the whole text when there are none
  std::vector<ToolCall> calls;
};

// `raw`: the answer with special tokens written out (markers such as
// <|python_tag|> and [TOOL_CALLS] are control tokens); `text`: the answer as
// content (special tokens dropped), returned unchanged when there are no
// calls. `tools`: the request's tools array (calls must name one of them).
ParsedAnswer ParseToolCalls(ToolCallFormat f, const std::string& raw, const std::string& text,
                            const Json& tools, uint64_t seed, int choice);

// "call_" + 24 hex digits mixed from (seed, choice, index).
std::string ToolCallId(uint64_t seed, int choice, int index);

// [{"id", "type": "function", "function": {"name", "arguments"}}]; with
// `indexed` (stream deltas) each entry also carries its "index".
Json ToolCallsJson(const std::vector<ToolCall>& calls, bool indexed);

}  // namespace stet::server

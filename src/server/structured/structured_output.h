// Structured outputs at the API: response_format (json_object, json_schema)
// and llama.cpp's `grammar` on the completion endpoints, text.format on
// /v1/responses, and the grammar that enforces tool_choice "required" or a
// named function in the template's tool-call format. Invariant: each either
// sets RequestParams::grammar to a compiled grammar or is a 400 naming the
// field — a schema or grammar stet cannot enforce is never silently ignored.
#pragma once

#include <optional>
#include <string>

#include "engine/request.h"
#include "http/api_error.h"
#include "server/structured/tool_calls.h"

namespace stet::server {

// "response_format" ({"type": "text" | "json_object" | "json_schema",
// "json_schema": {"name", "schema", "strict"}}) and "grammar" (GBNF text); at
// most one of them constrains the output. `text_schema` (optional) gets the
// format as a JSON Schema (json_object: any object), for ForceToolsOrText.
std::optional<ApiError> ReadResponseFormat(const Json& body, RequestParams* p,
                                           Json* text_schema = nullptr);

// /v1/responses' text.format: {"type": "text" | "json_object"} or
// {"type": "json_schema", "name", "schema", "strict"}; `param` names it in errors.
std::optional<ApiError> ReadTextFormat(const Json& format, const std::string& param,
                                       RequestParams* p, Json* text_schema = nullptr);

// tool_choice "required" (`name` empty: any of `tools`) or a named function:
// the output must be tool calls in format `f` whose arguments match the
// function's parameters schema (ToolCallGbnf); several calls (for
// "required") only with `parallel`.
std::optional<ApiError> ForceToolCalls(const ToolCallFormat& f, const Json& tools,
                                       const std::string& name, bool parallel, RequestParams* p);

// tool_choice "auto" with a response format (OpenAI's meaning: the model may
// call a tool, and a text answer follows the format): the output is tool
// calls in format `f` or a JSON document valid under `text_schema`.
std::optional<ApiError> ForceToolsOrText(const ToolCallFormat& f, const Json& tools, bool parallel,
                                         const Json& text_schema, RequestParams* p);

}  // namespace stet::server

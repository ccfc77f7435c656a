// The tool-call formats stet knows, one object each (tool_format_<name>.cc),
// and the registry that lists them. Adding a format is one file and one row
// of ToolCallFormats() (docs/recipes.md); ToolFormatRegistry's tests fail
// until the row is complete.
#pragma once

#include "server/structured/tool_calls.h"

namespace stet::server {

const ToolCallFormat& HermesToolFormat();   // <tool_call>{...}</tool_call> (Hermes, Qwen)
const ToolCallFormat& MistralToolFormat();  // [TOOL_CALLS][...] / name[ARGS]{...}
const ToolCallFormat& Llama3ToolFormat();   // [<|python_tag|>]{"name", "parameters"}
const ToolCallFormat& GenericToolFormat();  // the whole answer one JSON value

}  // namespace stet::server

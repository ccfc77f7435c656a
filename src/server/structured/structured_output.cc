// response_format / grammar / text.format / forced tool calls -> a compiled
// grammar on the request. Grammars are parsed here, under the engine's
// GrammarLimits, so a bad or oversized one is a 400 before admission; the
// engine's ValidateRequest then checks its start state.
#include "server/structured/structured_output.h"

#include "engine/grammar.h"
#include "http/api_error.h"
#include "server/structured/json_schema.h"

namespace stet::server {
namespace {

std::optional<ApiError> Compile(const std::string& gbnf, const std::string& param,
                                RequestParams* p) {
  auto g = ParseGbnf(gbnf);
  if (!g.ok()) return BadRequest(g.status().message(), param);
  p->grammar = *g;
  return std::nullopt;
}

std::optional<ApiError> CompileSchema(const Json& schema, const std::string& param,
                                      RequestParams* p) {
  if (!schema.is_object() && !schema.is_boolean())
    return BadRequest("'" + param + "' must be a JSON Schema object", param);
  auto gbnf = JsonSchemaToGbnf(schema);
  if (!gbnf.ok()) return BadRequest("'" + param + "': " + gbnf.status().message(), param);
  return Compile(*gbnf, param, p);
}

std::optional<ApiError> CheckOptional(const Json& obj, const char* key, bool (Json::*is)() const,
                                      const std::string& param, const char* what) {
  auto it = obj.find(key);
  if (it != obj.end() && !it->is_null() && !((*it).*is)())
    return BadRequest("'" + param + "." + key + "' must be " + what, param + "." + key);
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ReadResponseFormat(const Json& body, RequestParams* p, Json* text_schema) {
  bool constrained = false;
  auto rf = body.find("response_format");
  if (rf != body.end() && !rf->is_null()) {
    if (!rf->is_object())
      return BadRequest("'response_format' must be an object", "response_format");
    const Json type = rf->value("type", Json());
    if (type == "json_object") {
      STET_API_TRY(Compile(JsonObjectGbnf(), "response_format", p));
      if (text_schema) *text_schema = Json{{"type", "object"}};
      constrained = true;
    } else if (type == "json_schema") {
      auto js = rf->find("json_schema");
      if (js == rf->end() || !js->is_object())
        return BadRequest("'response_format.json_schema' must be an object with a 'schema'",
                          "response_format.json_schema");
      STET_API_TRY(
          CheckOptional(*js, "name", &Json::is_string, "response_format.json_schema", "a string"));
      STET_API_TRY(CheckOptional(*js, "strict", &Json::is_boolean, "response_format.json_schema",
                                 "a boolean"));
      auto schema = js->find("schema");
      if (schema == js->end())
        return BadRequest("'response_format.json_schema.schema' is required",
                          "response_format.json_schema.schema");
      STET_API_TRY(CompileSchema(*schema, "response_format.json_schema.schema", p));
      if (text_schema) *text_schema = *schema;
      constrained = true;
    } else if (type != "text") {
      return BadRequest(
          "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", not " +
              Dump(type),
          "response_format.type");
    }
  }
  auto gr = body.find("grammar");
  if (gr != body.end() && !gr->is_null()) {
    if (!gr->is_string()) return BadRequest("'grammar' must be a string (GBNF)", "grammar");
    if (constrained)
      return BadRequest("give either 'grammar' or a JSON 'response_format', not both", "grammar");
    STET_API_TRY(Compile(gr->get<std::string>(), "grammar", p));
  }
  return std::nullopt;
}

std::optional<ApiError> ReadTextFormat(const Json& format, const std::string& param,
                                       RequestParams* p, Json* text_schema) {
  if (format.is_null()) return std::nullopt;
  if (!format.is_object()) return BadRequest("'" + param + "' must be an object", param);
  const Json type = format.value("type", Json());
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    if (text_schema) *text_schema = Json{{"type", "object"}};
    return Compile(JsonObjectGbnf(), param, p);
  }
  if (type == "json_schema") {
    STET_API_TRY(CheckOptional(format, "name", &Json::is_string, param, "a string"));
    STET_API_TRY(CheckOptional(format, "strict", &Json::is_boolean, param, "a boolean"));
    auto schema = format.find("schema");
    if (schema == format.end())
      return BadRequest("'" + param + ".schema' is required", param + ".schema");
    if (text_schema) *text_schema = *schema;
    return CompileSchema(*schema, param + ".schema", p);
  }
  return BadRequest("'" + param + ".type' must be \"text\", \"json_object\" or \"json_schema\"",
                    param + ".type");
}

std::optional<ApiError> ForceToolCalls(const ToolCallFormat& f, const Json& tools,
                                       const std::string& name, bool parallel, RequestParams* p) {
  auto gbnf = ToolCallGbnf(f, tools, name, parallel);
  if (!gbnf.ok())
    return BadRequest(gbnf.status().message(), name.empty() ? "tools" : "tool_choice");
  return Compile(*gbnf, "tools", p);
}

std::optional<ApiError> ForceToolsOrText(const ToolCallFormat& f, const Json& tools, bool parallel,
                                         const Json& text_schema, RequestParams* p) {
  auto gbnf = ToolCallGbnf(f, tools, "", parallel, &text_schema);
  if (!gbnf.ok()) return BadRequest(gbnf.status().message(), "tools");
  return Compile(*gbnf, "tools", p);
}

}  // namespace stet::server

// vLLM's structured outputs (json, json_object, grammar, regex, choice) ->
// the grammar the server compiles for the same constraint: a JSON Schema and
// json_object go through the server's response_format reader (the same JSON
// Schema compiler, the same refusals), a grammar through its GBNF reader, a
// regex through the JSON Schema pattern compiler's raw-text target, a choice
// to an alternation of literals. Refusals name the Python field.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/grammar.h"
#include "python/src/offline.h"
#include "server/structured/json_schema_pattern.h"
#include "server/structured/json_string_chars.h"
#include "server/structured/structured_output.h"

namespace stet::python {

using server::ApiError;
using server::Json;

namespace {

// The server's error, its param and quoted param renamed to the Python field.
Refusal Renamed(const ApiError& e, const std::string& field) {
  std::string msg = e.message;
  if (!e.param.empty()) {
    for (const std::string& from : {"'" + e.param + "'", e.param}) {
      for (size_t at = msg.find(from); at != std::string::npos;
           at = msg.find(from, at + field.size()))  // past the field (it may hold `from`)
        msg.replace(at, from.size(), field);
    }
  }
  if (msg.rfind(field, 0) == 0) return {field, msg};
  return {field, field + ": " + msg};
}

std::variant<std::shared_ptr<const Grammar>, Refusal> ViaServer(const Json& body,
                                                                const std::string& field) {
  RequestParams p;
  if (auto e = server::ReadResponseFormat(body, &p)) return Renamed(*e, field);
  return p.grammar;
}

std::variant<std::shared_ptr<const Grammar>, Refusal> Gbnf(const std::string& text,
                                                           const std::string& field) {
  auto g = ParseGbnf(text);
  if (!g.ok()) return Refusal{field, field + ": " + g.status().message()};
  return *g;
}

}  // namespace

std::variant<std::shared_ptr<const Grammar>, Refusal> CompileStructured(
    const std::string& kind, const std::string& text, const std::vector<std::string>& choices) {
  const std::string field = "structured_outputs." + kind;
  if (kind == "json") {
    Json schema;
    try {
      schema = Json::parse(text);
    } catch (const std::exception& e) {
      return Refusal{field, field + ": not a JSON Schema (" + e.what() + ")"};
    }
    Json body = {
        {"response_format",
         {{"type", "json_schema"}, {"json_schema", {{"name", "schema"}, {"schema", schema}}}}}};
    return ViaServer(body, field);
  }
  if (kind == "json_object")
    return ViaServer({{"response_format", {{"type", "json_object"}}}}, field);
  if (kind == "grammar") return ViaServer({{"grammar", text}}, field);
  if (kind == "regex") {
    auto sg = server::PatternToGbnf(text, server::PatternTarget::kRawText);
    if (!sg.ok()) return Refusal{field, field + ": " + sg.status().message()};
    return Gbnf("root ::= " + sg->body, field);
  }
  if (kind == "choice") {
    if (choices.empty()) return Refusal{field, field + ": give at least one choice"};
    std::string gbnf = "root ::=";
    for (size_t i = 0; i < choices.size(); ++i) {
      if (choices[i].empty()) return Refusal{field, field + ": a choice cannot be empty"};
      gbnf += (i ? " | " : " ") + server::chars::RawLiteral(choices[i]);
    }
    return Gbnf(gbnf, field);
  }
  return Refusal{"structured_outputs", "structured_outputs: unknown kind '" + kind +
                                           "' (json, json_object, grammar, regex, choice)"};
}

}  // namespace stet::python

// JSON Schema -> GBNF for structured outputs (response_format json_object /
// json_schema, text.format, tool arguments). Invariant: a schema either
// converts to a grammar whose every complete match is JSON valid under it, or
// is refused with a message naming the keyword stet does not enforce —
// never a grammar that accepts what the schema forbids.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "http/api_error.h"

namespace stet::server {

// Whitespace the grammar allows between tokens of JSON: one space, or one
// line break followed by at most this many spaces and tabs (indentation), so
// a model cannot loop on blanks.
constexpr int kMaxJsonBlanks = 20;

// Builds one grammar out of several schemas (a tool call grammar holds one per
// function). Supported: type (one or a list), properties, required,
// additionalProperties (false when properties are given — as OpenAI's strict
// mode requires; true or a schema only without properties: a map, with
// propertyNames / minProperties / maxProperties), items, prefixItems,
// minItems, maxItems, uniqueItems (where it cannot bite), enum, const, anyOf
// (branches stet cannot express left out), oneOf (when its branches are
// provably disjoint: server/structured/json_schema_oneof.h), allOf of one
// schema, $ref to "#" or "#/..." (recursion allowed), $defs / definitions,
// minLength, maxLength, pattern (json_schema_pattern.h), format
// (json_schema_formats.h), numeric bounds (json_schema_numbers.h), multipleOf
// 1 on integers; annotations are ignored. Anything else (not, if/then/else,
// patternProperties, ...) is refused; docs/api.md has the keyword table.
// Properties come in the schema's order; optional ones may be left out.
class JsonGrammarBuilder {
 public:
  // Converts `schema` ($refs resolve within it) and returns the name of its
  // rule; `hint` seeds rule names ([A-Za-z0-9-] kept).
  Result<std::string> AddSchema(const Json& schema, const std::string& hint);
  // The rule for any JSON object / any JSON value.
  std::string AnyObject();
  std::string AnyValue();
  std::string Blanks();  // the bounded-whitespace rule
  // Adds `name ::= body` (a caller's own rule, e.g. the root).
  void AddRule(const std::string& name, const std::string& body);
  std::string Text() const;  // the grammar: every rule added, in order

 private:
  Result<std::string> Visit(const Json& s, const std::string& hint, int depth);
  Result<std::string> VisitType(const Json& s, const std::string& type, const std::string& hint,
                                int depth);
  Result<std::string> VisitObject(const Json& s, const std::string& hint, int depth);
  Result<std::string> VisitArray(const Json& s, const std::string& hint, int depth);
  Result<std::string> VisitMap(const Json& s, const std::string& hint, int depth);
  Result<std::string> VisitRef(const std::string& ref, const std::string& hint, int depth);
  Result<std::vector<std::string>> VisitBranches(const Json& list, const std::string& hint,
                                                 int depth);
  Result<std::string> VisitString(const Json& s, const std::string& hint);
  Result<std::string> VisitNumber(const Json& s, const std::string& type, const std::string& hint);
  // A refusal of what a grammar cannot express (as opposed to a malformed
  // schema): an anyOf may leave such a branch out.
  Status Unsupported(const std::string& what);
  std::string Primitive(const std::string& name);
  std::string Fresh(const std::string& hint);

  const Json* doc_ = nullptr;  // the schema being converted ($ref target)
  std::vector<std::pair<std::string, std::string>> rules_;
  std::map<std::string, std::string> defined_;  // primitive or $ref -> rule name
  int next_ = 0;
  bool unsupported_ = false;
};

// GBNF for a whole response_format schema (root = the schema's rule).
Result<std::string> JsonSchemaToGbnf(const Json& schema);
// GBNF for {"type": "json_object"}: any JSON object.
std::string JsonObjectGbnf();
// A JSON value as a GBNF string literal ("\"a\"" for "a"): exactly its compact text.
std::string GbnfLiteral(const std::string& bytes);

}  // namespace stet::server

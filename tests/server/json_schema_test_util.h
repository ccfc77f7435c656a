// Helpers the JSON Schema and tool-call grammar tests share: compile a schema
// to a grammar, match a document against it (or against GBNF text), read why
// a schema is refused, and two tools to force calls of.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/grammar.h"
#include "engine/grammar_matcher.h"
#include "server/structured/json_schema.h"

namespace stet::server::testing {

// The grammar for `schema`; nullptr (and a test failure) when it is refused.
inline std::shared_ptr<const Grammar> CompileSchema(const Json& schema) {
  auto gbnf = JsonSchemaToGbnf(schema);
  EXPECT_TRUE(gbnf.ok()) << schema.dump() << ": " << gbnf.status().ToString();
  if (!gbnf.ok()) return nullptr;
  auto g = ParseGbnf(*gbnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << *gbnf;
  return g.ok() ? *g : nullptr;
}

// Whether the whole of `s` is a complete match of `g`.
inline bool GrammarMatches(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  if (!g) return false;
  GrammarMatcher m(g);
  EXPECT_TRUE(m.Init().ok());
  auto r = m.Accept(s);
  return r.ok() && *r && m.CanEnd();
}

// Whether the whole of `s` is a complete match of the grammar `gbnf`.
inline bool GbnfMatches(const std::string& gbnf, const std::string& s) {
  auto g = ParseGbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << gbnf;
  return g.ok() && GrammarMatches(*g, s);
}

// get_weather(city: string, days?: integer) and ping() in chat's tools shape.
inline const Json& WeatherAndPingTools() {
  static const Json* t = new Json(Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
      "required": ["city"]}}},
    {"type": "function", "function": {"name": "ping"}}])"));
  return *t;
}

// Why `schema` is refused ("" and a test failure when it is not).
inline std::string SchemaRefusal(const Json& schema) {
  auto gbnf = JsonSchemaToGbnf(schema);
  EXPECT_FALSE(gbnf.ok()) << schema.dump();
  return gbnf.ok() ? "" : gbnf.status().message();
}

}  // namespace stet::server::testing

// Helpers the JSON Schema tests share: compile a schema to a grammar, match a
// document against it, read why a schema is refused.
#pragma once

#include <gtest/gtest.h>

#include <memory>
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

// Why `schema` is refused ("" and a test failure when it is not).
inline std::string SchemaRefusal(const Json& schema) {
  auto gbnf = JsonSchemaToGbnf(schema);
  EXPECT_FALSE(gbnf.ok()) << schema.dump();
  return gbnf.ok() ? "" : gbnf.status().message();
}

}  // namespace stet::server::testing

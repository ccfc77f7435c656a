// libFuzzer target for JSON Schema -> GBNF (JsonSchemaToGbnf, the oneOf
// disjointness proof inside it): arbitrary bytes that parse as JSON are taken
// as a schema. Any outcome is fine except a crash, a sanitizer report, an
// exception escaping, a slow unit (the conversion and the oneOf check are
// bounded) or a broken invariant: the grammar made from an accepted schema
// parses under the server's grammar limits and its matcher starts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/grammar.h"
#include "engine/grammar_matcher.h"
#include "server/structured/json_schema.h"

namespace {

void Require(bool cond, const char* what) {
  if (!cond) {
    std::fprintf(stderr, "json_schema_fuzz: invariant failed: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  stet::server::Json schema = stet::server::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  auto gbnf = stet::server::JsonSchemaToGbnf(schema);
  if (!gbnf.ok()) return 0;
  auto g = ParseGbnf(*gbnf);
  // A grammar over the text or rule limits is the server's 400 too; any other
  // refusal of what the converter wrote is a bug in the converter.
  if (!g.ok()) {
    const std::string& msg = g.status().message();
    bool limit = false;
    for (const char* l : {"more than", "above", "too large", "deeper than"})
      limit = limit || msg.find(l) != std::string::npos;
    if (!limit) std::fprintf(stderr, "%s\n%s\n", msg.c_str(), gbnf->c_str());
    Require(limit, "a grammar made from an accepted schema parses (or is over a limit)");
    return 0;
  }
  GrammarMatcher m(*g);
  (void)m.Init();  // may hit the stack limit: a 400 in the server, never a crash
  return 0;
}

// JSON Schema -> GBNF: documents valid under a schema match its grammar,
// invalid ones do not, and unsupported keywords are refused by name.
#include "server/structured/json_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <functional>

#include "engine/grammar.h"
#include "engine/grammar_matcher.h"
#include "server/json_schema_test_util.h"
#include "server/structured/json_schema_oneof.h"

namespace stet::server {
namespace {

// Schemas written as JSON text.
std::shared_ptr<const Grammar> Compile(const std::string& schema_text) {
  return testing::CompileSchema(Json::parse(schema_text));
}
const auto& Matches = testing::GrammarMatches;
std::string Refusal(const std::string& schema_text) {
  return testing::SchemaRefusal(Json::parse(schema_text));
}

TEST(JsonSchema, AnyObject) {
  auto g = ParseGbnf(JsonObjectGbnf());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(Matches(*g, "{}"));
  EXPECT_TRUE(Matches(*g, R"({"a": [1, -2.5e3, "x\n\u00e9", true, null, {"b": {}}]})"));
  EXPECT_TRUE(Matches(*g, "{\n  \"a\": 1\n}"));
  EXPECT_FALSE(Matches(*g, "[]"));
  EXPECT_FALSE(Matches(*g, R"({"a": 01})"));
  EXPECT_FALSE(Matches(*g, R"({"a": "x)"));
  EXPECT_FALSE(Matches(*g, R"({'a': 1})"));
  EXPECT_TRUE(Matches(*g, "{\n" + std::string(kMaxJsonBlanks, ' ') + "}"));
  EXPECT_FALSE(Matches(*g, "{\n" + std::string(kMaxJsonBlanks + 1, ' ') + "}"));
  EXPECT_FALSE(Matches(*g, "{  }"));
  EXPECT_FALSE(Matches(*g, "{\n\n}"));
}

TEST(JsonSchema, ObjectWithRequiredAndOptionalProperties) {
  auto g = Compile(R"({"type": "object", "properties": {
      "name": {"type": "string"}, "age": {"type": "integer"}, "ok": {"type": "boolean"}},
      "required": ["name", "ok"]})");
  EXPECT_TRUE(Matches(g, R"({"name": "a", "age": 3, "ok": true})"));
  EXPECT_TRUE(Matches(g, R"({"name":"a","ok":false})"));
  EXPECT_FALSE(Matches(g, R"({"name": "a", "age": 3})"));              // ok is required
  EXPECT_FALSE(Matches(g, R"({"age": 3, "name": "a", "ok": true})"));  // schema order
  EXPECT_FALSE(Matches(g, R"({"name": "a", "ok": true, "x": 1})"));    // no extra properties
  EXPECT_FALSE(Matches(g, R"({"name": "a", "age": 3.5, "ok": true})"));
  EXPECT_FALSE(Matches(g, R"({"name": "a",, "ok": true})"));
  auto all_optional = Compile(R"({"properties": {"a": {"type": "null"}, "b": {"const": 1}}})");
  EXPECT_TRUE(Matches(all_optional, "{}"));
  EXPECT_TRUE(Matches(all_optional, R"({"b": 1})"));
  EXPECT_TRUE(Matches(all_optional, R"({"a": null, "b": 1})"));
  EXPECT_FALSE(Matches(all_optional, R"({, "b": 1})"));
  EXPECT_FALSE(Matches(all_optional, R"({"b": 2})"));
}

TEST(JsonSchema, ArraysEnumsAnyOfAndTypeLists) {
  auto g = Compile(R"({"type": "array", "items": {"enum": ["red", "green", 3, null]},
                       "minItems": 1, "maxItems": 3})");
  EXPECT_TRUE(Matches(g, R"(["red"])"));
  EXPECT_TRUE(Matches(g, R"(["red", 3, null])"));
  EXPECT_FALSE(Matches(g, "[]"));
  EXPECT_FALSE(Matches(g, R"(["red", 3, null, "green"])"));
  EXPECT_FALSE(Matches(g, R"(["blue"])"));
  auto u = Compile(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]})");
  EXPECT_TRUE(Matches(u, "42"));
  EXPECT_TRUE(Matches(u, R"("ab")"));
  EXPECT_FALSE(Matches(u, R"("abc")"));
  EXPECT_FALSE(Matches(u, "true"));
  auto t = Compile(R"({"type": ["number", "null"]})");
  EXPECT_TRUE(Matches(t, "-0.5e-3"));
  EXPECT_TRUE(Matches(t, "null"));
  EXPECT_FALSE(Matches(t, "\"1\""));
}

TEST(JsonSchema, DefsAndRecursiveRefs) {
  auto g = Compile(R"({"$defs": {"node": {"type": "object", "properties": {
      "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v", "kids"], "additionalProperties": false}},
      "$ref": "#/$defs/node"})");
  EXPECT_TRUE(Matches(g, R"({"v": 1, "kids": [{"v": 2, "kids": []}, {"v": 3, "kids": []}]})"));
  EXPECT_FALSE(Matches(g, R"({"v": 1, "kids": [{"v": 2}]})"));
}

TEST(JsonSchema, StringLengthsAndEscapesInNames) {
  auto g = Compile(R"({"type": "object", "properties": {"a\"b": {"type": "string",
      "minLength": 2, "maxLength": 3}}, "required": ["a\"b"]})");
  EXPECT_TRUE(Matches(g, R"({"a\"b": "xy"})"));
  EXPECT_TRUE(Matches(g, R"({"a\"b": "\n\u00e9z"})"));
  EXPECT_FALSE(Matches(g, R"({"a\"b": "x"})"));
  EXPECT_FALSE(Matches(g, R"({"a\"b": "wxyz"})"));
}

TEST(JsonSchema, RefusesWhatItCannotEnforce) {
  EXPECT_NE(Refusal(R"({"type": "string", "pattern": "^(?=a)b"})").find("look-ahead"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"type": "string", "format": "date", "minLength": 11})").find("'format'"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"type": "integer", "minimum": 1e30})").find("bound"), std::string::npos);
  EXPECT_NE(Refusal(R"({"type": "array", "uniqueItems": true})").find("uniqueItems"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"type": "number", "multipleOf": 0.5})").find("multipleOf"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"not": {"type": "string"}})").find("'not'"), std::string::npos);
  EXPECT_NE(Refusal(R"({"$ref": "http://x/y"})").find("not local"), std::string::npos);
  EXPECT_NE(Refusal(R"({"$ref": "#/$defs/missing"})").find("does not resolve"), std::string::npos);
  EXPECT_NE(Refusal(R"({"properties": {"a": {}}, "required": ["b"]})").find("'b'"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"properties": {"a": {}}, "additionalProperties": true})")
                .find("additionalProperties"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"type": "strange"})").find("strange"), std::string::npos);
  EXPECT_NE(Refusal(R"({"allOf": [{}, {}]})").find("allOf"), std::string::npos);
  EXPECT_NE(Refusal("false").find("matches nothing"), std::string::npos);
  std::string deep = "{}";
  for (int i = 0; i < 100; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_NE(Refusal(deep).find("deeper"), std::string::npos);
}

// oneOf is a choice the grammar can enforce only when no value matches two
// branches; stet must prove that or refuse (never accept what oneOf forbids).
TEST(JsonSchema, OneOfOnlyWhenBranchesAreProvablyDisjoint) {
  auto types = Compile(R"({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})");
  EXPECT_TRUE(Matches(types, R"("x")"));
  EXPECT_TRUE(Matches(types, "12"));
  EXPECT_TRUE(Matches(types, "null"));
  EXPECT_FALSE(Matches(types, "true"));
  auto values = Compile(R"({"oneOf": [{"const": "a"}, {"enum": ["b", 3]}, {"type": "boolean"}]})");
  EXPECT_TRUE(Matches(values, R"("a")"));
  EXPECT_TRUE(Matches(values, "3"));
  EXPECT_TRUE(Matches(values, "false"));
  EXPECT_FALSE(Matches(values, R"("c")"));
  // A tagged union, branches through $ref as pydantic writes them.
  auto tagged = Compile(R"({"$defs": {
      "Cat": {"type": "object", "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer"}},
              "required": ["kind", "lives"]},
      "Dog": {"type": "object", "properties": {"kind": {"enum": ["dog", "puppy"]}, "name": {"type": "string"}},
              "required": ["kind"]}},
    "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]})");
  EXPECT_TRUE(Matches(tagged, R"({"kind": "cat", "lives": 9})"));
  EXPECT_TRUE(Matches(tagged, R"({"kind": "puppy"})"));
  EXPECT_FALSE(Matches(tagged, R"({"kind": "cow"})"));
  // Overlaps, or what stet cannot prove disjoint: refused, naming the pair.
  EXPECT_NE(Refusal(R"({"oneOf": [{"type": "number"}, {"type": "integer"}]})").find("0 and 1"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"oneOf": [{"type": "string"}, {"enum": [1, "x"]}]})").find("'oneOf'"),
            std::string::npos);
  EXPECT_NE(
      Refusal(R"({"oneOf": [{"const": 1}, {"const": 2}, {"enum": [3, 1.0]}]})").find("0 and 2"),
      std::string::npos);
  EXPECT_NE(Refusal(R"({"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}},
                                  {"type": "object", "properties": {"b": {"type": "string"}}}]})")
                .find("provably disjoint"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"oneOf": [{"type": "string"}, {}]})").find("0 and 1"), std::string::npos);
  // Tags that are not required do not separate the branches.
  EXPECT_NE(Refusal(R"({"oneOf": [{"type": "object", "properties": {"k": {"const": 1}}},
                                  {"type": "object", "properties": {"k": {"const": 2}}}]})")
                .find("'oneOf'"),
            std::string::npos);
  // anyOf stays a plain choice.
  auto any = Compile(R"({"anyOf": [{"type": "number"}, {"type": "integer"}]})");
  EXPECT_TRUE(Matches(any, "1.5"));
}

// Issue 25: the oneOf check compared every value of one enum with every value
// of the other, and every branch with every other (a 1.5 MB schema: 14-19 s of
// CPU before its 400). Each shape at n and 4n: CPU time at most ~linear.
double BestCpuSeconds(const std::function<void()>& fn) {
  double best = 1e9;
  for (int r = 0; r < 3; ++r) {
    const std::clock_t t0 = std::clock();
    fn();
    best = std::min(best, static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC);
  }
  return best;
}

void ExpectLinear(const std::function<Json(int)>& shape, int n, bool disjoint) {
  const Json small = shape(n), large = shape(4 * n);
  std::optional<std::string> got;
  const double t1 = BestCpuSeconds([&] { got = OverlappingBranches(small["oneOf"], small); });
  EXPECT_EQ(!got.has_value(), disjoint) << got.value_or("");
  const double t4 = BestCpuSeconds([&] { got = OverlappingBranches(large["oneOf"], large); });
  EXPECT_EQ(!got.has_value(), disjoint) << got.value_or("");
  std::printf("oneOf n=%d: %.4f s, 4n: %.4f s (x%.1f)\n", n, t1, t4, t4 / std::max(t1, 1e-9));
  EXPECT_LT(t4, 8 * t1 + 0.02) << "n=" << n;  // linear: ~4x; quadratic: 16x
  EXPECT_LT(t4, 2.0);
}

TEST(JsonSchemaOneOf, TwoLargeEnumsAreComparedInLinearTime) {
  ExpectLinear(
      [](int n) {
        Json a = Json::array(), b = Json::array();
        for (int i = 0; i < n; ++i) {
          a.push_back(i);
          b.push_back("v" + std::to_string(i));
        }
        b.push_back(1.5);
        return Json{{"oneOf", Json::array({Json{{"enum", a}}, Json{{"enum", b}}})}};
      },
      20000, /*disjoint=*/true);
}

TEST(JsonSchemaOneOf, ManyConstBranchesAreComparedInLinearTime) {
  ExpectLinear(
      [](int n) {
        Json list = Json::array();
        for (int i = 0; i < n; ++i) list.push_back(Json{{"const", "tag" + std::to_string(i)}});
        list.push_back(Json{{"type", "integer"}});
        return Json{{"oneOf", list}};
      },
      10000, /*disjoint=*/true);
}

TEST(JsonSchemaOneOf, EqualValuesAcrossSpellingsStillOverlap) {
  const Json doc = Json::parse(R"({"oneOf": [{"enum": [[1, {"a": 2}], "x"]},
                                             {"enum": [[1.0, {"a": 2.0}]]}]})");
  EXPECT_EQ(OverlappingBranches(doc["oneOf"], doc).value_or(""), "0 and 1");
  const Json zero = Json::parse(R"({"oneOf": [{"const": 0}, {"const": -0.0}]})");
  EXPECT_EQ(OverlappingBranches(zero["oneOf"], zero).value_or(""), "0 and 1");
  const Json apart = Json::parse(R"({"oneOf": [{"const": 9007199254740993}, {"const": 1}]})");
  EXPECT_FALSE(OverlappingBranches(apart["oneOf"], apart).has_value());
}

TEST(JsonSchemaOneOf, AReferenceFanOutIsBoundedNotExponential) {
  // D0 = anyOf of 8 refs to D1, ... D7 (within the depth bound): 8^7 paths if followed naively.
  Json defs = Json::object();
  for (int d = 0; d < 7; ++d) {
    Json refs = Json::array();
    for (int k = 0; k < 8; ++k) refs.push_back(Json{{"$ref", "#/$defs/D" + std::to_string(d + 1)}});
    defs["D" + std::to_string(d)] = Json{{"anyOf", refs}};
  }
  defs["D7"] = Json{{"type", "string"}};
  const Json doc = {
      {"$defs", defs},
      {"oneOf", Json::array({Json{{"$ref", "#/$defs/D0"}}, Json{{"type", "integer"}}})}};
  std::optional<std::string> got;
  const double t = BestCpuSeconds([&] { got = OverlappingBranches(doc["oneOf"], doc); });
  ASSERT_TRUE(got.has_value());
  EXPECT_NE(got->find("steps"), std::string::npos) << *got;
  EXPECT_LT(t, 2.0);
}

}  // namespace
}  // namespace stet::server

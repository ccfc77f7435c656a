// The JSON Schema keywords real libraries write (pydantic, zod, instructor):
// numeric bounds, formats, tuples, unions with a branch stet cannot express.
// Numeric bounds are checked as properties: over many random bounds and
// values, a value matches exactly when it lies within the bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "server/json_schema_test_util.h"
#include "server/structured/json_schema_formats.h"

namespace stet::server {
namespace {

const auto& Compile = testing::CompileSchema;
const auto& Matches = testing::GrammarMatches;
const auto& Refusal = testing::SchemaRefusal;

// A canonical JSON number: optional "-", integer without leading zeros, up to
// `frac` fraction digits without trailing zeros.
std::string RandomNumber(std::mt19937_64& rng, int64_t span, int frac) {
  std::uniform_int_distribution<int64_t> ip(-span, span);
  std::string s = std::to_string(ip(rng));
  std::uniform_int_distribution<int> nf(0, frac), digit(0, 9);
  std::string f;
  for (int i = nf(rng); i > 0; --i) f += static_cast<char>('0' + digit(rng));
  while (!f.empty() && f.back() == '0') f.pop_back();
  if (!f.empty()) {
    if (s == "0" && rng() % 2) s = "-0";
    s += "." + f;
  }
  return s;
}

struct Bound {
  bool present = false, exclusive = false;
  double value = 0;
  Json json;
};

bool Within(double v, const Bound& lo, const Bound& hi) {
  if (lo.present && (lo.exclusive ? !(v > lo.value) : !(v >= lo.value))) return false;
  if (hi.present && (hi.exclusive ? !(v < hi.value) : !(v <= hi.value))) return false;
  return true;
}

Bound RandomBound(std::mt19937_64& rng, bool integral) {
  Bound b;
  b.present = rng() % 4 != 0;
  b.exclusive = rng() % 2;
  const std::string text = RandomNumber(rng, 300, integral ? 0 : 3);
  b.json = Json::parse(text == "-0" ? "0" : text);
  b.value = b.json.get<double>();
  return b;
}

// For random bounds (integer or decimal, inclusive or exclusive, one side or
// two), random values match exactly when a validator would accept them.
void CheckRandomBounds(const std::string& type, bool integral_bounds, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int checked = 0, inside = 0;
  for (int trial = 0; trial < 60; ++trial) {
    Bound lo = RandomBound(rng, integral_bounds), hi = RandomBound(rng, integral_bounds);
    if (lo.present && hi.present && lo.value > hi.value) std::swap(lo, hi);
    Json schema = {{"type", type}};
    if (lo.present) schema[lo.exclusive ? "exclusiveMinimum" : "minimum"] = lo.json;
    if (hi.present) schema[hi.exclusive ? "exclusiveMaximum" : "maximum"] = hi.json;
    bool empty = lo.present && hi.present && lo.value == hi.value && (lo.exclusive || hi.exclusive);
    if (type == "integer" && lo.present && hi.present) {
      const double a = lo.exclusive ? std::floor(lo.value) + 1 : std::ceil(lo.value);
      const double b = hi.exclusive ? std::ceil(hi.value) - 1 : std::floor(hi.value);
      empty = a > b;
    }
    if (empty) {
      EXPECT_NE(Refusal(schema).find("no "), std::string::npos) << schema.dump();
      continue;
    }
    auto g = Compile(schema);
    ASSERT_TRUE(g) << schema.dump();
    for (int i = 0; i < 60; ++i) {
      std::string v = RandomNumber(rng, 330, type == "integer" ? 0 : 4);
      if (i % 6 == 0 && lo.present) v = lo.json.dump();  // the bounds themselves
      if (i % 6 == 1 && hi.present) v = hi.json.dump();
      if (v == "-0") continue;  // a spelling the grammar leaves out
      const bool want = Within(std::strtod(v.c_str(), nullptr), lo, hi) &&
                        (type != "integer" || v.find('.') == std::string::npos);
      EXPECT_EQ(Matches(g, v), want) << schema.dump() << " value " << v;
      ++checked;
      inside += want;
    }
  }
  // The trials exercise both outcomes.
  EXPECT_GT(inside, checked / 10);
  EXPECT_LT(inside, checked * 9 / 10);
}

TEST(JsonSchemaBounds, IntegersWithIntegerBounds) { CheckRandomBounds("integer", true, 1); }
TEST(JsonSchemaBounds, IntegersWithDecimalBounds) { CheckRandomBounds("integer", false, 2); }
TEST(JsonSchemaBounds, NumbersWithIntegerBounds) { CheckRandomBounds("number", true, 3); }
TEST(JsonSchemaBounds, NumbersWithDecimalBounds) { CheckRandomBounds("number", false, 4); }

TEST(JsonSchemaBounds, ExclusiveZeroAndLargeMagnitudes) {
  auto pos = Compile(Json::parse(R"({"type": "number", "exclusiveMinimum": 0})"));
  EXPECT_FALSE(Matches(pos, "0"));
  EXPECT_FALSE(Matches(pos, "0.0"));
  EXPECT_FALSE(Matches(pos, "-0.5"));
  EXPECT_TRUE(Matches(pos, "0.0000000000000001"));
  EXPECT_TRUE(Matches(pos, "12.5"));
  EXPECT_TRUE(Matches(pos, "9999999999999999"));
  // Above 2^53 the next double is 2 away: a value between parses onto the bound.
  auto big = Compile(Json::parse(R"({"type": "number", "exclusiveMaximum": 9007199254740992})"));
  EXPECT_FALSE(Matches(big, "9007199254740992"));
  EXPECT_FALSE(Matches(big, "9007199254740991.5"));  // parses to 2^53 itself
  EXPECT_TRUE(Matches(big, "9007199254740991"));
  EXPECT_TRUE(Matches(big, "-3"));
  // Draft 4 writes exclusiveness as a boolean beside minimum.
  auto d4 = Compile(Json::parse(R"({"type": "integer", "minimum": 5, "exclusiveMinimum": true})"));
  EXPECT_FALSE(Matches(d4, "5"));
  EXPECT_TRUE(Matches(d4, "6"));
  // The stricter of two lower bounds wins.
  auto both = Compile(Json::parse(R"({"type": "integer", "minimum": 3, "exclusiveMinimum": 3})"));
  EXPECT_FALSE(Matches(both, "3"));
  EXPECT_TRUE(Matches(both, "4"));
  EXPECT_NE(Refusal(Json::parse(R"({"type": "integer", "minimum": 3, "maximum": 2})")).find("no "),
            std::string::npos);
  EXPECT_NE(Refusal(Json::parse(R"({"type": "number", "minimum": "3"})")).find("must be a number"),
            std::string::npos);
}

TEST(JsonSchemaBounds, UntypedBoundsMeanANumber) {
  auto g = Compile(Json::parse(R"({"minimum": 1, "maximum": 2})"));
  EXPECT_TRUE(Matches(g, "1.5"));
  EXPECT_FALSE(Matches(g, "2.5"));
  auto one = Compile(Json::parse(R"({"type": "integer", "multipleOf": 1, "maximum": 0})"));
  EXPECT_TRUE(Matches(one, "-7"));
  EXPECT_FALSE(Matches(one, "1"));
}

struct FormatCase {
  const char* format;
  std::vector<const char*> valid, invalid;
};

TEST(JsonSchemaFormats, ValidAndInvalidStrings) {
  const std::vector<FormatCase> cases = {
      {"date",
       {"2024-02-29", "2000-02-29", "0001-01-01", "1999-12-31"},
       {"2023-02-29", "1900-02-29", "2023-13-01", "2023-04-31", "0000-01-01", "2023-1-01"}},
      {"time",
       {"12:34:56Z", "00:00:00+05:30", "23:59:59.123456-01:00"},
       {"24:00:00Z", "12:34:56", "12:60:00Z", "12:34:56.1234567Z"}},
      {"date-time",
       {"2024-01-01T00:00:00Z", "1999-12-31T23:59:59.5+01:00"},
       {"2024-01-01 00:00:00Z", "2024-01-01T00:00:00", "2024-02-30T00:00:00Z"}},
      {"duration", {"P1D", "PT1H30M", "P2DT3S", "P4W", "PT0S"}, {"P", "PT", "1D", "P1H"}},
      {"uuid",
       {"123e4567-e89b-12d3-a456-426614174000"},
       {"123e4567e89b12d3a456426614174000", "123E4567-E89B-12D3-A456-42661417400"}},
      {"uuid4", {"123e4567-e89b-42d3-a456-426614174000"}, {"123e4567-e89b-12d3-a456-426614174000"}},
      {"email",
       {"a@example.com", "first.last+tag@mail.example.org"},
       {"a@b", "@example.com", "a@example.test", "a@example.localhost", "a b@example.com"}},
      {"hostname", {"example.com", "a-b.c.example.org"}, {"-a.com", "example", "a..com"}},
      {"ipv4",
       {"192.168.0.1", "0.0.0.0", "255.255.255.255"},
       {"256.1.1.1", "01.1.1.1", "1.1.1", "1.1.1.1.1"}},
      {"ipv6", {"2001:db8:0:0:0:0:0:1"}, {"2001:db8::1:2:3:4:5:6:7", "12345::"}},
      {"uri",
       {"https://example.com", "http://example.org:8080/a/b?x=1#top"},
       {"example.com", "ftp://example.com", "https://"}},
      {"json-pointer", {"", "/a/b~0c/~1"}, {"a", "/~2"}},
      {"color", {"#00ff7f"}, {"00ff7f", "#00FF7"}},
      // pydantic's own formats (IPvAnyAddress, IPv4Interface, IPv4Network, NameEmail, ...).
      {"ipvanyaddress", {"10.0.0.1", "2001:db8:0:0:0:0:0:1"}, {"10.0.0.1/8", "1234567890"}},
      {"ipv4interface", {"10.0.0.1/24", "0.0.0.0/0", "1.2.3.4/32"}, {"10.0.0.1", "1.2.3.4/33"}},
      {"ipv6interface", {"2001:db8:0:0:0:0:0:1/64"}, {"2001:db8:0:0:0:0:0:1/129"}},
      {"ipvanyinterface", {"1.2.3.4/32", "2001:db8:0:0:0:0:0:1/128"}, {"1.2.3.4"}},
      // Networks: host bits zero (as ipaddress's strict parse wants).
      {"ipv4network",
       {"10.0.0.0/8", "172.16.0.0/16", "192.168.1.0/24", "1.2.3.4/32"},
       {"10.0.0.1/8", "192.168.1.1/24", "10.0.0.0", "10.1.0.0/8"}},
      {"ipv6network",
       {"2001:db8:0:0:0:0:0:0/128", "2001:db8:1:2:0:0:0:0/64"},
       {"2001:db8:1:2:0:0:0:1/64"}},
      {"ipvanynetwork", {"10.0.0.0/8", "2001:db8:1:2:0:0:0:0/64"}, {"10.0.0.1/8"}},
      {"name-email",
       {"ada@example.com", "Ada Lovelace <ada@example.com>"},
       {"Ada Lovelace", "Ada <ada@example>", "<ada@example.com>"}},
  };
  for (const auto& c : cases) {
    auto g = Compile({{"type", "string"}, {"format", c.format}});
    for (const char* v : c.valid) EXPECT_TRUE(Matches(g, Json(v).dump())) << c.format << " " << v;
    for (const char* v : c.invalid) {
      EXPECT_FALSE(Matches(g, Json(v).dump())) << c.format << " " << v;
    }
  }
}

TEST(JsonSchemaFormats, EveryListedFormatCompilesAndAnnotationsConstrainNothing) {
  int n = 0;
  for (const char* const* f = ConstrainedFormats(); *f; ++f, ++n) {
    EXPECT_TRUE(Compile({{"type", "string"}, {"format", *f}})) << *f;
  }
  EXPECT_GE(n, 20);
  for (const char* f : {"binary", "password", "path", "unknown-thing"}) {
    auto g = Compile({{"type", "string"}, {"format", f}});
    EXPECT_TRUE(Matches(g, R"("anything at all")")) << f;
  }
  // Lengths are accepted where the format already implies them.
  EXPECT_TRUE(Compile(Json::parse(R"({"format": "date", "minLength": 10, "maxLength": 10})")));
}

TEST(JsonSchemaPattern, PatternsAndLengthsInObjects) {
  auto g = Compile(Json::parse(R"({"type": "object", "properties": {
      "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2,4}$"},
      "tag": {"type": "string", "pattern": "^[a-z]+$", "minLength": 1}},
      "required": ["code", "tag"], "additionalProperties": false})"));
  EXPECT_TRUE(Matches(g, R"({"code": "ABC-123", "tag": "x"})"));
  EXPECT_FALSE(Matches(g, R"({"code": "ABC-1", "tag": "x"})"));
  EXPECT_FALSE(Matches(g, R"({"code": "ABC-123", "tag": ""})"));
  EXPECT_NE(Refusal(Json::parse(R"({"type": "string", "pattern": "^a+$", "maxLength": 3})"))
                .find("'minLength'/'maxLength'"),
            std::string::npos);
}

TEST(JsonSchemaArrays, TuplesAndClosedTuples) {
  // pydantic tuple[int, str]: prefixItems, no further items.
  auto pair = Compile(Json::parse(R"({"type": "array", "prefixItems": [{"type": "integer"},
      {"type": "string"}], "minItems": 2, "maxItems": 2})"));
  EXPECT_TRUE(Matches(pair, R"([1, "a"])"));
  EXPECT_FALSE(Matches(pair, R"([1])"));
  EXPECT_FALSE(Matches(pair, R"(["a", 1])"));
  EXPECT_FALSE(Matches(pair, R"([1, "a", 2])"));
  auto closed = Compile(Json::parse(
      R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}], "items": false})"));
  EXPECT_TRUE(Matches(closed, "[]"));
  EXPECT_TRUE(Matches(closed, "[1]"));
  EXPECT_TRUE(Matches(closed, "[1, true]"));
  EXPECT_FALSE(Matches(closed, "[1, true, 3]"));
  // Open tuple: further items follow `items`.
  auto open = Compile(Json::parse(
      R"({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"},
          "minItems": 1})"));
  EXPECT_TRUE(Matches(open, R"(["a"])"));
  EXPECT_TRUE(Matches(open, R"(["a", 1, 2, 3])"));
  EXPECT_FALSE(Matches(open, R"([])"));
  EXPECT_FALSE(Matches(open, R"(["a", "b"])"));
  // tuple[int, ...] and sets of at most one item.
  auto ints = Compile(Json::parse(R"({"type": "array", "items": {"type": "integer"}})"));
  EXPECT_TRUE(Matches(ints, "[1, 2, 3]"));
  EXPECT_TRUE(Compile(Json::parse(R"({"type": "array", "uniqueItems": true, "maxItems": 1})")));
}

TEST(JsonSchemaMaps, PropertyNamesAndCounts) {
  // pydantic dict[constr(max_length=3), bool]: keys held to their schema.
  auto short_keys = Compile(Json::parse(R"({"type": "object", "additionalProperties":
      {"type": "boolean"}, "propertyNames": {"maxLength": 3}})"));
  EXPECT_TRUE(Matches(short_keys, R"({"ab": true, "xyz": false})"));
  EXPECT_TRUE(Matches(short_keys, "{}"));
  EXPECT_FALSE(Matches(short_keys, R"({"abcd": true})"));
  EXPECT_FALSE(Matches(short_keys, R"({"ab": 1})"));
  // dict[Literal["a", "b"], int]; no additionalProperties: any value.
  auto named = Compile(Json::parse(R"({"type": "object", "propertyNames": {"enum": ["a", "b"]}})"));
  EXPECT_TRUE(Matches(named, R"({"a": 1, "b": [2]})"));
  EXPECT_FALSE(Matches(named, R"({"c": 1})"));
  auto pattern = Compile(Json::parse(
      R"({"type": "object", "additionalProperties": {"type": "integer"},
          "propertyNames": {"pattern": "^[a-z]+$"}, "minProperties": 1, "maxProperties": 2})"));
  EXPECT_TRUE(Matches(pattern, R"({"a": 1})"));
  EXPECT_TRUE(Matches(pattern, R"({"a": 1, "bc": 2})"));
  EXPECT_FALSE(Matches(pattern, "{}"));
  EXPECT_FALSE(Matches(pattern, R"({"a": 1, "b": 2, "c": 3})"));
  EXPECT_FALSE(Matches(pattern, R"({"A": 1})"));
  // Closed objects stay empty; refusals name what cannot hold.
  EXPECT_TRUE(Matches(
      Compile(Json::parse(R"({"additionalProperties": false, "maxProperties": 3})")), "{}"));
  EXPECT_NE(Refusal(Json::parse(R"({"properties": {"a": {}}, "maxProperties": 1})"))
                .find("maxProperties"),
            std::string::npos);
  EXPECT_NE(
      Refusal(Json::parse(R"({"type": "object", "propertyNames": {"enum": [1]}})")).find("strings"),
      std::string::npos);
  EXPECT_NE(Refusal(Json::parse(R"({"type": "object", "minProperties": 2, "maxProperties": 1})"))
                .find("below"),
            std::string::npos);
}

TEST(JsonSchemaUnions, BranchStetCannotExpressIsLeftOut) {
  // pydantic's Decimal: a number, or a string with a look-ahead pattern.
  auto dec = Compile(Json::parse(R"({"anyOf": [{"type": "number"},
      {"type": "string", "pattern": "^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$"}]})"));
  EXPECT_TRUE(Matches(dec, "1.25"));
  EXPECT_FALSE(Matches(dec, R"("1.25")"));
  // Only when another branch remains; a malformed branch is still an error.
  EXPECT_NE(Refusal(Json::parse(R"({"anyOf": [{"type": "string", "pattern": "(?=x)y"}]})"))
                .find("look-ahead"),
            std::string::npos);
  EXPECT_NE(Refusal(Json::parse(R"({"anyOf": [{"type": "number"}, {"type": 7}]})")).find("'type'"),
            std::string::npos);
  // What a dropped branch defined is gone: the $defs it reached are redefined cleanly.
  auto refs = Compile(Json::parse(R"({"$defs": {"A": {"type": "integer", "minimum": 0}},
      "anyOf": [{"type": "object", "properties": {"a": {"$ref": "#/$defs/A"},
                  "b": {"type": "string", "pattern": "(?=x)y"}}},
                {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
                 "required": ["a"]}]})"));
  EXPECT_TRUE(Matches(refs, R"({"a": 3})"));
  EXPECT_FALSE(Matches(refs, R"({"a": -3})"));
  EXPECT_FALSE(Matches(refs, R"({"a": 3, "b": "x"})"));
}

}  // namespace
}  // namespace stet::server

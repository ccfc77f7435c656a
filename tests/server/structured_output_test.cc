// The tool-call grammars: in every template family's format, a call the
// grammar accepts is one the tool-call parser reads back (same function, same
// arguments), and what the grammar refuses includes unknown functions and
// arguments off their schema.
#include "server/structured/structured_output.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/json_schema_test_util.h"
#include "server/structured/tool_formats.h"

namespace stet::server {
namespace {

using testing::GbnfMatches;

const Json& Tools() { return testing::WeatherAndPingTools(); }
bool Matches(const std::string& gbnf, const std::string& s) { return GbnfMatches(gbnf, s); }

struct Case {
  const ToolCallFormat& f;
  std::string one, two;  // one call; two calls
};

TEST(ToolCallGrammar, AcceptedCallsParseBackInEveryFormat) {
  const std::string w = R"({"name": "get_weather", "arguments": {"city": "Paris", "days": 2}})";
  const std::string p = R"({"name": "ping", "arguments": {}})";
  const std::string wl = R"({"name": "get_weather", "parameters": {"city": "Paris", "days": 2}})";
  const std::vector<Case> cases = {
      {HermesToolFormat(), "<tool_call>\n" + w + "\n</tool_call>",
       "<tool_call>\n" + w + "\n</tool_call>\n<tool_call>\n" + p + "\n</tool_call>"},
      {Llama3ToolFormat(), wl, wl + "; " + R"({"name": "ping", "parameters": {}})"},
      {MistralToolFormat(), "[TOOL_CALLS][" + w + "]", "[TOOL_CALLS][" + w + ", " + p + "]"},
      {GenericToolFormat(), w, "[" + w + ", " + p + "]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.f.name());
    auto one = ToolCallGbnf(c.f, Tools(), "", /*parallel=*/false);
    auto many = ToolCallGbnf(c.f, Tools(), "", /*parallel=*/true);
    auto named = ToolCallGbnf(c.f, Tools(), "ping", /*parallel=*/true);
    ASSERT_TRUE(one.ok() && many.ok() && named.ok());
    EXPECT_TRUE(Matches(*one, c.one));
    EXPECT_FALSE(Matches(*one, c.two));
    EXPECT_TRUE(Matches(*many, c.two));
    EXPECT_FALSE(Matches(*named, c.one));  // only ping may be called
    ParsedAnswer a = ParseToolCalls(c.f, c.two, c.two, Tools(), 1, 0);
    ASSERT_EQ(a.calls.size(), 2u);
    EXPECT_EQ(a.calls[0].name, "get_weather");
    EXPECT_EQ(a.calls[0].arguments, R"({"city":"Paris","days":2})");
    EXPECT_EQ(a.calls[1].name, "ping");
  }
  auto g = ToolCallGbnf(GenericToolFormat(), Tools(), "", false);
  EXPECT_FALSE(Matches(*g, R"({"name": "get_time", "arguments": {}})"));
  EXPECT_FALSE(Matches(*g, R"({"name": "get_weather", "arguments": {"days": 2}})"));
  EXPECT_FALSE(Matches(*g, R"({"name": "get_weather", "arguments": {"city": 3}})"));
}

TEST(ToolCallGrammar, RefusesUnknownFunctionsAndUnsupportedSchemas) {
  RequestParams p;
  auto e = ForceToolCalls(HermesToolFormat(), Tools(), "nope", false, &p);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "tool_choice");
  const Json bad = Json::parse(R"([{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=x)y"}}}}}])");
  e = ForceToolCalls(HermesToolFormat(), bad, "", false, &p);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->message.find("'pattern'"), std::string::npos);
  EXPECT_FALSE(p.grammar);
}

}  // namespace
}  // namespace stet::server

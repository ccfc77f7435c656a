// The registry of tool-call formats (server/structured/tool_formats.cc): each
// row must be complete — a unique name, a template sample it detects and no
// earlier row claims, a forced grammar that accepts what the format writes,
// a parser that reads it back, and a row in docs/api.md's format table — so a
// new format is covered here the moment its row is added, and these tests
// fail until it is whole.
#include "server/structured/tool_formats.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "server/json_schema_test_util.h"
#include "support/test_support.h"

namespace stet::server {
namespace {

using testing::GbnfMatches;

const Json& Tools() { return testing::WeatherAndPingTools(); }
bool Matches(const std::string& gbnf, const std::string& s) { return GbnfMatches(gbnf, s); }

const ToolCall kWeather{"", "get_weather", R"({"city":"Paris","days":2})"};
const ToolCall kPing{"", "ping", "{}"};

TEST(ToolFormatRegistry, NamesAreUniqueAndFound) {
  std::set<std::string> names;
  for (const ToolCallFormat* f : ToolCallFormats()) {
    ASSERT_NE(f, nullptr);
    EXPECT_NE(std::string(f->name()), "");
    EXPECT_TRUE(names.insert(f->name()).second) << "twice: " << f->name();
    EXPECT_EQ(FindToolCallFormat(f->name()), f);
    for (const std::string& stop : f->StopStrings()) EXPECT_NE(stop, "") << f->name();
  }
  EXPECT_EQ(FindToolCallFormat("no-such-format"), nullptr);
}

TEST(ToolFormatRegistry, EachSampleIsDetectedAsItsOwnFormat) {
  for (const ToolCallFormat* f : ToolCallFormats()) {
    EXPECT_EQ(&DetectToolCallFormat(f->TemplateSample()), f)
        << f->name() << ": its sample is claimed by an earlier row, or not detected";
  }
  // The last row takes every template the others do not.
  EXPECT_TRUE(ToolCallFormats().back()->Detects(""));
}

TEST(ToolFormatRegistry, WrittenCallsPassTheForcedGrammarAndParseBack) {
  for (const ToolCallFormat* f : ToolCallFormats()) {
    SCOPED_TRACE(f->name());
    const std::string one = f->Write({kWeather});
    const std::string two = f->Write({kWeather, kPing});
    auto single = ToolCallGbnf(*f, Tools(), "", /*parallel=*/false);
    auto many = ToolCallGbnf(*f, Tools(), "", /*parallel=*/true);
    auto named = ToolCallGbnf(*f, Tools(), "ping", /*parallel=*/true);
    ASSERT_TRUE(single.ok() && many.ok() && named.ok());
    EXPECT_TRUE(Matches(*single, one)) << one;
    EXPECT_FALSE(Matches(*single, two)) << two;
    EXPECT_TRUE(Matches(*many, two)) << two;
    EXPECT_FALSE(Matches(*named, one)) << one;
    const ParsedAnswer a = ParseToolCalls(*f, two, two, Tools(), 9, 0);
    ASSERT_EQ(a.calls.size(), 2u) << two;
    EXPECT_EQ(a.calls[0].name, "get_weather");
    EXPECT_EQ(a.calls[0].arguments, kWeather.arguments);
    EXPECT_EQ(a.calls[1].name, "ping");
    EXPECT_EQ(a.calls[0].id, ToolCallId(9, 0, 0));
    EXPECT_TRUE(ParseToolCalls(*f, one + " and more", "t", Tools(), 9, 0).calls.empty());
  }
}

// Streaming reads CallBound on every prefix: no prefix of written calls may
// place their start later than it is (content would go out that is a call),
// and a prefix of plain prose either bounds at its end or rules calls out.
TEST(ToolFormatRegistry, CallBoundNeverPassesACallsStart) {
  for (const ToolCallFormat* f : ToolCallFormats()) {
    SCOPED_TRACE(f->name());
    const std::string two = f->Write({kWeather, kPing});
    for (size_t n = 0; n <= two.size(); ++n) {
      const size_t b = f->CallBound(two.substr(0, n));
      EXPECT_EQ(b, 0u) << two.substr(0, n);
    }
    const std::string prose = "It is sunny.";
    const size_t b = f->CallBound(prose);
    EXPECT_TRUE(b == prose.size() || b == std::string::npos) << b;
    if (b == prose.size()) {  // calls may follow prose: never before where they begin
      const std::string after = prose + " " + two;
      for (size_t n = prose.size(); n <= after.size(); ++n)
        EXPECT_LE(f->CallBound(after.substr(0, n)), prose.size() + 1) << after.substr(0, n);
    }
  }
}

// docs/api.md's tool-call table has one row per format, in the registry's order.
TEST(ToolFormatRegistry, DocsListEveryFormatInOrder) {
  const std::string api = stet::testing::ReadFileOrDie(stet::testing::SourceDir() + "/docs/api.md");
  const std::string head = "| format | detected by | the model writes |\n|---|---|---|\n";
  size_t pos = api.find(head);
  ASSERT_NE(pos, std::string::npos) << "docs/api.md has no tool-call format table";
  pos += head.size();
  for (const ToolCallFormat* f : ToolCallFormats()) {
    const std::string row = std::string("| `") + f->name() + "` ";
    EXPECT_EQ(api.compare(pos, row.size(), row), 0)
        << "docs/api.md's format table lacks a row for '" << f->name() << "' here";
    pos = api.find('\n', pos) + 1;
  }
  EXPECT_NE(api.compare(pos, 1, "|"), 0) << "docs/api.md lists a format the registry lacks";
}

}  // namespace
}  // namespace stet::server

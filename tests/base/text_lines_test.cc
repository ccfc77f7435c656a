// ForEachLine: what the line-oriented readers (JSONL datasets, prompt sets,
// record cassettes) see: 1-based numbers an editor shows, "\r\n" endings
// stripped, blank lines skipped but counted, the first error returned.
#include "base/text_lines.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace stet {
namespace {

std::vector<std::pair<int, std::string>> Lines(std::string_view text) {
  std::vector<std::pair<int, std::string>> out;
  Status st = ForEachLine(text, [&](const std::string& line, int n) {
    out.emplace_back(n, line);
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST(TextLines, NumbersSkipsBlanksAndStripsCr) {
  using L = std::vector<std::pair<int, std::string>>;
  EXPECT_EQ(Lines(""), L{});
  EXPECT_EQ(Lines("a"), (L{{1, "a"}}));
  EXPECT_EQ(Lines("a\n"), (L{{1, "a"}}));
  EXPECT_EQ(Lines("a\r\n\r\n \t\nb\r\n"), (L{{1, "a"}, {4, "b"}}));
  EXPECT_EQ(Lines("\n\nx y\n"), (L{{3, "x y"}}));
  EXPECT_EQ(Lines("a\rb\n"), (L{{1, "a\rb"}}));  // only a final \r is an ending
  EXPECT_EQ(Lines("  lead\n"), (L{{1, "  lead"}}));
}

TEST(TextLines, BlankIsWhatTheCallerSays) {
  std::vector<int> seen;
  auto collect = [&](const std::string&, int n) {
    seen.push_back(n);
    return Status::Ok();
  };
  // One final \r is the ending; a second one is text unless the caller counts it blank.
  ASSERT_TRUE(ForEachLine("x\n\r\r\n", collect).ok());
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
  seen.clear();
  ASSERT_TRUE(ForEachLine("x\n\r\r\n", collect, " \t\r").ok());
  EXPECT_EQ(seen, (std::vector<int>{1}));
}

TEST(TextLines, StopsAtTheFirstError) {
  int seen = 0;
  Status st = ForEachLine("1\n2\n3\n", [&](const std::string& line, int n) {
    ++seen;
    return n == 2 ? InvalidArgument("line " + line) : Status::Ok();
  });
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "line 2");
}

TEST(TextLines, TrimCutsOnlyTheGivenCharacters) {
  EXPECT_EQ(Trim(" \t key \r\n"), "key");
  EXPECT_EQ(Trim(" \t\r\n"), "");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim("a b"), "a b");
  EXPECT_EQ(Trim("\nx\n", " \t\r"), "\nx\n");
}

}  // namespace
}  // namespace stet

// SSE parsing: events complete only at a blank line, whatever the chunking;
// CRLF / CR / LF line ends; comments, multi-line data, [DONE], a final event
// without its blank line, a byte-order mark split across chunks.
#include "wire/sse.h"

#include <gtest/gtest.h>

namespace stet::wire {
namespace {

std::vector<SseEvent> ParseChunks(const std::vector<std::string>& chunks) {
  SseParser p;
  std::vector<SseEvent> out;
  for (const auto& c : chunks) p.Feed(c, &out);
  p.Finish(&out);
  return out;
}

const char kStream[] =
    ": keep-alive comment\n"
    "data: {\"a\":1}\n"
    "\n"
    "event: ping\n"
    "id: 7\n"
    "data: line one\n"
    "data: line two\n"
    "\n"
    "data:no-space\n"
    "\n"
    "data: [DONE]\n"
    "\n";

TEST(Sse, WholeStream) {
  auto ev = ParseChunks({kStream});
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].data, "{\"a\":1}");
  EXPECT_EQ(ev[1].event, "ping");
  EXPECT_EQ(ev[1].id, "7");
  EXPECT_EQ(ev[1].data, "line one\nline two");
  EXPECT_EQ(ev[2].data, "no-space");
  EXPECT_TRUE(IsDoneEvent(ev[3]));
  EXPECT_FALSE(IsDoneEvent(ev[0]));
}

TEST(Sse, EveryChunkingGivesTheSameEvents) {
  const std::string s = kStream;
  const auto whole = ParseChunks({s});
  for (size_t cut = 1; cut < s.size(); ++cut) {
    const auto two = ParseChunks({s.substr(0, cut), s.substr(cut)});
    ASSERT_EQ(two.size(), whole.size()) << "cut at " << cut;
    for (size_t i = 0; i < two.size(); ++i)
      EXPECT_EQ(two[i].data, whole[i].data) << "cut at " << cut;
  }
  std::vector<std::string> bytes;
  for (char c : s) bytes.emplace_back(1, c);
  const auto one_by_one = ParseChunks(bytes);
  ASSERT_EQ(one_by_one.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_EQ(one_by_one[i].data, whole[i].data);
}

TEST(Sse, CrLfAndBareCr) {
  auto crlf = ParseChunks({"data: x\r", "\n\r\ndata: y\r\n\r\n"});
  ASSERT_EQ(crlf.size(), 2u);
  EXPECT_EQ(crlf[0].data, "x");
  EXPECT_EQ(crlf[1].data, "y");
  auto cr = ParseChunks({"data: a\r\rdata: b\r\r"});
  ASSERT_EQ(cr.size(), 2u);
  EXPECT_EQ(cr[1].data, "b");
}

TEST(Sse, IncompleteEventWaitsForBlankLine) {
  SseParser p;
  std::vector<SseEvent> out;
  p.Feed("data: {\"partial\":", &out);
  EXPECT_TRUE(out.empty());
  p.Feed(" true}\n", &out);
  EXPECT_TRUE(out.empty());  // no blank line yet
  p.Feed("\n", &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, "{\"partial\": true}");
}

TEST(Sse, FinalEventWithoutBlankLineAndBom) {
  auto ev = ParseChunks({"\xEF\xBB",
                         "\xBF"
                         "data: first\n\ndata: last"});
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].data, "first");
  EXPECT_EQ(ev[1].data, "last");
}

TEST(Sse, EventsWithoutDataAreNotDispatched) {
  auto ev = ParseChunks({"event: x\n\nretry: 10\n\n: only a comment\n\n"});
  EXPECT_TRUE(ev.empty());
}

}  // namespace
}  // namespace stet::wire

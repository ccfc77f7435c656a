// Streams folded into the answers they stand for, in each wire shape:
// tool-call fragments merged by index, logprobs and usage kept, choices by
// index, bad events counted, the Responses API's final object, and which
// event ends a stream.
#include "wire/stream_fold.h"

#include <gtest/gtest.h>

namespace stet::wire {
namespace {

using J = Json;

SseEvent Data(const J& j) { return SseEvent{"", j.dump(), ""}; }

TEST(StreamFold, ChatToolCallsContentLogprobsAndUsage) {
  StreamFold f(ApiKind::kChat);
  const J base = {{"id", "c1"},
                  {"object", "chat.completion.chunk"},
                  {"created", 5},
                  {"model", "m-2024"},
                  {"system_fingerprint", "fp_x"}};
  auto chunk = [&](J choice) {
    J j = base;
    j["choices"] = J::array({choice});
    return Data(j);
  };
  f.Add(chunk({{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}}));
  EXPECT_FALSE(f.content_seen());
  f.Add(chunk({{"index", 0},
               {"delta", {{"content", "Hel"}}},
               {"logprobs", {{"content", J::array({{{"token", "Hel"}, {"logprob", -0.5}}})}}}}));
  EXPECT_TRUE(f.content_seen());
  f.Add(chunk({{"index", 0},
               {"delta", {{"content", "lo"}}},
               {"logprobs", {{"content", J::array({{{"token", "lo"}, {"logprob", -0.25}}})}}}}));
  f.Add(chunk(
      {{"index", 0},
       {"delta",
        {{"tool_calls", J::array({{{"index", 1},
                                   {"id", "b"},
                                   {"type", "function"},
                                   {"function", {{"name", "g"}, {"arguments", "{\"y\""}}}}})}}}}));
  f.Add(
      chunk({{"index", 0},
             {"delta",
              {{"tool_calls", J::array({{{"index", 0},
                                         {"id", "a"},
                                         {"type", "function"},
                                         {"function", {{"name", "f"}, {"arguments", ""}}}}})}}}}));
  f.Add(
      chunk({{"index", 0},
             {"delta",
              {{"tool_calls", J::array({{{"index", 0}, {"function", {{"arguments", "{}"}}}}})}}}}));
  f.Add(chunk(
      {{"index", 0},
       {"delta",
        {{"tool_calls", J::array({{{"index", 1}, {"function", {{"arguments", ":1}"}}}}})}}}}));
  f.Add(chunk({{"index", 0}, {"delta", J::object()}, {"finish_reason", "tool_calls"}}));
  J usage = base;
  usage["choices"] = J::array();
  usage["usage"] = {{"prompt_tokens", 3}, {"completion_tokens", 2}};
  f.Add(Data(usage));
  f.Add(SseEvent{"", "[DONE]", ""});
  const J r = f.Result();
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["model"], "m-2024");
  EXPECT_EQ(r["system_fingerprint"], "fp_x");
  const J& m = r["choices"][0]["message"];
  EXPECT_EQ(m["content"], "Hello");
  ASSERT_EQ(m["tool_calls"].size(), 2u);
  EXPECT_EQ(m["tool_calls"][0], J({{"id", "b"},
                                   {"type", "function"},
                                   {"function", {{"name", "g"}, {"arguments", "{\"y\":1}"}}}}));
  EXPECT_EQ(
      m["tool_calls"][1],
      J({{"id", "a"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}));
  EXPECT_EQ(r["choices"][0]["logprobs"]["content"].size(), 2u);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(r["usage"]["completion_tokens"], 2);
  EXPECT_EQ(f.bad_events(), 0);
}

TEST(StreamFold, CompletionsAndChoicesByIndex) {
  StreamFold f(ApiKind::kCompletions);
  for (int i = 0; i < 3; ++i) {
    for (int idx : {1, 0}) {
      f.Add(Data({{"id", "x"},
                  {"model", "m"},
                  {"choices", J::array({{{"index", idx},
                                         {"text", std::to_string(idx) + "t" + std::to_string(i)},
                                         {"logprobs",
                                          {{"tokens", J::array({"t"})},
                                           {"token_logprobs", J::array({-1.0})},
                                           {"top_logprobs", J::array({{{"t", -1.0}}})},
                                           {"text_offset", J::array({i})}}},
                                         {"finish_reason", i == 2 ? J("stop") : J()}}})}}));
    }
  }
  f.Add(SseEvent{"", "not json", ""});
  const J r = f.Result();
  ASSERT_EQ(r["choices"].size(), 2u);
  EXPECT_EQ(r["choices"][0]["text"], "0t00t10t2");
  EXPECT_EQ(r["choices"][1]["text"], "1t01t11t2");
  EXPECT_EQ(r["choices"][0]["logprobs"]["tokens"].size(), 3u);
  EXPECT_EQ(r["choices"][1]["finish_reason"], "stop");
  EXPECT_EQ(f.bad_events(), 1);
}

TEST(StreamFold, ResponsesFinalObjectAndTerminalEvents) {
  StreamFold f(ApiKind::kResponses);
  f.Add(SseEvent{
      "response.created",
      J({{"type", "response.created"}, {"response", {{"id", "r"}, {"status", "in_progress"}}}})
          .dump(),
      ""});
  f.Add(SseEvent{"response.output_text.delta",
                 J({{"type", "response.output_text.delta"}, {"delta", "Hi"}}).dump(), ""});
  const SseEvent done{"response.completed",
                      J({{"type", "response.completed"},
                         {"response", {{"id", "r"}, {"status", "completed"}, {"model", "m"}}}})
                          .dump(),
                      ""};
  EXPECT_TRUE(IsTerminalEvent(ApiKind::kResponses, done));
  EXPECT_FALSE(
      IsTerminalEvent(ApiKind::kResponses, SseEvent{"response.output_text.delta", "{}", ""}));
  EXPECT_TRUE(IsTerminalEvent(ApiKind::kResponses, SseEvent{"", done.data, ""}));  // no event: line
  EXPECT_TRUE(IsTerminalEvent(ApiKind::kChat, SseEvent{"", "[DONE]", ""}));
  EXPECT_FALSE(IsTerminalEvent(ApiKind::kChat, SseEvent{"", "{}", ""}));
  f.Add(done);
  EXPECT_TRUE(f.content_seen());
  EXPECT_EQ(f.Result()["status"], "completed");
  EXPECT_EQ(f.Result()["output_text"], "Hi");
}

}  // namespace
}  // namespace stet::wire

// Answers read in each wire shape: chat (content, tool calls, logprobs with
// bytes and alternatives, token ids at the top), completions (the four
// logprobs arrays, prompt ids per choice), Responses (message text and its
// logprobs, function_call items, status), stream chunks (delta), choices
// sorted by index, and hostile or odd members read as absent, never thrown on.
#include "wire/answer.h"

#include <gtest/gtest.h>

namespace stet::wire {
namespace {

Json P(const char* s) { return Json::parse(s); }

TEST(ReadAnswer, Chat) {
  const Answer a = ReadAnswer(P(R"({"id": "c", "object": "chat.completion", "model": "m",
    "system_fingerprint": "fp_1", "prompt_token_ids": [1, 2],
    "choices": [{"index": 1, "message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
      "finish_reason": "tool_calls", "token_ids": [7]},
     {"index": 0, "message": {"role": "assistant", "content": "hé"}, "finish_reason": "stop",
      "logprobs": {"content": [{"token": "h", "logprob": -0.5, "bytes": [104],
        "top_logprobs": [{"token": "h", "logprob": -0.5}, {"token": "x", "logprob": null}]},
        {"token": "\ufffd", "logprob": -1, "bytes": [195, 169], "top_logprobs": []}]}}],
    "usage": {"prompt_tokens": 2}})"));
  EXPECT_EQ(a.system_fingerprint, "fp_1");
  EXPECT_EQ(a.model, "m");
  EXPECT_EQ(a.prompt_token_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.usage["prompt_tokens"], 2);
  ASSERT_EQ(a.choices.size(), 2u);
  const AnswerChoice& c0 = a.choices[0];  // sorted by index
  EXPECT_EQ(c0.text, "hé");
  EXPECT_EQ(c0.finish_reason, "stop");
  ASSERT_TRUE(c0.has_logprobs);
  ASSERT_EQ(c0.tokens.size(), 2u);
  EXPECT_EQ(*c0.tokens[1].bytes, "é");
  EXPECT_EQ(*c0.tokens[1].logprob, -1.0);
  ASSERT_EQ(c0.tokens[0].top.size(), 2u);
  EXPECT_EQ(c0.tokens[0].top[1].first, "x");
  EXPECT_FALSE(c0.tokens[0].top[1].second.has_value());
  const AnswerChoice& c1 = a.choices[1];
  EXPECT_EQ(c1.text, "");
  ASSERT_EQ(c1.tool_calls.size(), 1u);
  EXPECT_EQ(c1.tool_calls[0].id, "call_a");
  EXPECT_EQ(c1.tool_calls[0].name, "f");
  EXPECT_EQ(c1.token_ids, (std::vector<int64_t>{7}));
  EXPECT_FALSE(c1.has_logprobs);
}

TEST(ReadAnswer, CompletionsAndChunks) {
  const Answer a = ReadAnswer(P(R"({"object": "text_completion", "choices": [{"index": 0,
    "text": "ab", "prompt_token_ids": [3], "finish_reason": "length",
    "logprobs": {"tokens": ["a", 5], "token_logprobs": [null, -2.0],
      "top_logprobs": [null, {"b": -2.0, "c": -3.5}], "text_offset": [0, 1]}}]})"));
  ASSERT_EQ(a.choices.size(), 1u);
  const AnswerChoice& c = a.choices[0];
  EXPECT_EQ(c.text, "ab");
  EXPECT_EQ(c.prompt_token_ids, (std::vector<int64_t>{3}));
  ASSERT_EQ(c.tokens.size(), 2u);
  EXPECT_FALSE(c.tokens[0].logprob.has_value());
  EXPECT_EQ(c.tokens[1].token, "");  // not a string
  ASSERT_EQ(c.tokens[1].top.size(), 2u);
  EXPECT_EQ(c.tokens[1].top[1], (std::pair<std::string, std::optional<double>>{"c", -3.5}));
  const Answer chunk = ReadAnswer(P(R"({"object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": null}]})"));
  ASSERT_EQ(chunk.choices.size(), 1u);
  EXPECT_EQ(chunk.choices[0].text, "Hel");
  EXPECT_EQ(chunk.choices[0].finish_reason, "");
}

TEST(ReadAnswer, Responses) {
  const Json r = P(R"({"id": "resp_1", "object": "response", "status": "incomplete",
    "system_fingerprint": "fp", "prompt_token_ids": [1], "token_ids": [4, 5],
    "output": [{"type": "reasoning", "content": [{"type": "reasoning_text", "text": "hm"}]},
      {"type": "message", "content": [{"type": "output_text", "text": "Hi",
        "logprobs": [{"token": "Hi", "logprob": -0.25, "top_logprobs": []}]}]},
      {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{\"a\":1}"}]})");
  for (ApiKind kind : {ApiKind::kResponses, ApiKind::kOther}) {
    const Answer a = ReadAnswer(r, kind);
    EXPECT_EQ(a.status, "incomplete");
    ASSERT_EQ(a.choices.size(), 1u);
    const AnswerChoice& c = a.choices[0];
    EXPECT_EQ(c.text, "Hi");  // the reasoning item's text is not the answer's
    ASSERT_EQ(c.tokens.size(), 1u);
    EXPECT_EQ(*c.tokens[0].logprob, -0.25);
    ASSERT_EQ(c.tool_calls.size(), 1u);
    EXPECT_EQ(c.tool_calls[0].arguments, "{\"a\":1}");
    EXPECT_EQ(c.token_ids, (std::vector<int64_t>{4, 5}));
    EXPECT_EQ(a.prompt_token_ids, (std::vector<int64_t>{1}));
  }
  EXPECT_EQ(ReadAnswer(P(R"({"output_text": "x"})"), ApiKind::kResponses).choices[0].text, "x");
}

TEST(ReadAnswer, OddMembersReadAsAbsent) {
  for (const char* s :
       {R"([1, 2])", R"({"choices": 3})", R"({"choices": [1, "x", null]})",
        R"({"choices": [{"index": "0", "message": 5, "logprobs": {"content": 3}}]})",
        R"({"choices": [{"logprobs": {"content": [1, {"top_logprobs": [2, {}]}]}}]})",
        R"({"choices": [{"message": {"tool_calls": [1, {"function": 2}]}}]})",
        R"({"output": [1, {"type": "message", "content": [3]}]})",
        R"({"error": {"message": "bad"}})"}) {
    const Answer a = ReadAnswer(P(s));  // never throws
    for (const AnswerChoice& c : a.choices) EXPECT_EQ(c.index, 0) << s;
  }
  EXPECT_EQ(ReadAnswer(P(R"({"error": {"message": "bad"}})")).error["message"], "bad");
  EXPECT_FALSE(ReadAnswer(P(R"({"choices": 3})")).has_choices);
}

TEST(ToolCallsJson, WrittenAsOpenAiAndReadBack) {
  const std::vector<ToolCall> calls = {{"call_1", "f", "{}"}, {"call_2", "g", "{\"x\":1}"}};
  const Json plain = ToolCallsJson(calls, /*indexed=*/false);
  EXPECT_EQ(plain[1].dump(),
            R"({"id":"call_2","type":"function","function":{"name":"g","arguments":"{\"x\":1}"}})");
  EXPECT_EQ(ToolCallsJson(calls, /*indexed=*/true)[1]["index"], 1);
  Json answer = {{"choices", Json::array({{{"message", {{"tool_calls", plain}}}}})}};
  const Answer a = ReadAnswer(answer, ApiKind::kChat);
  ASSERT_EQ(a.choices[0].tool_calls.size(), 2u);
  EXPECT_EQ(a.choices[0].tool_calls[1].arguments, "{\"x\":1}");
}

}  // namespace
}  // namespace stet::wire

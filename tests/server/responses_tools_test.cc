// Function tools on /v1/responses without a network: the flat tool shape
// mapped to chat's, tool_choice, function_call / function_call_output input
// items as chat messages, and the output items and stream events of an answer
// holding text and two calls (the live tests' tiny model cannot write text
// before a call in the generic format).
#include "server/openai/responses_tools.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "server/openai/responses_api.h"
#include "server/openai/responses_format.h"

namespace stet::server {
namespace {

Json Parse(const std::string& s) { return Json::parse(s); }

std::string ErrorParam(const std::optional<ApiError>& e) { return e ? e->param : "(none)"; }

TEST(ResponsesTools, FlatToolsBecomeChatTools) {
  ResponsesTools t;
  ASSERT_FALSE(ReadResponsesTools(Parse(R"({"tools": [{"type": "function", "name": "f",
      "description": "d", "strict": true}], "tool_choice": {"type": "function", "name": "f"},
      "parallel_tool_calls": false})"),
                                  &t));
  EXPECT_EQ(t.chat_tools, Parse(R"([{"type": "function", "function": {"name": "f",
      "description": "d", "parameters": {"type": "object", "properties": {}}}}])"));
  EXPECT_EQ(t.forced, "f");
  EXPECT_FALSE(t.parallel);
  EXPECT_TRUE(t.parse);
  EXPECT_EQ(t.echo[0]["strict"], true);

  ResponsesTools none;
  ASSERT_FALSE(ReadResponsesTools(
      Parse(R"({"tools": [{"type": "function", "name": "f"}], "tool_choice": "none"})"), &none));
  EXPECT_FALSE(none.parse);
  ResponsesTools req;
  ASSERT_FALSE(ReadResponsesTools(
      Parse(R"({"tools": [{"type": "function", "name": "f"}], "tool_choice": "required"})"), &req));
  EXPECT_EQ(req.forced, "*");

  const std::pair<const char*, const char*> bad[] = {
      {R"({"tools": {}})", "tools"},
      {R"({"tools": [{"type": "web_search"}]})", "tools[0].type"},
      {R"({"tools": [{"type": "function", "function": {"name": "f"}}]})", "tools[0].name"},
      {R"({"tools": [{"type": "function", "name": "f", "parameters": []}]})",
       "tools[0].parameters"},
      {R"({"tools": [{"type": "function", "name": "f", "strict": 1}]})", "tools[0].strict"},
      {R"({"tool_choice": "required"})", "tool_choice"},
      {R"({"tool_choice": "sometimes"})", "tool_choice"},
      {R"({"tool_choice": {"type": "function"}})", "tool_choice.name"},
      {R"({"parallel_tool_calls": "yes"})", "parallel_tool_calls"}};
  for (const auto& [body, param] : bad) {
    ResponsesTools x;
    EXPECT_EQ(ErrorParam(ReadResponsesTools(Parse(body), &x)), param) << body;
  }
}

TEST(ResponsesTools, CallItemsBecomeChatMessages) {
  Json messages = Json::array();
  messages.push_back(Parse(R"({"role": "user", "content": "hi"})"));
  const Json items = Parse(R"([
      {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1}",
       "id": "fc_1", "status": "completed"},
      {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c2", "output": "two"},
      {"type": "function_call_output", "call_id": "c1",
       "output": [{"type": "input_text", "text": "o"}, {"type": "input_text", "text": "ne"}]}])");
  CallNames names;
  for (size_t i = 0; i < items.size(); ++i)
    ASSERT_FALSE(AppendToolItem(items[i], "input[" + std::to_string(i) + "]", &messages, &names));
  EXPECT_EQ(messages, Parse(R"([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c2", "content": "two", "name": "g"},
      {"role": "tool", "tool_call_id": "c1", "content": "o\nne", "name": "f"}])"));
  Json m = Json::array();
  EXPECT_EQ(ErrorParam(AppendToolItem(Parse(R"({"type": "function_call", "name": "f",
      "arguments": "{}"})"),
                                      "input[0]", &m, &names)),
            "input[0].call_id");
  EXPECT_EQ(ErrorParam(AppendToolItem(Parse(R"({"type": "function_call_output", "call_id": "c",
      "output": {}})"),
                                      "input[1]", &m, &names)),
            "input[1].output");
}

ResponsesShape Shape() {
  ResponsesShape s;
  s.meta.id = "resp_abc";
  s.meta.created = 7;
  s.meta.model = "m";
  s.meta.fingerprint = "fp_x";
  s.meta.seed = 5;
  return s;
}

ToolParseFn TwoCalls() {
  return [](int, const ChoiceResult&) {
    ParsedAnswer p;
    p.content = "Let me look.";
    p.calls = {{"call_000000000000000000000001", "f", "{\"a\":1}"},
               {"call_000000000000000000000002", "g", "{}"}};
    return p;
  };
}

std::vector<Json> Events(const std::string& sse) {
  std::vector<Json> out;
  size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    const size_t end = sse.find("\n\n", pos);
    out.push_back(Json::parse(sse.substr(pos + 6, end - pos - 6)));
    pos = end;
  }
  return out;
}

TEST(ResponsesTools, TextThenCallsAsOutputItemsAndEvents) {
  ChoiceResult c;
  c.text = "Let me look. {...}";
  c.finish = FinishReason::kStop;
  const PieceFn piece = [](int32_t id) { return "t" + std::to_string(id); };
  const Json body = ResponsesBody(Shape(), c, UsageCounts{}, piece, TwoCalls());
  const Json& out = body["output"];
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0]["type"], "message");
  EXPECT_EQ(out[0]["content"][0]["text"], "Let me look.");
  EXPECT_EQ(out[1], Parse(R"({"id": "fc_000000000000000000000001", "type": "function_call",
      "status": "completed", "call_id": "call_000000000000000000000001", "name": "f",
      "arguments": "{\"a\":1}"})"));
  EXPECT_EQ(out[2]["call_id"], "call_000000000000000000000002");
  EXPECT_EQ(body["status"], "completed");

  ResponsesStream rs(Shape(), piece);
  rs.SetAnswerParsing(TwoCalls(), nullptr);  // nothing certain before the end: all held back
  std::string sse = rs.Start();
  ChoiceResult part = c;
  part.text = "Let me look. ";
  sse += rs.Token("Let me look. ", nullptr, part);
  sse += rs.Finish("{...}", c);
  EXPECT_EQ(sse.find("output_text.delta"), std::string::npos);
  sse += rs.Done(UsageCounts{}, c);
  const std::vector<Json> ev = Events(sse);
  std::vector<std::string> types;
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i]["sequence_number"], i);
    types.push_back(ev[i]["type"]);
  }
  // The first call's arguments {"a":1} go in two pieces, the second's in one.
  const std::vector<std::string> call = {
      "response.output_item.added", "response.function_call_arguments.delta",
      "response.function_call_arguments.delta", "response.function_call_arguments.done",
      "response.output_item.done"};
  std::vector<std::string> call2 = call;
  call2.erase(call2.begin() + 1);
  std::vector<std::string> want = {"response.created",           "response.in_progress",
                                   "response.output_item.added", "response.content_part.added",
                                   "response.output_text.delta", "response.output_text.done",
                                   "response.content_part.done", "response.output_item.done"};
  want.insert(want.end(), call.begin(), call.end());
  want.insert(want.end(), call2.begin(), call2.end());
  want.push_back("response.completed");
  EXPECT_EQ(types, want);
  EXPECT_EQ(ev[4]["delta"], "Let me look.");
  EXPECT_EQ(ev[8]["output_index"], 1);
  EXPECT_EQ(ev[8]["item"]["arguments"], "");
  EXPECT_EQ(ev[8]["item"]["status"], "in_progress");
  // The arguments in pieces, as OpenAI streams them; .done carries them whole.
  EXPECT_EQ(ev[9]["delta"], "{\"a\":");
  EXPECT_EQ(ev[10]["delta"], "1}");
  EXPECT_EQ(ev[11]["arguments"], "{\"a\":1}");
  EXPECT_EQ(ev[9]["item_id"], "fc_000000000000000000000001");
  EXPECT_EQ(ev[14]["item_id"], "fc_000000000000000000000002");
  EXPECT_EQ(ev[14]["output_index"], 2);
  EXPECT_EQ(ev.back()["response"]["output"], out);
}

// Issue 25: each function_call_output searched every message before it for its
// call's name (50k items: 7.9 s of CPU). The conversion at n and 4n pairs of
// items: CPU time at most ~linear, and the names still found.
double ConvertCpuSeconds(int pairs) {
  Json input = Json::array();
  for (int i = 0; i < pairs; ++i) {
    const std::string id = "call_" + std::to_string(i);
    input.push_back(
        Json{{"type", "function_call"}, {"call_id", id}, {"name", "f"}, {"arguments", "{}"}});
    input.push_back(Json{{"type", "function_call_output"}, {"call_id", id}, {"output", "ok"}});
  }
  const Json body = {{"model", "m"}, {"input", input}};
  ServedModel model;
  model.id = "m";
  double best = 1e9;
  for (int r = 0; r < 3; ++r) {
    const std::clock_t t0 = std::clock();
    auto req = ParseResponsesRequest(body, model);
    best = std::min(best, static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC);
    EXPECT_TRUE(req.ok());
    if (req.ok()) {
      EXPECT_EQ(req->messages.size(), static_cast<size_t>(2 * pairs));
      EXPECT_EQ(req->messages.back().value("name", ""), "f");
    }
  }
  return best;
}

TEST(ResponsesTools, ItemConversionIsLinear) {
  const double t1 = ConvertCpuSeconds(2500), t4 = ConvertCpuSeconds(10000);
  std::printf("responses items 5k: %.4f s, 20k: %.4f s\n", t1, t4);
  EXPECT_LT(t4, 8 * t1 + 0.02);  // linear: ~4x; the old search: 16x
}

}  // namespace
}  // namespace stet::server

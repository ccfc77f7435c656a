// Tool-call parsing against the real templates in ../shared/chat-templates:
// the format each family's template teaches is detected from its text, the
// assistant turn the template itself renders for a tool call (a golden string
// cut from the render) parses back to that call, hand-written model answers
// of each family parse, and anything malformed stays text. Call ids depend
// only on (seed, choice, index). Chat responses and streams carry the calls.
#include "server/structured/tool_calls.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/openai/chat_format.h"
#include "server/structured/tool_formats.h"
#include "support/test_support.h"
#include "template/chat_template.h"

namespace stet::server {
namespace {

const Json& Tools() {
  static const Json* t = new Json(Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
      "parameters": {"type": "object",
      "properties": {"location": {"type": "string"}, "unit": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "get_time", "description": "The time.",
      "parameters": {"type": "object", "properties": {}}}}])"));
  return *t;
}

std::string TemplatePath(const std::string& name) {
  return stet::testing::SharedDir() + "/chat-templates/" + name + ".jinja";
}

ParsedAnswer Parse(const ToolCallFormat& f, const std::string& s) {
  return ParseToolCalls(f, s, s, Tools(), 42, 0);
}

void ExpectWeather(const ToolCall& c) {
  EXPECT_EQ(c.name, "get_weather");
  EXPECT_EQ(Json::parse(c.arguments), Json::parse(R"({"location": "Paris", "unit": "celsius"})"));
}

struct Family {
  const char* file;
  const ToolCallFormat& format;
  const char* turn_start;  // the assistant turn starts after its last occurrence
  const char* turn_end;    // and ends before this
  bool keep_start;         // the start marker is part of the model's answer
};

const Family kFamilies[] = {
    {"Qwen-Qwen2.5-7B-Instruct", HermesToolFormat(), "<|im_start|>assistant\n", "<|im_end|>",
     false},
    {"Qwen-Qwen3-0.6B", HermesToolFormat(), "<|im_start|>assistant\n", "<|im_end|>", false},
    {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", HermesToolFormat(), "<|im_start|>assistant\n",
     "<|im_end|>", false},
    {"meta-llama-Llama-3.1-8B-Instruct", Llama3ToolFormat(),
     "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", false},
    {"meta-llama-Llama-3.3-70B-Instruct", Llama3ToolFormat(),
     "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", false},
    {"mistralai-Mistral-Nemo-Instruct-2407", MistralToolFormat(), "[TOOL_CALLS]", "</s>", true},
    {"Mistral-Small-3.2-24B-Instruct-2506", MistralToolFormat(), "[TOOL_CALLS]", "</s>", true},
    {"unsloth-mistral-Devstral-Small-2507", MistralToolFormat(), "[TOOL_CALLS]", "</s>", true},
};

// The assistant turn a real template renders for a get_weather call.
std::string RenderedCallTurn(const Family& f) {
  const std::string src = stet::testing::ReadFileOrDie(TemplatePath(f.file));
  auto tmpl = ChatTemplate::Parse(src);
  EXPECT_TRUE(tmpl.ok()) << f.file;
  if (!tmpl.ok()) return "";
  Json ctx = Json::object();
  ctx["messages"] = Json::parse(R"([
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call0A1b2", "type": "function",
      "function": {"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}}}]}])");
  ctx["tools"] = Tools();
  ctx["add_generation_prompt"] = false;
  ctx["bos_token"] = "<s>";
  ctx["eos_token"] = "</s>";
  auto out = tmpl->Render(ctx, ChatTemplateOptions{});
  EXPECT_TRUE(out.ok()) << f.file << ": " << out.status().ToString();
  if (!out.ok()) return "";
  const std::string& s = *out;
  size_t b = s.rfind(f.turn_start);
  EXPECT_NE(b, std::string::npos) << f.file << ":\n" << s;
  if (b == std::string::npos) return "";
  if (!f.keep_start) b += std::string(f.turn_start).size();
  const size_t e = s.find(f.turn_end, b);
  return s.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

TEST(ToolCalls, FormatDetectedFromTheRealTemplates) {
  for (const Family& f : kFamilies) {
    STET_REQUIRE_FILE(TemplatePath(f.file));
    EXPECT_EQ(&DetectToolCallFormat(stet::testing::ReadFileOrDie(TemplatePath(f.file))), &f.format)
        << f.file;
  }
  const std::string gemma = TemplatePath("google-gemma-2-2b-it");
  STET_REQUIRE_FILE(gemma);
  EXPECT_EQ(&DetectToolCallFormat(stet::testing::ReadFileOrDie(gemma)), &GenericToolFormat());
  EXPECT_STREQ(MistralToolFormat().name(), "mistral");
}

TEST(ToolCalls, EachTemplatesOwnRenderingParsesBack) {
  for (const Family& f : kFamilies) {
    STET_REQUIRE_FILE(TemplatePath(f.file));
    const std::string turn = RenderedCallTurn(f);
    SCOPED_TRACE(std::string(f.file) + " rendered: " + turn);
    const ParsedAnswer p = ParseToolCalls(f.format, turn, turn, Tools(), 7, 1);
    ASSERT_EQ(p.calls.size(), 1u);
    ExpectWeather(p.calls[0]);
    EXPECT_EQ(p.calls[0].id, ToolCallId(7, 1, 0));
  }
}

TEST(ToolCalls, HermesGoldens) {
  const ToolCallFormat& h = HermesToolFormat();
  const std::string one =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", \"unit\": "
      "\"celsius\"}}\n</tool_call>";
  ParsedAnswer p = Parse(h, "Let me check.\n" + one);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.content, "Let me check.");
  ExpectWeather(p.calls[0]);
  EXPECT_EQ(p.calls[0].arguments, R"({"location":"Paris","unit":"celsius"})");  // compact
  p = Parse(h, one + "\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.content, "");
  EXPECT_EQ(p.calls[1].name, "get_time");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  EXPECT_NE(p.calls[0].id, p.calls[1].id);
  // The closing tag cut off at the end (the model stopped on its end token).
  EXPECT_EQ(Parse(h, one.substr(0, one.size() - 12)).calls.size(), 1u);
  // Arguments as a string holding JSON (some models double-encode).
  p = Parse(h,
            "<tool_call>{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": "
            "\\\"UTC\\\"}\"}</tool_call>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"tz":"UTC"})");
}

TEST(ToolCalls, MalformedCallsStayText) {
  const ToolCallFormat& h = HermesToolFormat();
  for (const std::string& s : {
           std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": "
                       "</tool_call>"),
           std::string("<tool_call>{\"name\": \"launch_missiles\", \"arguments\": {}}</tool_call>"),
           std::string(
               "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call> and then some"),
           std::string("<tool_call>{\"arguments\": {}}</tool_call>"),
           std::string("<tool_call>{\"name\": \"get_time\", \"arguments\": [1]}</tool_call>"),
           std::string("<tool_call>"),
           std::string("no calls at all"),
       }) {
    const ParsedAnswer p = ParseToolCalls(h, s, "TEXT", Tools(), 1, 0);
    EXPECT_TRUE(p.calls.empty()) << s;
    EXPECT_EQ(p.content, "TEXT") << s;
  }
  // No tools in the request: nothing is parsed.
  const std::string call = "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>";
  EXPECT_TRUE(ParseToolCalls(h, call, call, Json(nullptr), 1, 0).calls.empty());
  EXPECT_TRUE(ParseToolCalls(h, call, call, Json::array(), 1, 0).calls.empty());
  // Unbalanced or hostile input never throws.
  for (const std::string& s : {std::string("[TOOL_CALLS][[[[["), std::string("{\"a\": \"\\"),
                               std::string("[TOOL_CALLS]get_time[ARGS]"), std::string(1000, '{')}) {
    for (const ToolCallFormat* f : ToolCallFormats()) {
      EXPECT_TRUE(Parse(*f, s).calls.empty()) << s;
    }
  }
}

TEST(ToolCalls, Llama3Goldens) {
  const ToolCallFormat& l = Llama3ToolFormat();
  const std::string json =
      R"({"name": "get_weather", "parameters": {"location": "Paris", "unit": "celsius"}})";
  for (const std::string& s : {json, "<|python_tag|>" + json, "\n " + json + "\n"}) {
    const ParsedAnswer p = Parse(l, s);
    ASSERT_EQ(p.calls.size(), 1u) << s;
    ExpectWeather(p.calls[0]);
    EXPECT_EQ(p.content, "");
  }
  EXPECT_EQ(Parse(l, json + "; {\"name\": \"get_time\", \"parameters\": {}}").calls.size(), 2u);
  EXPECT_TRUE(Parse(l, "The weather is nice.").calls.empty());
  EXPECT_TRUE(Parse(l, "<|python_tag|>print(1)").calls.empty());
  EXPECT_TRUE(Parse(l, R"({"answer": 42})").calls.empty());
}

TEST(ToolCalls, MistralGoldens) {
  const ToolCallFormat& m = MistralToolFormat();
  ParsedAnswer p = Parse(
      m,
      R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}, "id": "abcdefghi"}])");
  ASSERT_EQ(p.calls.size(), 1u);
  ExpectWeather(p.calls[0]);
  p = Parse(
      m,
      R"([TOOL_CALLS]get_weather[ARGS]{"location": "Paris", "unit": "celsius"}[TOOL_CALLS]get_time[ARGS]{})");
  ASSERT_EQ(p.calls.size(), 2u);
  ExpectWeather(p.calls[0]);
  EXPECT_EQ(p.calls[1].name, "get_time");
  p = Parse(
      m,
      R"(Sure.[TOOL_CALLS]get_weather[CALL_ID]abcdefghi[ARGS]{"location": "Paris", "unit": "celsius"})");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.content, "Sure.");
  EXPECT_TRUE(
      Parse(m, R"([TOOL_CALLS]get_weather[ARGS]{"location": "Paris"} trailing)").calls.empty());
}

TEST(ToolCalls, GenericGoldens) {
  const ToolCallFormat& g = GenericToolFormat();
  const char* weather =
      R"({"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}})";
  for (const std::string& s :
       {std::string(weather), std::string("{\"tool_call\": ") + weather + "}",
        std::string("{\"tool_calls\": [") + weather + "]}", std::string("[") + weather + "]",
        std::string(R"([{"type": "function", "function": {"name": "get_weather", )"
                    R"("arguments": "{\"location\": \"Paris\", \"unit\": \"celsius\"}"}}])")}) {
    const ParsedAnswer p = Parse(g, s);
    ASSERT_EQ(p.calls.size(), 1u) << s;
    ExpectWeather(p.calls[0]);
  }
  EXPECT_TRUE(Parse(g, R"({"response": "It is sunny."})").calls.empty());
  EXPECT_TRUE(Parse(g, R"(Here: {"name": "get_time", "arguments": {}})").calls.empty());
}

TEST(ToolCalls, IdsDependOnSeedChoiceAndIndexOnly) {
  const std::string id = ToolCallId(123, 0, 0);
  EXPECT_EQ(id, ToolCallId(123, 0, 0));
  EXPECT_EQ(id.size(), 5u + 24u);
  EXPECT_EQ(id.rfind("call_", 0), 0u);
  EXPECT_NE(id, ToolCallId(124, 0, 0));
  EXPECT_NE(id, ToolCallId(123, 1, 0));
  EXPECT_NE(id, ToolCallId(123, 0, 1));
  const Json j = ToolCallsJson({{"call_x", "get_time", "{}"}}, /*indexed=*/true);
  EXPECT_EQ(
      j,
      Json::parse(
          R"([{"index": 0, "id": "call_x", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}])"));
}

ToolParseFn HermesParse() {
  return [](int index, const ChoiceResult& c) {
    return ParseToolCalls(HermesToolFormat(), c.text, c.text, Tools(), 5, index);
  };
}

TEST(ToolCalls, ChatResponseAndStreamCarryTheCalls) {
  ResponseMeta meta;
  meta.id = "chatcmpl-1";
  meta.fingerprint = "fp_x";
  ChoiceResult call, text;
  call.text = "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>";
  call.finish = FinishReason::kStop;
  text.text = "hello";
  text.finish = FinishReason::kStop;
  const PieceFn piece = [](int32_t) { return std::string("x"); };
  const Json r = ChatResponse(meta, {call, text}, false, 0, {}, piece, HermesParse());
  const Json& m0 = r["choices"][0]["message"];
  EXPECT_TRUE(m0["content"].is_null());
  EXPECT_EQ(m0["tool_calls"][0]["function"]["name"], "get_time");
  EXPECT_EQ(m0["tool_calls"][0]["id"], ToolCallId(5, 0, 0));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(r["choices"][1]["message"]["content"], "hello");
  EXPECT_FALSE(r["choices"][1]["message"].contains("tool_calls"));
  EXPECT_EQ(r["choices"][1]["finish_reason"], "stop");

  ChatStream cs(meta, false, 0, false, piece);
  AnswerSyntax syntax;
  syntax.format = &HermesToolFormat();
  syntax.tools = Tools();
  syntax.seed = 5;
  cs.SetAnswerParsing(HermesParse(), [syntax](const ChoiceResult& c) {
    return SafePrefix(syntax, c.text, c.text);
  });
  ChoiceResult begun = call;
  begun.text = call.text.substr(0, 10);  // "<tool_call" may be a call's start: held back
  EXPECT_EQ(cs.Token(0, begun.text, nullptr, begun), "");
  const std::string out = cs.Finish(0, call.text.substr(10), FinishReason::kStop, call);
  std::vector<Json> chunks;
  for (size_t pos = 0; (pos = out.find("data: ", pos)) != std::string::npos; pos += 6) {
    chunks.push_back(Json::parse(out.substr(pos + 6, out.find("\n\n", pos) - pos - 6)));
  }
  // OpenAI's shape: index, id, type and name with arguments "", then the arguments, then the end.
  ASSERT_EQ(chunks.size(), 3u) << out;
  const Json& head = chunks[0]["choices"][0]["delta"]["tool_calls"][0];
  EXPECT_EQ(head["index"], 0);
  EXPECT_EQ(head["id"], ToolCallId(5, 0, 0));
  EXPECT_EQ(head["type"], "function");
  EXPECT_EQ(head["function"]["name"], "get_time");
  EXPECT_EQ(head["function"]["arguments"], "");
  const Json& args = chunks[1]["choices"][0]["delta"]["tool_calls"][0];
  EXPECT_EQ(args, Json::parse(R"({"index": 0, "function": {"arguments": "{}"}})"));
  EXPECT_EQ(chunks[2]["choices"][0]["finish_reason"], "tool_calls");
  // Text that cannot start a call streams as it comes; the rest goes out at the end.
  ChoiceResult start = text;
  start.text = "hel";
  EXPECT_NE(cs.Token(1, "hel", nullptr, start).find("\"content\":\"hel\""), std::string::npos);
  ChoiceResult cut = text;
  cut.finish = FinishReason::kLength;
  const std::string plain = cs.Finish(1, "hello", FinishReason::kLength, cut);
  EXPECT_NE(plain.find("\"content\":\"lo\""), std::string::npos) << plain;
  EXPECT_NE(plain.find("\"finish_reason\":\"length\""), std::string::npos) << plain;
}

}  // namespace
}  // namespace stet::server

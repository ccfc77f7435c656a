// The chat prompt builder's options and built-in templates: renders with
// chat_template_kwargs / add_generation_prompt / continue_final_message / the
// clock equal Python's Jinja2 (tests/golden/chat_prompt/options.json, made by
// scripts/golden/make_chat_prompt_goldens.py); request fields are read and
// refused as vLLM does; each built-in is detected as its family's tool-call
// format and the calls it writes into history parse back with that format;
// real model files get the built-in of their family.
#include "server/openai/chat_prompt.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "server/structured/tool_calls.h"
#include "support/gguf_tokenizer.h"
#include "support/test_support.h"

namespace stet::server {
namespace {

std::string StoriesPath() { return testing::SharedDir() + "/models/stories260K/stories260K.gguf"; }

Json Parse(const std::string& s) { return Json::parse(s); }

ApiOr<ChatPromptOptions> Read(const std::string& body) {
  return ReadChatPromptOptions(Parse(body), 1234);
}

TEST(ChatPromptOptionsTest, ReadsTheRequestFieldsWithVllmDefaults) {
  auto d = Read(R"({"messages": []})");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->add_generation_prompt);
  EXPECT_FALSE(d->continue_final_message);
  EXPECT_TRUE(d->chat_template_kwargs.is_null());
  EXPECT_EQ(d->now_unix, 1234);

  auto k = Read(R"({"chat_template_kwargs": {"enable_thinking": false, "x": [1]},
                    "add_generation_prompt": false})");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->chat_template_kwargs, Parse(R"({"enable_thinking": false, "x": [1]})"));
  EXPECT_FALSE(k->add_generation_prompt);

  // A prefill alone turns the generation prompt off; asking for both is vLLM's 400.
  auto c = Read(R"({"continue_final_message": true})");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->continue_final_message);
  EXPECT_FALSE(c->add_generation_prompt);
  auto both = Read(R"({"continue_final_message": true, "add_generation_prompt": true})");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().status, 400);
  EXPECT_EQ(both.error().param, "continue_final_message");
  EXPECT_EQ(both.error().message,
            "Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
}

TEST(ChatPromptOptionsTest, RefusesWhatATemplateCannotTake) {
  for (const char* bad : {R"({"chat_template_kwargs": [1]})", R"({"chat_template_kwargs": "x"})",
                          R"({"chat_template_kwargs": 3})"}) {
    auto r = Read(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().param, "chat_template_kwargs") << bad;
  }
  for (const char* name : kReservedTemplateKwargs) {
    Json body = Json::object();
    body["chat_template_kwargs"][name] = true;
    auto r = ReadChatPromptOptions(body, 0);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().param, "chat_template_kwargs");
    EXPECT_NE(r.error().message.find("'" + std::string(name) + "'"), std::string::npos)
        << r.error().message;
  }
  EXPECT_FALSE(Read(R"({"add_generation_prompt": "yes"})").ok());
  EXPECT_FALSE(Read(R"({"continue_final_message": 1})").ok());
  // null means absent, as everywhere in the API.
  EXPECT_TRUE(Read(R"({"chat_template_kwargs": null, "continue_final_message": null})").ok());
}

TEST(ChatPromptOptionsTest, TemplateClockIsPinnedOrNow) {
  EXPECT_EQ(TemplateClock(1927857906), 1927857906);
  using std::chrono::system_clock;
  const auto secs = [](system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  };
  const int64_t before = secs(system_clock::now());
  const int64_t now = TemplateClock(std::nullopt);
  const int64_t after = secs(system_clock::now());
  EXPECT_GE(now, before);
  EXPECT_LE(now, after);
}

std::string CaseSource(const Json& t) {
  if (t.contains("shared")) {
    return testing::ReadFileOrDie(testing::SharedDir() + "/chat-templates/" +
                                  t["shared"].get<std::string>());
  }
  if (t.contains("builtin")) {
    const BuiltinTemplate* b = FindBuiltinTemplate(t["builtin"].get<std::string>());
    return b ? std::string(b->source) : "";
  }
  return t["inline"].get<std::string>();
}

TEST(ChatPromptGoldenTest, OptionsRenderLikeJinja2) {
  STET_REQUIRE_FILE(StoriesPath());
  STET_REQUIRE_FILE(testing::SharedDir() + "/chat-templates");
  auto stories = testing::LoadGgufTokenizer(StoriesPath());
  ASSERT_TRUE(stories.tokenizer);
  std::ifstream in(testing::SourceDir() + "/tests/golden/chat_prompt/options.json");
  const Json golden = Json::parse(in);
  ASSERT_GE(golden["cases"].size(), 15u);
  for (const Json& c : golden["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    ChatPromptSetup setup;
    setup.source = CaseSource(c["template"]);
    ASSERT_FALSE(setup.source.empty());
    setup.default_kwargs = c["default_kwargs"];
    auto prompt = ChatPrompt::Create(setup, *stories.tokenizer);
    ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
    const Json& o = c["options"];
    ChatPromptOptions options;
    options.chat_template_kwargs = o["chat_template_kwargs"];
    options.add_generation_prompt = o["add_generation_prompt"].get<bool>();
    options.continue_final_message = o["continue_final_message"].get<bool>();
    options.now_unix = o["now_unix"].get<int64_t>();
    auto got = prompt->Render(c["messages"], c["tools"], options);
    if (c.value("error", false)) {
      ASSERT_FALSE(got.ok()) << *got;
      EXPECT_EQ(got.error().status, 400);
      EXPECT_EQ(got.error().param, "continue_final_message");
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(*got, c["expected"].get<std::string>());
  }
}

// The format the server's tool-call parser must see in each built-in.
std::string ExpectedFormat(std::string_view name) {
  if (name == "qwen") return "hermes";
  if (name == "llama3") return "llama3";
  if (name == "mistral") return "mistral";
  return "generic";  // chatml, gemma, llama2, phi3: a bare JSON answer
}

// The two uses of the tool-call parser's API, kept here so a change of that API is one edit.
std::string DetectedFormat(const std::string& source) {
  return DetectToolCallFormat(source).name();
}
ParsedAnswer ParseAsTemplateTeaches(const std::string& source, const std::string& answer,
                                    const Json& tools) {
  return ParseToolCalls(DetectToolCallFormat(source), answer, answer, tools, 7, 0);
}

TEST(BuiltinTemplateTest, ToolCallsInHistoryParseBackInTheFamilysFormat) {
  STET_REQUIRE_FILE(StoriesPath());
  auto stories = testing::LoadGgufTokenizer(StoriesPath());
  ASSERT_TRUE(stories.tokenizer);
  const Json tools = Parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
      {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}])");
  const Json ask = Parse(R"([{"role": "user", "content": "Weather in Paris and the time?"}])");
  const Json calls = Parse(R"([
      {"id": "call0A1b2", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
      {"id": "call3C4d5", "type": "function", "function": {"name": "get_time", "arguments": {}}}])");
  for (const BuiltinTemplate& b : BuiltinTemplates()) {
    SCOPED_TRACE(std::string(b.name));
    EXPECT_EQ(DetectedFormat(std::string(b.source)), ExpectedFormat(b.name));
    ChatPromptSetup setup;
    setup.source = std::string(b.source);
    auto prompt = ChatPrompt::Create(setup, *stories.tokenizer);
    ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
    // What the model was asked for, and the history with its answer: the answer is the difference.
    ChatPromptOptions gen;
    auto head = prompt->Render(ask, tools, gen);
    ASSERT_TRUE(head.ok()) << head.error().message;
    EXPECT_NE(head->find("get_weather"), std::string::npos) << "the tools are in the prompt";
    for (int n : {1, 2}) {
      Json history = ask;
      Json answer = Json::object();
      answer["role"] = "assistant";
      answer["content"] = "";
      answer["tool_calls"] = Json(calls.begin(), calls.begin() + n);
      history.push_back(answer);
      ChatPromptOptions closed;
      closed.add_generation_prompt = false;
      auto full = prompt->Render(history, tools, closed);
      ASSERT_TRUE(full.ok()) << full.error().message;
      ASSERT_EQ(full->compare(0, head->size(), *head), 0) << *full;
      std::string said = full->substr(head->size());
      const size_t end = said.rfind(b.end_of_turn);
      ASSERT_NE(end, std::string::npos) << said;
      said.resize(end);
      ParsedAnswer parsed = ParseAsTemplateTeaches(std::string(b.source), said, tools);
      ASSERT_EQ(parsed.calls.size(), static_cast<size_t>(n)) << said;
      EXPECT_EQ(parsed.calls[0].name, "get_weather");
      EXPECT_EQ(Parse(parsed.calls[0].arguments), Parse(R"({"city": "Paris"})"));
      if (n == 2) {
        EXPECT_EQ(parsed.calls[1].name, "get_time");
      }
      EXPECT_EQ(parsed.content, "");
    }
  }
}

TEST(BuiltinTemplateTest, RealFilesGetTheirFamilysTemplate) {
  struct Want {
    std::string path;
    const char* builtin;
  };
  const std::vector<Want> files = {
      {StoriesPath(), "chatml"},  // Llama architecture, but neither Llama 2 nor Mistral by name
      {testing::SharedDir() + "/models/llama-2-tiny-random/llama-2-tiny-random.gguf", "llama2"},
      {testing::ModelCacheDir() + "/gemma-3-270m-q4_k_m.gguf", "gemma"},
      {testing::ModelCacheDir() + "/SmolLM2-135M-Instruct.Q4_1.gguf", "chatml"},
  };
  for (const Want& w : files) {
    SCOPED_TRACE(w.path);
    STET_REQUIRE_FILE(w.path);
    auto file = testing::LoadGgufTokenizer(w.path);
    ASSERT_TRUE(file.tokenizer);
    ChatPromptSetup setup;
    setup.architecture = file.architecture;
    setup.model_name = file.name;
    auto prompt = ChatPrompt::Create(setup, *file.tokenizer);
    ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
    EXPECT_TRUE(prompt->is_fallback());
    EXPECT_EQ(prompt->builtin_name(), w.builtin) << prompt->builtin_reason();
    EXPECT_FALSE(prompt->builtin_reason().empty());
    EXPECT_EQ(prompt->Describe(),
              Parse(std::string(R"({"builtin": true, "name": ")") + w.builtin + "\"}"));
  }
}

// Gemma 3's chat format, token for token (ids of google/gemma-3 tokenizer:
// 2 <bos>, 105 <start_of_turn>, 106 <end_of_turn>, 107 "\n", 2364 user, 4368 model).
TEST(BuiltinTemplateTest, Gemma270mPromptIsGemmasFormat) {
  const std::string path = testing::ModelCacheDir() + "/gemma-3-270m-q4_k_m.gguf";
  STET_REQUIRE_FILE(path);
  auto file = testing::LoadGgufTokenizer(path);
  ASSERT_TRUE(file.tokenizer);
  ChatPromptSetup setup;
  setup.architecture = file.architecture;
  auto prompt = ChatPrompt::Create(setup, *file.tokenizer);
  ASSERT_TRUE(prompt.ok());
  EXPECT_TRUE(prompt->extra_stops().empty()) << "<end_of_turn> ends generation by itself";
  std::string text;
  auto ids = prompt->Build(Parse(R"([{"role": "user", "content": "Hi"}])"), nullptr, &text);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(text, "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
  const std::vector<int32_t> hi = file.tokenizer->Encode("Hi", false, false);
  std::vector<int32_t> want = {2, 105, 2364, 107};
  want.insert(want.end(), hi.begin(), hi.end());
  for (int32_t id : {106, 107, 105, 4368, 107}) want.push_back(id);
  EXPECT_EQ(*ids, want);
  EXPECT_TRUE(file.tokenizer->IsEog(106));
}

}  // namespace
}  // namespace stet::server

// The built-in templates' choice rule (chat tokens, then architecture, then a
// SentencePiece Llama file's name), the Gemma built-in against Google's own
// Gemma template, and transformers' continue_final_message cut.
#include "template/builtin_templates.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "support/test_support.h"
#include "template/chat_template.h"

namespace stet {
namespace {

using nlohmann::ordered_json;

std::string Choose(std::string arch, std::string name, std::string tokenizer,
                   std::set<std::string> tokens) {
  ModelTraits t;
  t.architecture = std::move(arch);
  t.name = std::move(name);
  t.tokenizer_model = std::move(tokenizer);
  t.has_token = [tokens](std::string_view s) { return tokens.count(std::string(s)) > 0; };
  BuiltinChoice c = ChooseBuiltinTemplate(t);
  EXPECT_NE(c.tmpl, nullptr);
  EXPECT_FALSE(c.reason.empty());
  return c.tmpl ? std::string(c.tmpl->name) : "";
}

TEST(BuiltinTemplates, EveryOneIsEmbeddedAndParses) {
  const std::vector<std::string> names = {"chatml",  "gemma", "llama2", "llama3",
                                          "mistral", "phi3",  "qwen"};
  ASSERT_EQ(BuiltinTemplates().size(), names.size());
  for (const std::string& n : names) {
    const BuiltinTemplate* t = FindBuiltinTemplate(n);
    ASSERT_NE(t, nullptr) << n;
    EXPECT_EQ(t->name, n);
    EXPECT_FALSE(t->end_of_turn.empty());
    EXPECT_TRUE(ChatTemplate::Parse(t->source).ok()) << n;
    // The file's text, byte for byte (the golden test renders what is embedded).
    EXPECT_EQ(t->source, testing::ReadFileOrDie(testing::SourceDir() + "/src/template/builtin/" +
                                                n + ".jinja"));
  }
  EXPECT_EQ(FindBuiltinTemplate("gpt"), nullptr);
}

TEST(BuiltinTemplates, ChatTokensDecideFirst) {
  EXPECT_EQ(Choose("llama", "", "llama", {"<start_of_turn>", "<end_of_turn>"}), "gemma");
  EXPECT_EQ(Choose("llama", "Meta Llama 3.1 8B Instruct", "gpt2",
                   {"<|start_header_id|>", "<|eot_id|>", "<|im_start|>"}),
            "llama3");
  EXPECT_EQ(Choose("llama", "Hermes 2 Pro", "gpt2", {"<|im_start|>", "<tool_call>"}), "qwen");
  EXPECT_EQ(Choose("llama", "", "llama", {"<|user|>", "<|assistant|>", "<|end|>"}), "phi3");
  EXPECT_EQ(Choose("llama", "Mistral 7B Instruct v0.3", "llama", {"[INST]", "[/INST]"}), "mistral");
  // <|im_start|> alone is ChatML without Hermes tool calls (SmolLM2 and most others).
  EXPECT_EQ(Choose("llama", "SmolLM2", "gpt2", {"<|im_start|>", "<|im_end|>"}), "chatml");
}

TEST(BuiltinTemplates, ThenTheArchitecture) {
  for (const char* a : {"gemma", "gemma2", "gemma3", "gemma3n"})
    EXPECT_EQ(Choose(a, "", "llama", {}), "gemma");
  for (const char* a : {"qwen2", "qwen2moe", "qwen3", "qwen3moe"})
    EXPECT_EQ(Choose(a, "", "gpt2", {}), "qwen");
  EXPECT_EQ(Choose("phi3", "", "llama", {}), "phi3");
  EXPECT_EQ(Choose("mistral3", "", "gpt2", {}), "mistral");
}

TEST(BuiltinTemplates, ThenASentencePieceLlamaFilesName) {
  EXPECT_EQ(Choose("llama", "LLaMA v2 ", "llama", {}), "llama2");
  EXPECT_EQ(Choose("llama", "Llama-2-7b-chat-hf llama-2", "llama", {}), "llama2");
  EXPECT_EQ(Choose("llama", "mistralai_mistral-7b-instruct-v0.1", "llama", {}), "mistral");
  EXPECT_EQ(Choose("llama", "Mixtral 8x7B Instruct", "llama", {}), "mistral");
  // Names decide only for SentencePiece Llama files; nothing known: ChatML.
  EXPECT_EQ(Choose("llama", "LLaMA v2", "gpt2", {}), "chatml");
  EXPECT_EQ(Choose("llama", "llama", "llama", {}), "chatml");  // stories260K
  EXPECT_EQ(Choose("gpt2", "", "gpt2", {}), "chatml");
  EXPECT_EQ(Choose("", "", "", {}), "chatml");
  ModelTraits none;  // no token predicate at all
  EXPECT_EQ(ChooseBuiltinTemplate(none).tmpl->name, "chatml");
}

// Google's Gemma 2 template (no system role, no tools) and the built-in agree
// wherever both apply: the built-in writes Gemma's own format.
TEST(BuiltinTemplates, GemmaMatchesGooglesTemplate) {
  const std::string google = testing::SharedDir() + "/chat-templates/google-gemma-2-2b-it.jinja";
  STET_REQUIRE_FILE(google);
  const std::string source = testing::ReadFileOrDie(google);
  const auto conversations = ordered_json::parse(R"([
    [{"role": "user", "content": "Hi"}],
    [{"role": "user", "content": "  What is 2+2?\n"}, {"role": "assistant", "content": "4. "},
     {"role": "user", "content": "And 3+3?"}],
    [{"role": "user", "content": "Grüße 你好 😀"}, {"role": "assistant", "content": "Hallo!"}]])");
  for (const auto& messages : conversations) {
    for (bool agp : {true, false}) {
      auto want = ApplyChatTemplate(source, messages, ordered_json(), agp, "<bos>", "<eos>",
                                    ordered_json());
      auto got = ApplyChatTemplate(FindBuiltinTemplate("gemma")->source, messages, ordered_json(),
                                   agp, "<bos>", "<eos>", ordered_json());
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, *want) << messages.dump();
    }
  }
}

TEST(ContinueFinalMessage, CutsAfterTheMessageAsTransformersDoes) {
  // Kept whole: the template kept the message's spacing.
  EXPECT_EQ(*ContinueFinalMessage("<u>hi</u><a>Once upon</a>\n", "Once upon"),
            "<u>hi</u><a>Once upon");
  // The last occurrence counts.
  EXPECT_EQ(*ContinueFinalMessage("a X b X c", "X"), "a X b X");
  // A template that trims: cut after the stripped text.
  EXPECT_EQ(*ContinueFinalMessage("[model]Once upon[end]", "  Once upon  "), "[model]Once upon");
  // Trailing spacing the template kept is kept.
  EXPECT_EQ(*ContinueFinalMessage("[model]Once upon [end]", "Once upon "), "[model]Once upon ");
  // Python's whitespace, not just ASCII (U+3000 ideographic space).
  EXPECT_EQ(*ContinueFinalMessage("[m]x[end]", "\xe3\x80\x80x"), "[m]x");
  auto missing = ContinueFinalMessage("[m]something else[end]", "Once");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ContinueFinalMessage("[m][end]", "  \n").ok());
  EXPECT_FALSE(ContinueFinalMessage("[m][end]", "").ok());
}

TEST(StrftimeUtc, FormatsTheGivenInstantInUtc) {
  EXPECT_EQ(StrftimeUtc("%d %b %Y", 1721995200), "26 Jul 2024");
  EXPECT_EQ(StrftimeUtc("%Y-%m-%dT%H:%M:%S", 1927857906), "2031-02-03T04:05:06");
}

}  // namespace
}  // namespace stet

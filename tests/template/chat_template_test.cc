// The public API: Parse / Render / ApplyChatTemplate, error Statuses with
// template positions (messages as Jinja2 3.1.6 words them), the fixed clock
// behind strftime_now, and key order under nlohmann::json vs ordered_json.
#include "template/chat_template.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

namespace stet {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

Status ParseError(std::string_view tmpl) {
  Result<ChatTemplate> t = ChatTemplate::Parse(tmpl);
  EXPECT_FALSE(t.ok()) << "parsed: " << tmpl;
  return t.ok() ? Status() : t.status();
}

Status RenderError(std::string_view tmpl, const json& ctx = json::object()) {
  Result<ChatTemplate> t = ChatTemplate::Parse(tmpl);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return t.status();
  Result<std::string> out = t->Render(ctx);
  EXPECT_FALSE(out.ok()) << "rendered: " << *out;
  return out.ok() ? Status() : out.status();
}

bool Has(const Status& s, std::string_view part) {
  return s.message().find(part) != std::string::npos;
}

TEST(ChatTemplate, ApplyChatTemplateChatML) {
  const char* tmpl =
      "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content "
      "}}<|im_end|>\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  json messages = json::array(
      {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi 👋"}}});
  Result<std::string> out = ApplyChatTemplate(tmpl, messages, nullptr, true, "<s>", "</s>");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out,
            "<s><|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi "
            "👋<|im_end|>\n<|im_start|>assistant\n");
  out = ApplyChatTemplate(tmpl, messages, nullptr, false, "<s>", "</s>");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->find("assistant"), std::string::npos);
}

TEST(ChatTemplate, ContextAsTransformersPassesIt) {
  // tools and documents are present (None) when not given; extra kwargs are variables.
  const char* tmpl =
      "{{ tools is defined }}{{ tools is none }}{{ documents is none }}{{ enable_thinking }}";
  Result<std::string> out =
      ApplyChatTemplate(tmpl, json::array(), nullptr, true, "", "", {{"enable_thinking", false}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "TrueTrueTrueFalse");
  EXPECT_FALSE(ApplyChatTemplate(tmpl, json::array(), nullptr, true, "", "", json::array()).ok());
}

TEST(ChatTemplate, KeyOrderFollowsTheJsonType) {
  Result<ChatTemplate> t = ChatTemplate::Parse("{{ tool | tojson }}");
  ASSERT_TRUE(t.ok());
  // ordered_json keeps insertion order, as Python dicts do.
  Result<std::string> ordered =
      t->Render(ordered_json::parse(R"({"tool": {"name": "f", "description": "d"}})"));
  ASSERT_TRUE(ordered.ok());
  EXPECT_EQ(*ordered, R"({"name": "f", "description": "d"})");
  // nlohmann::json has sorted its keys before the engine sees them.
  Result<std::string> sorted =
      t->Render(json::parse(R"({"tool": {"name": "f", "description": "d"}})"));
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(*sorted, R"({"description": "d", "name": "f"})");
}

TEST(ChatTemplate, StrftimeNowIsAFixedInstant) {
  Result<ChatTemplate> t =
      ChatTemplate::Parse("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M') }}");
  ASSERT_TRUE(t.ok());
  Result<std::string> out = t->Render(json::object());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "26 Jul 2024|2024-07-26 12:00");
  ChatTemplateOptions o;
  o.now_unix = 0;
  out = t->Render(json::object(), o);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "01 Jan 1970|1970-01-01 00:00");
}

TEST(ChatTemplate, RaiseExceptionCarriesTheMessageAndLine) {
  Status s = RenderError(
      "line one\n{% if true %}\n  {{ raise_exception('System role not supported') }}\n{% endif %}");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Has(s, "raise_exception: System role not supported")) << s.ToString();
  EXPECT_TRUE(Has(s, "line 3, column 6")) << s.ToString();
}

TEST(ChatTemplate, SyntaxErrorsAsJinjaWordsThem) {
  Status s = ParseError("{% for x in y %}\n{{ x }}");
  EXPECT_TRUE(Has(
      s,
      "Unexpected end of template. Jinja was looking for the following tags: 'endfor' or 'else'. "
      "The innermost block that needs to be closed is 'for'."))
      << s.ToString();
  s = ParseError("a\n{% foo %}");
  EXPECT_TRUE(Has(s, "line 2, column 4")) << s.ToString();
  EXPECT_TRUE(Has(s, "Encountered unknown tag 'foo'.")) << s.ToString();
  s = ParseError("{% if x %}{% endfor %}");
  EXPECT_TRUE(
      Has(s,
          "Encountered unknown tag 'endfor'. Jinja was looking for the following tags: 'elif' or "
          "'else' or 'endif'. The innermost block that needs to be closed is 'if'."))
      << s.ToString();
  EXPECT_TRUE(Has(ParseError("{{ 1 +}}"), "unexpected 'end of print statement'"));
  EXPECT_TRUE(Has(ParseError("{{ }}"), "Expected an expression, got 'end of print statement'"));
  EXPECT_TRUE(
      Has(ParseError("{{ x"), "unexpected end of template, expected 'end of print statement'."));
  EXPECT_TRUE(Has(ParseError("{% macro m(a=1, b) %}{% endmacro %}"),
                  "non-default argument follows default argument"));
  EXPECT_TRUE(Has(ParseError("{% set 1 = 2 %}"), "can't assign to 'const'"));
  EXPECT_TRUE(Has(ParseError("{% break %}"), "'break' outside loop"));
  EXPECT_TRUE(Has(ParseError("{% do x %}"),
                  "Encountered unknown tag 'do'."));  // transformers loads no `do`
  EXPECT_TRUE(Has(ParseError("{% include 'x' %}"), "include"));
  // Unknown filters fail at parse time, except inside an `if` (then only when run).
  s = ParseError("\n\n{{ x | from_json }}");
  EXPECT_TRUE(Has(s, "line 3")) << s.ToString();
  EXPECT_TRUE(Has(s, "No filter named 'from_json'.")) << s.ToString();
  Result<ChatTemplate> t = ChatTemplate::Parse("{% if x %}{{ x | from_json }}{% endif %}ok");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->Render(json::object()), "ok");
  EXPECT_TRUE(Has(t->Render(json{{"x", 1}}).status(), "No filter named 'from_json' found."));
}

TEST(ChatTemplate, RuntimeErrorsCarryLineAndColumn) {
  Status s = RenderError("{% for m in messages %}\n  {{ m.content + 1 }}\n{% endfor %}",
                         json{{"messages", json::array({{{"content", "x"}}})}});
  EXPECT_TRUE(Has(s, "line 2, column 6: TypeError: can only concatenate str (not \"int\") to str"))
      << s.ToString();
  s = RenderError("\n{{ functions.x }}");
  EXPECT_TRUE(Has(s, "line 2")) << s.ToString();
  EXPECT_TRUE(Has(s, "UndefinedError: 'functions' is undefined")) << s.ToString();
  s = RenderError("{{ messages.append(1) }}", json{{"messages", json::array()}});
  EXPECT_TRUE(Has(s, "SecurityError: access to attribute 'append' of 'list' object is unsafe."))
      << s.ToString();
}

TEST(ChatTemplate, UndefinedBehavesLikeJinjasDefault) {
  Result<ChatTemplate> t = ChatTemplate::Parse(
      "[{{ missing }}][{{ d.missing }}][{{ missing is defined }}][{{ missing|default('x') }}]"
      "[{% for a in missing %}{{ a }}{% endfor %}][{{ missing|length }}][{% if not missing "
      "%}falsy{% endif %}]");
  ASSERT_TRUE(t.ok());
  Result<std::string> out = t->Render(json{{"d", json::object()}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "[][][False][x][][0][falsy]");
}

TEST(ChatTemplate, NonObjectContextIsRejected) {
  Result<ChatTemplate> t = ChatTemplate::Parse("x");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Render(json::array()).status().code(), StatusCode::kInvalidArgument);
}

TEST(ChatTemplate, RendersConcurrentlyFromOneParse) {
  Result<ChatTemplate> t = ChatTemplate::Parse(
      "{% set ns = namespace(n=0) %}{% for i in range(200) %}{% set ns.n = ns.n + i %}{% endfor "
      "%}{{ ns.n }}");
  ASSERT_TRUE(t.ok());
  std::vector<std::thread> threads;
  std::vector<std::string> outs(4);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] { outs[k] = t->Render(json::object()).value(); });
  }
  for (auto& th : threads) th.join();
  for (const auto& o : outs) EXPECT_EQ(o, "19900");
}

}  // namespace
}  // namespace stet

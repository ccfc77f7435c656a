// Hostile templates end in a clean error Status, quickly: deep nesting, long
// operator chains, runaway loops and recursion, output and value blow-ups,
// deep contexts, cyclic namespaces. None may crash, hang or exhaust memory.
#include <gtest/gtest.h>

#include <chrono>

#include "template/chat_template.h"

namespace stet {
namespace {

using nlohmann::json;

std::string Repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

Status Outcome(const std::string& tmpl, const json& ctx = json::object(), const ChatTemplateOptions& o = {}) {
  Result<ChatTemplate> t = ChatTemplate::Parse(tmpl);
  if (!t.ok()) return t.status();
  Result<std::string> out = t->Render(ctx, o);
  return out.ok() ? Status() : out.status();
}

void ExpectLimit(const std::string& tmpl, const json& ctx = json::object(), const ChatTemplateOptions& o = {}) {
  auto start = std::chrono::steady_clock::now();
  Status s = Outcome(tmpl, ctx, o);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << tmpl.substr(0, 80) << " -> " << s.ToString();
  EXPECT_LT(secs, 20.0) << tmpl.substr(0, 80);
}

TEST(TemplateLimits, DeepSyntaxNesting) {
  ExpectLimit("{{ " + Repeat("(", 100000) + "1" + Repeat(")", 100000) + " }}");
  ExpectLimit("{{ " + Repeat("[", 100000) + Repeat("]", 100000) + " }}");
  ExpectLimit(Repeat("{% if true %}", 5000) + Repeat("{% endif %}", 5000));
  ExpectLimit(Repeat("{% for i in [1] %}", 5000) + Repeat("{% endfor %}", 5000));
  ExpectLimit("{% if x %}" + Repeat("{% elif x %}", 5000) + "{% endif %}");
  ExpectLimit("{{ " + Repeat("not ", 100000) + "x }}");
  ExpectLimit("{{ " + Repeat("- ", 100000) + "1 }}");
  ExpectLimit("{{ 1" + Repeat(" + 1", 100000) + " }}");
  ExpectLimit("{{ x" + Repeat(" ~ x", 100000) + " }}");
  ExpectLimit("{{ x" + Repeat(".a", 100000) + " }}");
  ExpectLimit("{{ x" + Repeat("|trim", 100000) + " }}");
  ExpectLimit("{{ 1" + Repeat(" if 1 else 1", 100000) + " }}");
  ExpectLimit("{{ 1" + Repeat(" < 1", 100000) + " }}");
}

TEST(TemplateLimits, ModerateNestingStillWorks) {
  EXPECT_TRUE(Outcome("{{ " + Repeat("(", 50) + "1" + Repeat(")", 50) + " }}").ok());
  EXPECT_TRUE(Outcome(Repeat("{% if true %}", 50) + "x" + Repeat("{% endif %}", 50)).ok());
  EXPECT_TRUE(Outcome("{{ 1" + Repeat(" + 1", 100) + " }}").ok());
}

TEST(TemplateLimits, RunawayLoops) {
  ExpectLimit("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
  ChatTemplateOptions small;
  small.max_loop_iterations = 1000;
  ExpectLimit("{% for i in range(2000) %}{% endfor %}", json::object(), small);
  EXPECT_TRUE(Outcome("{% for i in range(1000) %}{% endfor %}", json::object(), small).ok());
  // The sandbox's MAX_RANGE.
  Status s = Outcome("{{ range(100001) }}");
  EXPECT_NE(s.message().find("Range too big"), std::string::npos) << s.ToString();
}

TEST(TemplateLimits, RunawayRecursion) {
  ExpectLimit("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}");
  ExpectLimit("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}");
  ExpectLimit("{% macro m() %}{% for i in [1] %}{% if true %}{{ m() }}{% endif %}{% endfor %}{% endmacro %}{{ m() }}");
  EXPECT_TRUE(Outcome("{% macro m(n) %}{% if n > 0 %}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(50) }}").ok());
}

TEST(TemplateLimits, OutputAndValueSize) {
  ExpectLimit("{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}");
  ExpectLimit("{{ 'x' * 1000000000000 }}");
  ExpectLimit("{{ 'x' * 1000000 * 1000 }}");
  ExpectLimit("{{ [1] * 1000000000 }}");
  ExpectLimit("{{ ('ab' * 1000000).replace('a', 'a' * 1000) }}");
  ExpectLimit("{{ 'x'|center(1000000000) }}");
  ExpectLimit("{{ 'a\nb'|indent(1000000000) }}");
  EXPECT_FALSE(Outcome("{{ '{:>1000000000}'.format(1) }}").ok());
  ChatTemplateOptions small;
  small.max_output_bytes = 1000;
  ExpectLimit("{% for i in range(100) %}{{ 'abcdefghijklmnopqrstuvwxyz' }}{% endfor %}", json::object(), small);
  // Integers are 64-bit: what Python would promote to a big integer is an error, not a wrap.
  EXPECT_EQ(Outcome("{{ 10 ** 100 }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Outcome("{{ 9223372036854775807 + 1 }}").code(), StatusCode::kInvalidArgument);
}

TEST(TemplateLimits, DeepValues) {
  // A context nested deeper than the engine accepts.
  json deep = json::array();
  for (int i = 0; i < 2000; ++i) deep = json::array({deep});
  ExpectLimit("{{ x }}", json{{"x", deep}});
  // Values the template nests itself.
  ExpectLimit("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}");
  ExpectLimit("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x.count] %}{% endfor %}");
  ExpectLimit(
      "{% set ns = namespace(p=none) %}{% for i in range(100000) %}{% for j in [ns.p] %}"
      "{% set _ = loop.changed(ns.p) %}{% set ns.p = loop %}{% endfor %}{% endfor %}");
  ExpectLimit("{% set ns = namespace(x=[]) %}{% for i in range(300) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}");
}

TEST(TemplateLimits, CyclesAreHarmless) {
  // Python would hit its recursion limit printing these; the engine errors and frees them.
  ExpectLimit("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
  ExpectLimit("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns.me }}");
  Status s = Outcome("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns == ns.me[0] and ns.me|tojson }}");
  EXPECT_NE(s.message().find("Object of type Namespace is not JSON serializable"), std::string::npos) << s.ToString();
  EXPECT_TRUE(Outcome("{% set a = namespace() %}{% set b = namespace(a=a) %}{% set a.b = b %}ok").ok());
}

TEST(TemplateLimits, DanglingReferencesStayValid) {
  // Methods taken from temporaries keep their object alive.
  Result<ChatTemplate> t = ChatTemplate::Parse(
      "{% set f = cycler(1, 2).next %}{{ f() }}{{ f() }}{{ f() }}"
      "{% set ns = namespace() %}{% for i in [1, 1, 2] %}{% set ns.c = loop.changed %}{% endfor %}"
      "{{ ns.c(5) }}{{ ns.c(5) }}");
  ASSERT_TRUE(t.ok());
  Result<std::string> out = t->Render(json::object());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "121TrueFalse");
}

}  // namespace
}  // namespace stet

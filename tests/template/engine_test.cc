// Behaviour of the template engine, case by case, against Python's Jinja2:
// every expected string (and every expected error message) below was
// produced by Jinja2 3.1.6 configured as HF transformers configures it
// (scripts/golden/make_chat_template_goldens.py's make_env), rendering the
// context in kContext.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "template/chat_template.h"

namespace stet {
namespace {

const char* kContext =
    R"~({"d": {"a": 1, "b": [1, 2], "c": {"x": "y"}}, "s": "héllo wörld", "l": [3, 1, 2],
 "n": null, "e": [], "strs": ["b", "A", "c", "a"],
 "objs": [{"name": "x", "v": 2}, {"name": "Y", "v": 1}, {"name": "z"}],
 "f": 2.5, "i": 7, "t": true, "u": "x\ty\n'\"\\é😀", "msgs": [{"role": "user", "content": "hi"}]})~";

// The rendering, or "ERROR: <status>".
std::string R(std::string_view tmpl) {
  Result<ChatTemplate> t = ChatTemplate::Parse(tmpl);
  if (!t.ok()) return "ERROR: " + t.status().ToString();
  Result<std::string> out = t->Render(nlohmann::ordered_json::parse(kContext));
  if (!out.ok()) return "ERROR: " + out.status().ToString();
  return *out;
}

// Rendering fails, and the message carries what Python's exception said.
#define EXPECT_ERROR(tmpl, python_message)                                        \
  do {                                                                            \
    std::string got = R(tmpl);                                                    \
    EXPECT_EQ(got.rfind("ERROR: ", 0), 0u) << "rendered: " << got;                \
    EXPECT_NE(got.find(python_message), std::string::npos) << "message: " << got; \
  } while (0)

TEST(TemplateWhitespace, MatchesJinja2) {
  EXPECT_EQ(R(R"~(a
  {% if t %}
    yes
  {% endif %}
b)~"),
            R"~(a
    yes
b)~");
  EXPECT_EQ(R(R"~(a
  {%- if t %}
    yes
  {%- endif %}
b)~"),
            R"~(a    yesb)~");
  EXPECT_EQ(R(R"~(a
  {% if t -%}
    yes
  {% endif -%}
b)~"),
            R"~(a
yes
b)~");
  EXPECT_EQ(R(R"~(a
  {%+ if t %}
    yes
  {%+ endif %}
b)~"),
            R"~(a
      yes
  b)~");
  EXPECT_EQ(R(R"~(a
  {% if t +%}
    yes
  {% endif +%}
b)~"),
            R"~(a

    yes

b)~");
  EXPECT_EQ(R(R"~(a
  {# comment #}
b)~"),
            R"~(a
b)~");
  EXPECT_EQ(R(R"~(a
  {#- comment -#}
b)~"),
            R"~(ab)~");
  EXPECT_EQ(R(R"~(a  {# comment #}  b)~"), R"~(a    b)~");
  EXPECT_EQ(R(R"~(a
    {{ 1 }}
  b)~"),
            R"~(a
    1
  b)~");
  EXPECT_EQ(R(R"~(a
    {{- 1 -}}
  b)~"),
            R"~(a1b)~");
  EXPECT_EQ(R(R"~({% for i in [1, 2] %}
  - {{ i }}
{% endfor %}
)~"),
            R"~(  - 1
  - 2
)~");
  EXPECT_EQ(R(R"~({% for i in [1, 2] -%}
  - {{ i }}
{%- endfor %})~"),
            R"~(- 1- 2)~");
  EXPECT_EQ(R(R"~(x {% if t %} y {% endif %} z)~"), R"~(x  y  z)~");
  EXPECT_EQ(R(R"~(

{% set x = 1 %}

{{ x }}

)~"),
            R"~(


1
)~");
  EXPECT_EQ(R(R"~(text
more
end
)~"),
            R"~(text
more
end)~");
  EXPECT_EQ(R(R"~(    {% if t %}x{% endif %})~"), R"~(x)~");
  EXPECT_EQ(R(R"~(  	{% if t %}x{% endif %})~"), R"~(x)~");
  EXPECT_EQ(R(R"~(a {% if t %}x{% endif %})~"), R"~(a x)~");
  EXPECT_EQ(R(R"~({% if t %}
{% endif %}
)~"),
            R"~()~");
  EXPECT_EQ(R(R"~({%- if t -%}

  x  

{%- endif -%})~"),
            R"~(x)~");
  EXPECT_EQ(R(R"~({{ 1 }}
{{ 2 }}
)~"),
            R"~(1
2)~");
  EXPECT_EQ(R(R"~({% macro m() -%}
  body
{%- endmacro %}[{{ m() }}])~"),
            R"~([body])~");
  EXPECT_EQ(R(R"~({% macro m() %}
  body
{% endmacro %}[{{ m() }}])~"),
            R"~([  body
])~");
  EXPECT_EQ(R(R"~({%- for m in msgs -%}
{{- m.role -}}
{%- endfor -%})~"),
            R"~(user)~");
  EXPECT_EQ(R(R"~({% raw %}{{ not parsed }}{% endraw %})~"), R"~({{ not parsed }})~");
  EXPECT_EQ(R(R"~({% raw -%}   {{ x }}   {%- endraw %})~"), R"~({{ x }})~");
  EXPECT_EQ(R(R"~({% if t -%}   a   {%- endif %}|{%- if t +%}  b  {%+ endif -%}|)~"),
            R"~(a|  b  |)~");
  EXPECT_EQ(R(R"~({{- 'a' -}}   {{ 'b' }}   {{- 'c' }})~"), R"~(abc)~");
  EXPECT_EQ(R(R"~(line1
{% for i in [1] %}
  item {{ i }}
{% endfor %}
end)~"),
            R"~(line1
  item 1
end)~");
  EXPECT_EQ(R(R"~({% generation %}gen {{ 1 }}{% endgeneration %})~"), R"~(gen 1)~");
}

TEST(TemplateLiterals, MatchesJinja2) {
  EXPECT_EQ(R(R"~({{ 'a\nb\x41\u00e9\U0001F600\'\"\\' }}{{ "\q" }})~"), R"~(a
bAé😀'"\\q)~");
  EXPECT_EQ(R(R"~({{ 'a' 'b' }}{{ (1) }}{{ (1,) }}{{ () }}{{ [1,2,][0] }}{{ {'a':1,}['a'] }})~"),
            R"~(ab1(1,)()11)~");
  EXPECT_EQ(
      R(R"~({{ 1.0e3 }}{{ 1_000 }}{{ 0x1F }}{{ 0o17 }}{{ 0b101 }}{{ 1e100 }}{{ 1.5e-7 }}{{ 123456789012345678.0 }}{{ 0.1 + 0.2 }})~"),
      R"~(1000.01000311551e+1001.5e-071.2345678901234568e+170.30000000000000004)~");
  EXPECT_EQ(
      R(R"~({{ 5.0 }}{{ -0.0 }}{{ 1e16 }}{{ 1e15 }}{{ 0.0001 }}{{ 0.00001 }}{{ 3.0 * 1.1 }}{{ 100.0 / 3 }}{{ 2.0 ** 60 }})~"),
      R"~(5.0-0.01e+161000000000000000.00.00011e-053.300000000000000333.3333333333333361.152921504606847e+18)~");
  EXPECT_EQ(R(R"~({{ true }}{{ True }}{{ false }}{{ False }}{{ none }}{{ None }})~"),
            R"~(TrueTrueFalseFalseNoneNone)~");
  EXPECT_EQ(R(R"~({{ d }}{{ l }}{{ n }}{{ t }}{{ f }}{{ u }}{{ [u] }}{{ (u,) }}{{ {u: u} }})~"),
            R"~({'a': 1, 'b': [1, 2], 'c': {'x': 'y'}}[3, 1, 2]NoneTrue2.5x	y
'"\é😀['x\ty\n\'"\\é😀']('x\ty\n\'"\\é😀',){'x\ty\n\'"\\é😀': 'x\ty\n\'"\\é😀'})~");
  EXPECT_EQ(R(R"~({{ {'k': 1.5e300, 'n': -0.0, 'i': -5} }})~"),
            R"~({'k': 1.5e+300, 'n': -0.0, 'i': -5})~");
  EXPECT_EQ(R(R"~({{ [1, 'a', none, true, 1.0, ('x',), {'k': "it's"}] }})~"),
            R"~([1, 'a', None, True, 1.0, ('x',), {'k': "it's"}])~");
  EXPECT_EQ(R(R"~({{ {'a': {'b': 1}} }}{{ [[1, [2]]] }})~"), R"~({'a': {'b': 1}}[[1, [2]]])~");
  EXPECT_EQ(R(R"~({% set x = {'a': {'b': 1}} %}{{ x }}{{ {'a': {'b': {'c': 1}}}}})~"),
            R"~({'a': {'b': 1}}{'a': {'b': {'c': 1}}})~");
}

TEST(TemplateOperators, MatchesJinja2) {
  EXPECT_EQ(R(R"~({{ 1 if true }}|{{ 1 if false }}|)~"), R"~(1||)~");
  EXPECT_EQ(R(R"~({{ not 1 == 2 }})~"), R"~(True)~");
  EXPECT_EQ(R(R"~({{ -2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }})~"),
            R"~(4 64 True False)~");
  EXPECT_EQ(R(R"~({{ l|join(',')|upper }}{{ 1 is not none }}{{ not none is none }})~"),
            R"~(3,1,2TrueFalse)~");
  EXPECT_EQ(R(R"~({{ l | first is number }})~"), R"~(True)~");
  EXPECT_EQ(
      R(R"~({{ 7.5 // 2 }} {{ -7.5 // 2 }} {{ 7.5 % -2 }} {{ -7 % 3 }} {{ 2 ** 0.5 }} {{ 0 ** 0 }} {{ 10 / 5 }} {{ -7 // 2 }} {{ 7 % -3 }})~"),
      R"~(3.0 -4.0 -0.5 2 1.4142135623730951 1 2.0 -4 -2)~");
  EXPECT_EQ(R(R"~({{ 2 ** 10 }}{{ 2 ** -1 }})~"), R"~(10240.5)~");
  EXPECT_EQ(R(R"~({{ 'ab' in 'xaby' }}{{ 1 in [1.0] }}{{ 'a' in d }}{{ 3 not in l }})~"),
            R"~(TrueTrueTrueFalse)~");
  EXPECT_EQ(R(R"~({{ +true }}{{ -true }}{{ true + 1 }})~"), R"~(1-12)~");
  EXPECT_EQ(
      R(R"~({{ '%s-%s' % (1, 2) }}{{ '%d' % 3.7 }}{{ '%5.2f|%-4d|%x|%r|%s|%+d|%05d' % (3.14159, 7, 255, 'a', none, 3, 42) }})~"),
      R"~(1-23 3.14|7   |ff|'a'|None|+3|00042)~");
  EXPECT_ERROR(R"~({{ '%(a)s' % d }}{{ '%s' % d }}{{ '%s' % [1] }}{{ '%s %s' % [1, 2] }})~",
               R"~(not enough arguments for format string)~");
  EXPECT_EQ(R(R"~({{ '%5s|%-5s|%.2s' % ('ab', 'cd', 'efg') }}{{ '%c%c' % (65, 'b') }})~"),
            R"~(   ab|cd   |efAb)~");
  EXPECT_EQ(R(R"~({{ '%i %u %e %g %G %E' % (1, 2, 12345.678, 0.00001, 1e20, 1.5) }})~"),
            R"~(1 2 1.234568e+04 1e-05 1E+20 1.500000E+00)~");
  EXPECT_EQ(R(R"~({{ 'abc' * 2 }}{{ [1] * 2 }}{{ 2 * 'ab' }}{{ 'ab' * -1 }})~"),
            R"~(abcabc[1, 1]abab)~");
  EXPECT_EQ(R(R"~({{ 'a' ~ 1 ~ none ~ x ~ [1] }})~"), R"~(a1None[1])~");
  EXPECT_EQ(
      R(R"~({{ 1 == 1.0 }}{{ 1 == true }}{{ '1' == 1 }}{{ [1, 2] == [1, 2] }}{{ [1] == (1,) }}{{ d == {'b': [1, 2], 'a': 1, 'c': {'x': 'y'}} }}{{ none == none }}{{ x == none }}{{ x == x }})~"),
      R"~(TrueTrueFalseTrueFalseTrueTrueFalseTrue)~");
  EXPECT_EQ(R(R"~({{ [1, 2] < [1, 3] }}{{ 'a' < 'b' }}{{ (1, 'a') < (1, 'b') }})~"),
            R"~(TrueTrueTrue)~");
  EXPECT_EQ(R(R"~({{ true and 1 }}{{ 0 or 'b' }}{{ none or [] }}{{ '' and x }}{{ 1 and x }}|)~"),
            R"~(1b[]|)~");
  EXPECT_EQ(R(R"~({{ not x }}{{ not '' }}{{ not [1] }})~"), R"~(TrueTrueFalse)~");
  EXPECT_EQ(
      R(R"~({{ ('a'|safe) + '<b>' }}{{ '<b>' + ('a'|safe) }}{{ ('a'|safe).replace('a', '<') }})~"),
      R"~(a&lt;b&gt;&lt;b&gt;a&lt;)~");
  EXPECT_ERROR(R"~({{ 1 / 0 }})~", R"~(division by zero)~");
  EXPECT_ERROR(R"~({{ 1 // 0 }})~", R"~(integer division or modulo by zero)~");
  EXPECT_ERROR(R"~({{ 'a' < 1 }})~", R"~('<' not supported between instances of 'str' and 'int')~");
  EXPECT_ERROR(R"~({{ 1 in 'abc' }})~",
               R"~('in <string>' requires string as left operand, not int)~");
  EXPECT_ERROR(R"~({{ 1 in n }})~", R"~(argument of type 'NoneType' is not iterable)~");
  EXPECT_ERROR(R"~({{ -'a' }})~", R"~(bad operand type for unary -: 'str')~");
  EXPECT_ERROR(R"~({{ [1] + (2,) }})~", R"~(can only concatenate list (not "tuple") to list)~");
  EXPECT_ERROR(R"~({{ 'a' - 'b' }})~", R"~(unsupported operand type(s) for -: 'str' and 'str')~");
  EXPECT_ERROR(R"~({{ none + 1 }})~",
               R"~(unsupported operand type(s) for +: 'NoneType' and 'int')~");
  EXPECT_ERROR(R"~({{ x + 1 }})~", R"~('x' is undefined)~");
  EXPECT_ERROR(R"~({{ none < 1 }})~",
               R"~('<' not supported between instances of 'NoneType' and 'int')~");
  EXPECT_ERROR(R"~({{ [3, 'a']|sort }})~",
               R"~('<' not supported between instances of 'str' and 'int')~");
  EXPECT_ERROR(R"~({{ 'a' % 1 }})~", R"~(not all arguments converted during string formatting)~");
  EXPECT_ERROR(R"~({{ '%s' % (1, 2) }})~",
               R"~(not all arguments converted during string formatting)~");
  EXPECT_ERROR(R"~({{ '%s %s' % (1,) }})~", R"~(not enough arguments for format string)~");
}

TEST(TemplateStatements, MatchesJinja2) {
  EXPECT_EQ(R(R"~({% set a, b = 1, 2 %}{{ a }}{{ b }})~"), R"~(12)~");
  EXPECT_EQ(R(R"~({% set a = 1, 2 %}{{ a }}|{{ 1, 2 }})~"), R"~((1, 2)|(1, 2))~");
  EXPECT_EQ(R(R"~({% for a in [1], [2] %}{{ a }}{% endfor %})~"), R"~([1][2])~");
  EXPECT_EQ(R(R"~({% if 1, 2 %}x{% endif %})~"), R"~(x)~");
  EXPECT_EQ(
      R(R"~({% if true %}{% elif false %}b{% else %}c{% endif %}|{% if false %}a{% elif true %}b{% else %}c{% endif %}|{% if false %}a{% elif false %}b{% else %}c{% endif %})~"),
      R"~(|b|c)~");
  EXPECT_EQ(
      R(R"~({% set ns = namespace(a=1) %}{% set ns.a = ns.a + 1 %}{% set ns.b = 'x' %}{{ ns.a }}{{ ns.b }}{{ ns }}{{ ns.c }}|{{ ns['a'] }})~"),
      R"~(2x<Namespace {'a': 2, 'b': 'x'}>|2)~");
  EXPECT_EQ(R(R"~({% set ns = namespace(d) %}{{ ns.a }}{{ ns.c.x }})~"), R"~(1y)~");
  EXPECT_ERROR(R"~({% set x = 1 %}{% set x.y = 2 %})~",
               R"~(cannot assign attribute on non-namespace object)~");
  EXPECT_EQ(
      R(R"~({% set ns = namespace() %}{% for i in l %}{% set ns.x = i %}{% endfor %}{{ ns.x }})~"),
      R"~(2)~");
  EXPECT_EQ(
      R(R"~({% set count = 0 %}{% for i in l %}{% set count = count + 1 %}{% endfor %}{{ count }})~"),
      R"~(0)~");
  EXPECT_EQ(
      R(R"~({% for i in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.cycle('a', 'b') }}|{% endfor %})~"),
      R"~(1032TrueFalse3a|2121FalseFalse3b|3210FalseTrue3a|)~");
  EXPECT_EQ(R(R"~({% for i in l %}{{ loop.previtem }}-{{ loop.nextitem }}|{% endfor %})~"),
            R"~(-1|3-2|1-|)~");
  EXPECT_EQ(
      R(R"~({% for i in l if i > 1 %}{{ i }}{{ loop.index }}{{ loop.length }}{% else %}none{% endfor %})~"),
      R"~(312222)~");
  EXPECT_EQ(
      R(R"~({% for i in e %}x{% else %}empty{% endfor %}{% for i in l if i > 5 %}x{% else %}empty2{% endfor %})~"),
      R"~(emptyempty2)~");
  EXPECT_EQ(
      R(R"~({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for c in 'ab' %}{{ c }}{% endfor %})~"),
      R"~(a=1;b=[1, 2];c={'x': 'y'};abcab)~");
  EXPECT_EQ(
      R(R"~({% for i in l %}{% if i == 1 %}{% break %}{% endif %}{{ i }}{% endfor %}|{% for i in l %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %})~"),
      R"~(3|32)~");
  EXPECT_EQ(R(R"~({% for i in l %}{{ loop.changed(i > 1) }}{% endfor %})~"), R"~(TrueTrueTrue)~");
  EXPECT_EQ(
      R(R"~({% for i in l %}{{ loop.depth }}{{ loop.depth0 }}{{ loop }}{% endfor %}{{ loop }})~"),
      R"~(10<LoopContext 1/3>10<LoopContext 2/3>10<LoopContext 3/3>)~");
  EXPECT_EQ(
      R(R"~({% for i in [1, 2] %}{% for j in [3, 4] %}{{ loop.index }}{{ i }}{{ j }} {% endfor %}{{ loop.index }}{% endfor %})~"),
      R"~(113 214 1123 224 2)~");
  EXPECT_EQ(
      R(R"~({% set y = 5 %}{% for i in [1,2] %}{{ y }}{% set y = i %}{{ y }}{% endfor %}[{{ y }}])~"),
      R"~(5152[5])~");
  EXPECT_EQ(
      R(R"~({% for i in [1,2] %}{% if i == 2 %}{{ y }}{% endif %}{% set y = i %}{% endfor %}[{{ y }}])~"),
      R"~([])~");
  EXPECT_EQ(
      R(R"~({% set y = 5 %}{% for i in [1,2] %}{% if i == 1 %}{% set y = 7 %}{% endif %}{{ y }}{% endfor %}[{{ y }}])~"),
      R"~(75[5])~");
  EXPECT_EQ(
      R(R"~({% macro m(a, b=2) %}{{ a }}{{ b }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1) }}|{{ m(1,3,4,z=5) }}|{{ m(b=1) }})~"),
      R"~(12(){}|13(4,){'z': 5}|1(){})~");
  EXPECT_EQ(
      R(R"~({% macro m(a, b=a) %}{{ a }}{{ b }}{% endmacro %}{{ m(3) }}{{ m.name }}{{ m.arguments }})~"),
      R"~(33m('a', 'b'))~");
  EXPECT_EQ(
      R(R"~({% macro outer() %}[{{ caller() }}]{% endmacro %}{% call outer() %}inside{% endcall %})~"),
      R"~([inside])~");
  EXPECT_EQ(
      R(R"~({% macro outer() %}[{{ caller(5) }}]{% endmacro %}{% call(x) outer() %}inside{{ x }}{% endcall %})~"),
      R"~([inside5])~");
  EXPECT_EQ(R(R"~({% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }})~"),
            R"~(2)~");
  EXPECT_EQ(
      R(R"~({% macro m(n) %}{% if n > 0 %}{{ n }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(5) }})~"),
      R"~(54321)~");
  EXPECT_EQ(
      R(R"~({% set b %}block {{ 1 + 1 }}{% endset %}[{{ b }}]{% set c | upper %}x{% endset %}{{ c }})~"),
      R"~([block 2]X)~");
  EXPECT_EQ(R(R"~({% filter upper %}hello {{ s }}{% endfilter %})~"), R"~(HELLO HÉLLO WÖRLD)~");
  EXPECT_EQ(R(R"~({% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }})~"), R"~(3)~");
  EXPECT_EQ(
      R(R"~({% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }})~"),
      R"~(abab)~");
  EXPECT_EQ(R(R"~({% set j = joiner('|') %}{{ j() }}a{{ j() }}b{{ j() }})~"), R"~(a|b|)~");
  EXPECT_EQ(
      R(R"~({% set g = l|select('odd') %}{% for x in g %}{{ x }}{% endfor %}{% for x in g %}{{ x }}{% endfor %})~"),
      R"~(31)~");
  EXPECT_EQ(R(R"~({% print 1, 2 %})~"), R"~(12)~");
  EXPECT_EQ(R(R"~({% if x is not defined %}undef{% endif %})~"), R"~(undef)~");
  EXPECT_EQ(R(R"~({% if d.c.x == 'y' and not d.zz %}ok{% endif %})~"), R"~(ok)~");
  EXPECT_ERROR(R"~({% for i in n %}{% endfor %})~", R"~('NoneType' object is not iterable)~");
  EXPECT_ERROR(R"~({% for i in 5 %}{% endfor %})~", R"~('int' object is not iterable)~");
  EXPECT_ERROR(R"~({% for a, b in [(1, 2), (3,)] %}{{ a }}{% endfor %})~",
               R"~(not enough values to unpack (expected 2, got 1))~");
  EXPECT_ERROR(R"~({% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }})~",
               R"~(macro 'm' takes not more than 1 argument(s))~");
  EXPECT_ERROR(R"~({% macro m(a) %}{{ a }}{% endmacro %}{{ m(z=2) }})~",
               R"~(macro 'm' takes no keyword argument 'z')~");
  EXPECT_ERROR(R"~({% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, a=2) }})~",
               R"~(macro 'm' takes no keyword argument 'a')~");
}

TEST(TemplateAccess, MatchesJinja2) {
  EXPECT_EQ(R(R"~({{ d.a.b }})~"), R"~()~");
  EXPECT_EQ(R(R"~({{ l.0 }}{{ l.1 }})~"), R"~(31)~");
  EXPECT_EQ(
      R(R"~({{ l[1:] }}{{ l[::2] }}{{ l[-1] }}{{ 'abc'[1:2] }}{{ s[::-1] }}{{ s[1] }}{{ s[-2:] }}{{ l[5:1:-1] }})~"),
      R"~([1, 2][3, 2]2bdlröw olléhéld[2])~");
  EXPECT_EQ(R(R"~({{ d.zz }}|)~"), R"~(|)~");
  EXPECT_EQ(R(R"~({{ l[10] }}|)~"), R"~(|)~");
  EXPECT_EQ(R(R"~({{ n[0] }}|)~"), R"~(|)~");
  EXPECT_EQ(R(R"~({{ n.y }}|)~"), R"~(|)~");
  EXPECT_EQ(R(R"~({{ 'x'.foo }}|)~"), R"~(|)~");
  EXPECT_EQ(R(R"~({{ 'x'[5] }}|{{ 'x'[-5] }}|)~"), R"~(||)~");
  EXPECT_EQ(R(R"~({{ l['a'] }}|{{ l[1.5] }}|{{ d[0] }}|{{ s['x'] }})~"), R"~(|||)~");
  EXPECT_EQ(R(R"~({{ l[true] }})~"), R"~(1)~");
  EXPECT_EQ(R(R"~({% set t2 = (1, 2) %}{{ t2 }}{{ t2[0] }}{{ t2 + (3,) }})~"),
            R"~((1, 2)1(1, 2, 3))~");
  EXPECT_EQ(R(R"~({{ (1, 2) == (1, 2) }}{{ 1 in (1, 2) }})~"), R"~(TrueTrue)~");
  EXPECT_EQ(R(R"~({{ msgs[0].content }}{{ msgs[0]['role'] }}{{ msgs[-1].role }})~"),
            R"~(hiuseruser)~");
  EXPECT_EQ(R(R"~({{ d.get('a') }}{{ d.get('zz') }}{{ d.get('zz', 5) }})~"), R"~(1None5)~");
  EXPECT_EQ(
      R(R"~({{ d.items() }}{{ d.keys() }}{{ d.values() }})~"),
      R"~(dict_items([('a', 1), ('b', [1, 2]), ('c', {'x': 'y'})])dict_keys(['a', 'b', 'c'])dict_values([1, [1, 2], {'x': 'y'}]))~");
  EXPECT_EQ(R(R"~({{ d|length }}{{ d.items()|length }}{{ d.items()|list }}{{ d.keys()|first }})~"),
            R"~(33[('a', 1), ('b', [1, 2]), ('c', {'x': 'y'})]a)~");
  EXPECT_EQ(R(R"~({{ d.items() is sequence }}{{ d.items() is iterable }})~"), R"~(FalseTrue)~");
  EXPECT_EQ(R(R"~({{ i.real }}{{ f.is_integer() }})~"), R"~(7False)~");
  EXPECT_EQ(R(R"~({{ l.index(1) }}{{ l.count(3) }}{{ (1, 2).index(2) }})~"), R"~(111)~");
  EXPECT_EQ(R(R"~({{ l.append is defined }})~"), R"~(False)~");
  EXPECT_ERROR(R"~({{ x.y }})~", R"~('x' is undefined)~");
  EXPECT_ERROR(R"~({{ n.y.z }})~", R"~('None' has no attribute 'y')~");
  EXPECT_ERROR(R"~({{ d.zz.q }})~", R"~('dict object' has no attribute 'zz')~");
  EXPECT_ERROR(R"~({{ l[10].x }})~", R"~(list object has no element 10)~");
  EXPECT_ERROR(R"~({{ n[0].x }})~", R"~(None has no element 0)~");
  EXPECT_EQ(R(R"~({{ d['a']['b'] }})~"), R"~()~");
  EXPECT_ERROR(R"~({{ messages[0] }})~", R"~('messages' is undefined)~");
  EXPECT_ERROR(R"~({{ 'x'.foo.bar }})~", R"~('str object' has no attribute 'foo')~");
  EXPECT_ERROR(R"~({{ l(1) }})~", R"~('list' object is not callable)~");
  EXPECT_ERROR(R"~({{ undefined_fn(1) }})~", R"~('undefined_fn' is undefined)~");
  EXPECT_ERROR(R"~({{ l[1:2:0] }})~", R"~(slice step cannot be zero)~");
  EXPECT_ERROR(R"~({{ l.append(4) }})~",
               R"~(access to attribute 'append' of 'list' object is unsafe.)~");
  EXPECT_ERROR(R"~({{ d.update({}) }})~",
               R"~(access to attribute 'update' of 'dict' object is unsafe.)~");
  EXPECT_ERROR(R"~({{ d.pop('a') }})~",
               R"~(access to attribute 'pop' of 'dict' object is unsafe.)~");
  EXPECT_EQ(R(R"~({{ d.__class__ }})~"), R"~()~");
  EXPECT_ERROR(R"~({{ d.__class__.x }})~",
               R"~(access to attribute '__class__' of 'dict' object is unsafe.)~");
}

TEST(TemplateFilters, MatchesJinja2) {
  EXPECT_EQ(
      R(R"~({{ l|map('string')|list }}{{ objs|map(attribute='name')|join(',') }}{{ objs|map(attribute='v', default=0)|list }})~"),
      R"~(['3', '1', '2']x,Y,z[2, 1, 0])~");
  EXPECT_EQ(
      R(R"~({{ objs|selectattr('v')|map(attribute='name')|list }}{{ objs|rejectattr('v')|list }}{{ objs|selectattr('v', 'equalto', 2)|list }}{{ l|select('odd')|list }}{{ l|reject('odd')|list }}{{ l|select|list }})~"),
      R"~(['x', 'Y'][{'name': 'z'}][{'name': 'x', 'v': 2}][3, 1][2][3, 1, 2])~");
  EXPECT_EQ(R(R"~({{ objs|selectattr('name', 'in', ['x', 'z'])|list|length }})~"), R"~(2)~");
  EXPECT_EQ(
      R(R"~({{ strs|sort }}{{ strs|sort(case_sensitive=true) }}{{ strs|sort(reverse=true) }}{{ objs|sort(attribute='name')|map(attribute='name')|list }})~"),
      R"~(['A', 'a', 'b', 'c']['A', 'a', 'b', 'c']['c', 'b', 'A', 'a']['x', 'Y', 'z'])~");
  EXPECT_EQ(
      R(R"~({{ [{'a': 2, 'b': 1}, {'a': 1, 'b': 2}, {'a': 1, 'b': 1}]|sort(attribute='a,b') }})~"),
      R"~([{'a': 1, 'b': 1}, {'a': 1, 'b': 2}, {'a': 2, 'b': 1}])~");
  EXPECT_EQ(
      R(R"~({{ strs|unique|list }}{{ ['a', 'A', 'b']|unique|list }}{{ ['a', 'A', 'b']|unique(case_sensitive=true)|list }})~"),
      R"~(['b', 'A', 'c']['a', 'b']['a', 'A', 'b'])~");
  EXPECT_ERROR(
      R"~({{ l|min }}{{ l|max }}{{ strs|min }}{{ strs|max }}{{ e|min }}{{ l|sum }}{{ objs|sum(attribute='v') }})~",
      R"~('dict object' has no attribute 'v')~");
  EXPECT_EQ(
      R(R"~({{ l|batch(2)|list }}{{ l|batch(2, 'x')|list }}{{ l|slice(2)|list }}{{ l|slice(2, 0)|list }}{{ [1, 2, 3, 4, 5]|slice(3, 'x')|list }})~"),
      R"~([[3, 1], [2]][[3, 1], [2, 'x']][[3, 1], [2]][[3, 1], [2, 0]][[1, 2], [3, 4], [5, 'x']])~");
  EXPECT_EQ(
      R(R"~({{ d|dictsort }}{{ {'b': 1, 'A': 2, 'a': 3}|dictsort }}{{ {'b': 1, 'A': 2, 'a': 3}|dictsort(by='value', reverse=true) }})~"),
      R"~([('a', 1), ('b', [1, 2]), ('c', {'x': 'y'})][('A', 2), ('a', 3), ('b', 1)][('a', 3), ('A', 2), ('b', 1)])~");
  EXPECT_EQ(R(R"~({{ l|reverse|list }}{{ s|reverse }}{{ d|reverse|list }})~"),
            R"~([2, 1, 3]dlröw olléh['c', 'b', 'a'])~");
  EXPECT_EQ(
      R(R"~({{ d|items|list }}{{ d|list }}{{ s|list }})~"),
      R"~([('a', 1), ('b', [1, 2]), ('c', {'x': 'y'})]['a', 'b', 'c']['h', 'é', 'l', 'l', 'o', ' ', 'w', 'ö', 'r', 'l', 'd'])~");
  EXPECT_EQ(R(R"~({{ l|first }}{{ l|last }}{{ e|first }}{{ s|first }}{{ s|last }}{{ d|first }})~"),
            R"~(32hda)~");
  EXPECT_EQ(R(R"~({{ l|length }}{{ s|length }}{{ d|count }}{{ x|length }})~"), R"~(31130)~");
  EXPECT_EQ(
      R(R"~({{ x|default('dflt') }}{{ n|default('dflt') }}{{ n|default('dflt', true) }}{{ ''|d('e', true) }}{{ 0|d(5) }})~"),
      R"~(dfltNonedflte0)~");
  EXPECT_EQ(
      R(R"~({{ '  a b  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ s|upper }}|{{ s|lower }}|{{ 'hello WORLD'|capitalize }}|{{ 'hello wORLD-foo (bar) x_y'|title }}|{{ "they're bill's"|title }})~"),
      R"~(a b|a|HÉLLO WÖRLD|héllo wörld|Hello world|Hello World-Foo (Bar) X_y|They're Bill's)~");
  EXPECT_EQ(
      R(R"~({{ 'a b c'|replace(' ', '-') }}{{ 'aaa'|replace('a', 'b', 2) }}{{ 123|replace('2', 'x') }})~"),
      R"~(a-b-cbba1x3)~");
  EXPECT_EQ(R(R"~({{ 'hello'|center(11) }}|{{ 'hello'|center(10) }}|{{ 'hi'|center(7) }}|)~"),
            R"~(   hello   |  hello   |   hi  |)~");
  EXPECT_EQ(R(R"~({{ '%s and %s'|format(1, 2) }}{{ '%(x)s'|format(x=3) }})~"), R"~(1 and 23)~");
  EXPECT_EQ(R(R"~({{ '<b>a</b>  <!-- c -->  b &amp; c'|striptags }})~"), R"~(a b & c)~");
  EXPECT_EQ(R(R"~({{ 'hello world foo_bar 123'|wordcount }})~"), R"~(4)~");
  EXPECT_EQ(
      R(R"~({{ 'a\nb\n\nc'|indent }}|{{ 'a\nb\n\nc'|indent(2, true) }}|{{ 'a\nb\n\nc'|indent(2, blank=true) }}|{{ 'a\nb'|indent('--') }})~"),
      R"~(a
    b

    c|  a
  b

  c|a
  b
  
  c|a
--b)~");
  EXPECT_EQ(
      R(R"~({{ -3|abs }}{{ (-3.5)|abs }}{{ 2.5|round }}{{ 3.5|round }}{{ 3.14159|round(2) }}{{ 2.675|round(2) }}{{ 3|round }}{{ 3.7|round(method='floor') }}{{ 3.2|round(method='ceil') }}{{ -2.5|round }})~"),
      R"~(33.52.04.03.142.6733.04.0-2.0)~");
  EXPECT_EQ(R(R"~({{ f|round }}{{ 10|round(-1) }}{{ 15|round(-1) }}{{ 1234.5678|round(-2) }})~"),
            R"~(2.010201200.0)~");
  EXPECT_EQ(
      R(R"~({{ '42'|int }}{{ '42.7'|int }}{{ ' 12 '|int }}{{ n|int }}{{ 'abc'|int(5) }}{{ 3.9|int }}{{ '0x1A'|int(0, 16) }}{{ '1A'|int(base=16) }}{{ true|int }})~"),
      R"~(42421205326261)~");
  EXPECT_EQ(R(R"~({{ '3.5'|float }}{{ 'abc'|float }}{{ 3|float }}{{ '1e3'|float }}{{ n|float }})~"),
            R"~(3.50.03.01000.00.0)~");
  EXPECT_EQ(
      R(R"~({{ 3|string }}{{ n|string }}{{ l|string }}{{ x|string }}|{{ (3|string) ~ 'a' }})~"),
      R"~(3None[3, 1, 2]|3a)~");
  EXPECT_EQ(
      R(R"~({{ '<a>'|e }}{{ '<a>'|escape }}{{ '<a>'|safe }}{{ ('<a>'|safe)|e }}{{ "'\""|e }})~"),
      R"~(&lt;a&gt;&lt;a&gt;<a><a>&#39;&#34;)~");
  EXPECT_EQ(
      R(R"~({{ 'hello world'|truncate(5) }}|{{ 'hello world foo bar baz qux'|truncate(12) }}|{{ 'hello world foo bar baz qux'|truncate(12, true) }}|{{ 'hello'|truncate(3) }})~"),
      R"~(he...|hello...|hello wor...|hello)~");
  EXPECT_EQ(
      R(R"~({{ 1000|filesizeformat }}{{ 1|filesizeformat }}{{ 1500000|filesizeformat(true) }})~"),
      R"~(1.0 kB1 Byte1.4 MiB)~");
  EXPECT_EQ(R(R"~({{ d|attr('a') }}|)~"), R"~(|)~");
  EXPECT_EQ(R(R"~({{ 'a b'|urlencode }}{{ {'a': 'b c'}|urlencode }})~"), R"~(a%20ba=b+c)~");
  EXPECT_EQ(R(R"~({{ [1, 2]|pprint }})~"), R"~([1, 2])~");
  EXPECT_EQ(
      R(R"~({{ [1,2,3]|select('gt', 1)|list }}{{ [1,2,3]|select('>', 1)|list }}{{ [1,2,3]|select('in', [1, 3])|list }})~"),
      R"~([2, 3][2, 3][1, 3])~");
  EXPECT_EQ(R(R"~({{ [none, 1, 0, '', 'a']|select|list }}{{ [none, 1, 0]|reject('none')|list }})~"),
            R"~([1, 'a'][1, 0])~");
  EXPECT_EQ(R(R"~({{ ['1', '2']|map('int')|list }})~"), R"~([1, 2])~");
  EXPECT_EQ(
      R(R"~({{ objs|groupby('name')|list }})~"),
      R"~([('x', [{'name': 'x', 'v': 2}]), ('Y', [{'name': 'Y', 'v': 1}]), ('z', [{'name': 'z'}])])~");
  EXPECT_EQ(R(R"~({{ u|length }}{{ u|wordcount }}{{ u.upper() }})~"), R"~(93X	Y
'"\É😀)~");
  EXPECT_EQ(R(R"~({{ 'ß'|upper }}{{ 'ÉCOLE'|lower }}{{ 'émile'|capitalize }})~"),
            R"~(SSécoleÉmile)~");
  EXPECT_EQ(
      R(R"~({{ l|join }}{{ l|join(', ') }}{{ objs|join(', ', attribute='name') }}{{ [none, 1]|join('-') }})~"),
      R"~(3123, 1, 2x, Y, zNone-1)~");
  EXPECT_ERROR(R"~({{ (l|map('string'))|length }})~",
               R"~(object of type 'generator' has no len())~");
  EXPECT_ERROR(R"~({{ l|map('string')|tojson }})~",
               R"~(Object of type generator is not JSON serializable)~");
  EXPECT_ERROR(R"~({{ n|items|list }})~", R"~(Can only get item pairs from a mapping.)~");
  EXPECT_ERROR(R"~({{ 'x' | items | list }})~", R"~(Can only get item pairs from a mapping.)~");
  EXPECT_ERROR(R"~({{ [1]|map|list }})~", R"~(map requires a filter argument)~");
  EXPECT_ERROR(R"~({{ l|selectattr|list }})~", R"~(Missing parameter for attribute name)~");
  EXPECT_ERROR(R"~({{ l|foo }})~", R"~(No filter named 'foo'.)~");
  EXPECT_EQ(R(R"~({% if false %}{{ l|foo }}{% endif %})~"), R"~()~");
  EXPECT_ERROR(R"~({{ 1 if false else (2|foo) }})~", R"~(No filter named 'foo' found.)~");
  EXPECT_ERROR(R"~({% if false %}{% for i in [1] %}{{ i | foo }}{% endfor %}{% endif %})~",
               R"~(No filter named 'foo'.)~");
  EXPECT_EQ(
      R(R"~({{ 5|center }})~"),
      R"~(                                       5                                        )~");
}

TEST(TemplateFilterEdges, MatchesJinja2) {
  EXPECT_ERROR(R"~({{ strs|indent(2) }})~", R"~('list' object has no attribute 'splitlines')~");
  EXPECT_ERROR(R"~({{ l[0]|indent(2) }})~",
               R"~(unsupported operand type(s) for +=: 'int' and 'str')~");
  EXPECT_ERROR(R"~({{ x|indent }})~", R"~('x' is undefined)~");
  EXPECT_EQ(R(R"~({{ [1, 2]|truncate(5) }})~"), R"~([1, 2])~");
  EXPECT_ERROR(R"~({{ l[0]|truncate(5) }})~", R"~(object of type 'int' has no len())~");
  EXPECT_ERROR(R"~({{ msgs|unique|list }})~", R"~(unhashable type: 'dict')~");
  EXPECT_EQ(R(R"~({{ '' % x }}{{ 'Ab c' % x }}{{ '%s' % x }}|)~"), R"~(Ab c|)~");
  EXPECT_ERROR(R"~({{ x|float }})~", R"~('x' is undefined)~");
  EXPECT_ERROR(R"~({{ x|int }})~", R"~('x' is undefined)~");
  EXPECT_EQ(R(R"~({{ 'Ab c'|first|safe|unique|list }}{{ ('ab'|safe)|list }})~"),
            R"~(['A']['a', 'b'])~");
  EXPECT_ERROR(R"~({{ ['a']|list in d }})~", R"~(unhashable type: 'list')~");
  EXPECT_EQ(R(R"~({{ '' % strs }})~"), R"~()~");
}

TEST(TemplateToJson, MatchesJinja2) {
  EXPECT_EQ(
      R(R"~({{ d|tojson }}{{ u|tojson }}{{ l|tojson(indent=2) }}{{ d|tojson(indent=4) }}{{ d|tojson(separators=(',', ':')) }}{{ d|tojson(sort_keys=true) }}{{ u|tojson(ensure_ascii=true) }})~"),
      R"~({"a": 1, "b": [1, 2], "c": {"x": "y"}}"x\ty\n'\"\\é😀"[
  3,
  1,
  2
]{
    "a": 1,
    "b": [
        1,
        2
    ],
    "c": {
        "x": "y"
    }
}{"a":1,"b":[1,2],"c":{"x":"y"}}{"a": 1, "b": [1, 2], "c": {"x": "y"}}"x\ty\n'\"\\\u00e9\ud83d\ude00")~");
  EXPECT_EQ(
      R(R"~({{ {'b': 1, 'a': [1.5, none, true, 'x']}|tojson }}{{ 1e20|tojson }}{{ 1.0|tojson }}{{ [] | tojson(indent=2) }}{{ {} | tojson(indent=2) }})~"),
      R"~({"b": 1, "a": [1.5, null, true, "x"]}1e+201.0[]{})~");
  EXPECT_EQ(
      R(R"~({{ 'a\u2028b'|tojson }}{{ '\x7f'|tojson }}{{ '\x7f'|tojson(ensure_ascii=true) }}{{ '\x00\x1f'|tojson }})~"),
      R"~("a b""""\u007f""\u0000\u001f")~");
  EXPECT_EQ(R(R"~({{ ['é']|tojson(ensure_ascii=true) }}{{ '😀'|tojson(ensure_ascii=true) }})~"),
            R"~(["\u00e9"]"\ud83d\ude00")~");
  EXPECT_EQ(
      R(R"~({{ 'a'|tojson(indent='\t') }}{{ [1, [2, {'a': []}]]|tojson(indent='\t') }}{{ [1,2]|tojson(indent=0) }}{{ [1]|tojson(indent=-1) }})~"),
      R"~("a"[
	1,
	[
		2,
		{
			"a": []
		}
	]
][
1,
2
][
1
])~");
  EXPECT_EQ(R(R"~({{ {1: 2, none: 3, true: 4, 1.5: 5}|tojson }})~"),
            R"~({"1": 4, "null": 3, "1.5": 5})~");
  EXPECT_EQ(R(R"~({{ d|tojson(4) }})~"), R"~({"a": 1, "b": [1, 2], "c": {"x": "y"}})~");
  EXPECT_EQ(R(R"~({{ 'é'|tojson(1) }})~"), R"~("\u00e9")~");
  EXPECT_EQ(R(R"~({{ d|tojson(indent=2, separators=[', ', ' = ']) }})~"), R"~({
  "a" = 1, 
  "b" = [
    1, 
    2
  ], 
  "c" = {
    "x" = "y"
  }
})~");
  EXPECT_EQ(R(R"~({{ [1.0, 2.5, 1e-7, 1e22, 3.0e-5]|tojson }})~"),
            R"~([1.0, 2.5, 1e-07, 1e+22, 3e-05])~");
  EXPECT_EQ(R(R"~({{ 0.1|tojson }}{{ (1/3)|tojson }}{{ 1e16|tojson }})~"),
            R"~(0.10.33333333333333331e+16)~");
  EXPECT_ERROR(R"~({{ {(1, 2): 3}|tojson }})~",
               R"~(keys must be str, int, float, bool or None, not tuple)~");
  EXPECT_ERROR(R"~({{ {'a': x}|tojson }})~",
               R"~(Object of type Undefined is not JSON serializable)~");
  EXPECT_ERROR(R"~({{ x|tojson }})~", R"~(Object of type Undefined is not JSON serializable)~");
  EXPECT_ERROR(R"~({% set ns = namespace() %}{{ ns|tojson }})~",
               R"~(Object of type Namespace is not JSON serializable)~");
  EXPECT_ERROR(R"~({{ d.items()|tojson }})~",
               R"~(Object of type dict_items is not JSON serializable)~");
  EXPECT_ERROR(R"~({{ range(3)|tojson }})~", R"~(Object of type range is not JSON serializable)~");
}

TEST(TemplateTests, MatchesJinja2) {
  EXPECT_EQ(
      R(R"~({{ x is defined }}{{ x is undefined }}{{ n is none }}{{ t is boolean }}{{ t is true }}{{ t is false }}{{ 1 is integer }}{{ t is integer }}{{ 1.0 is float }}{{ t is number }}{{ s is string }}{{ d is mapping }}{{ l is sequence }}{{ d is sequence }}{{ s is iterable }}{{ n is iterable }}{{ x is iterable }}{{ (l|map('string')) is iterable }}{{ (l|map('string')) is sequence }})~"),
      R"~(FalseTrueTrueTrueTrueFalseTrueFalseTrueTrueTrueTrueTrueTrueTrueFalseTrueTrueFalse)~");
  EXPECT_EQ(
      R(R"~({{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 'aBc' is lower }}{{ 3 is odd }}{{ 4 is even }}{{ 1 is eq 1 }}{{ 1 is ne 1 }}{{ 2 is gt 1 }}{{ 2 is ge 2 }}{{ 1 is lt 2 }}{{ 1 is le 0 }}{{ 1 is in [1] }}{{ 'upper' is filter }}{{ 'foo' is filter }}{{ 'odd' is test }}{{ none is sameas none }}{{ range is callable }}{{ x is callable }}{{ 'a' is escaped }}{{ ('a'|safe) is escaped }})~"),
      R"~(TrueTrueFalseTrueTrueTrueFalseTrueTrueTrueFalseTrueTrueFalseTrueTrueTrueTrueFalseTrue)~");
  EXPECT_ERROR(
      R"~({{ 1 is equalto 1 }}{{ 1 is == 1 }}{{ 1 is greaterthan 0 }}{{ 1 is lessthan 0 }}{{ 5 is divisibleby 2 }}{{ 5 is divisibleby(5) }}{{ s is sameas s }})~",
      R"~(expected token 'name', got '==')~");
  EXPECT_EQ(R(R"~({{ d.a is defined }}{{ d.zz is defined }}{{ d.zz is not defined }})~"),
            R"~(TrueFalseTrue)~");
  EXPECT_EQ(R(R"~({{ 'x' if 1 is number else 'y' }})~"), R"~(x)~");
  EXPECT_EQ(R(R"~({% if false %}{{ 1 is foo }}{% endif %})~"), R"~()~");
  EXPECT_ERROR(R"~({{ 1 is foo }})~", R"~(No test named 'foo'.)~");
}

TEST(TemplateMethods, MatchesJinja2) {
  EXPECT_EQ(
      R(R"~({{ s.upper() }}{{ s.split() }}{{ s.split('l') }}{{ s.split('l', 1) }}{{ s.rsplit('l', 1) }}{{ '  a  '.strip() }}|{{ 'xxaxx'.strip('x') }}{{ '  a  '.lstrip() }}|{{ '  a  '.rstrip() }}|)~"),
      R"~(HÉLLO WÖRLD['héllo', 'wörld']['hé', '', 'o wör', 'd']['hé', 'lo wörld']['héllo wör', 'd']a|aa  |  a|)~");
  EXPECT_EQ(
      R(R"~({{ s.startswith('hé') }}{{ s.endswith('x') }}{{ s.endswith(('d', 'x')) }}{{ s.find('l') }}{{ s.rfind('l') }}{{ s.find('zz') }}{{ s.count('l') }}{{ s.replace('l', 'L') }}{{ s.title() }}{{ s.capitalize() }}{{ 'a\nb\r\nc'.splitlines() }}{{ ','.join(['a', 'b']) }})~"),
      R"~(TrueFalseTrue29-13héLLo wörLdHéllo WörldHéllo wörld['a', 'b', 'c']a,b)~");
  EXPECT_EQ(
      R(R"~({{ '{} and {}'.format(1, 'b') }}{{ '{0}{1}{0}'.format('x', 'y') }}{{ '{a}-{b}'.format(a=1, b=2) }}{{ '{:>5}|{:<5}|{:^5}|{:05d}|{:.2f}|{:,}'.format('a', 'b', 'c', 42, 3.14159, 1234567) }}{{ '{!r}'.format('x') }}{{ '{{}}'.format() }}{{ '{0[a]}'.format(d) }})~"),
      R"~(1 and bxyx1-2    a|b    |  c  |00042|3.14|1,234,567'x'{}1)~");
  EXPECT_EQ(
      R(R"~({{ '{:.3}'.format(3.14159) }}{{ '{:e}'.format(12345.678) }}{{ '{:g}'.format(0.00001) }}{{ '{:%}'.format(0.25) }}{{ '{:x}{:X}{:o}{:b}'.format(255, 255, 8, 5) }}{{ '{:#x}'.format(255) }}{{ '{:+d}'.format(5) }}{{ '{: d}'.format(5) }}{{ '{:*^9}'.format('mid') }}{{ '{:10.3f}|'.format(2.5) }})~"),
      R"~(3.141.234568e+041e-0525.000000%ffFF101010xff+5 5***mid***     2.500|)~");
  EXPECT_EQ(
      R(R"~({{ '{}'.format(none) }}{{ '{}'.format([1]) }}{{ '{}'.format(1.0) }}{{ '{:>4}'.format(true) }}{{ '{:d}'.format(true) }}{{ '{0.a}'.format(d) }})~"),
      R"~(None[1]1.0   111)~");
  EXPECT_EQ(
      R(R"~({{ 'a,b,,c'.split(',') }}{{ '  a  b '.split() }}{{ 'a b c'.split(none, 1) }}{{ 'a b c'.rsplit(none, 1) }}{{ ''.split(',') }}{{ ''.split() }})~"),
      R"~(['a', 'b', '', 'c']['a', 'b']['a', 'b c']['a b', 'c'][''][])~");
  EXPECT_EQ(R(R"~({{ 'hello'.replace('', '-') }}{{ 'hello'.replace('l', '', 1) }})~"),
            R"~(-h-e-l-l-o-helo)~");
  EXPECT_EQ(
      R(R"~({{ 'Hello'.swapcase() }}{{ 'abc'.zfill(5) }}{{ '-7'.zfill(4) }}{{ 'ab'.ljust(4, '*') }}|{{ 'ab'.rjust(4) }}{{ 'a-b-c'.partition('-') }}{{ 'a-b-c'.rpartition('-') }}{{ 'prefix_x'.removeprefix('prefix_') }})~"),
      R"~(hELLO00abc-007ab**|  ab('a', '-', 'b-c')('a-b', '-', 'c')x)~");
  EXPECT_EQ(
      R(R"~({{ 'abc'.isalpha() }}{{ 'ab1'.isalnum() }}{{ '123'.isdigit() }}{{ ' \t'.isspace() }}{{ ''.isspace() }}{{ 'Ab'.istitle() }}{{ 'AB'.isupper() }}{{ 'ab'.islower() }})~"),
      R"~(TrueTrueTrueTrueFalseTrueTrueTrue)~");
  EXPECT_ERROR(R"~({{ s.index('zz') }})~", R"~(substring not found)~");
  EXPECT_ERROR(R"~({{ ','.join([1, 2]) }})~",
               R"~(sequence item 0: expected str instance, int found)~");
  EXPECT_ERROR(R"~({{ 'x'.split('') }})~", R"~(empty separator)~");
}

TEST(TemplateGlobals, MatchesJinja2) {
  EXPECT_EQ(
      R(R"~({{ range(5) }}{{ range(5)|list }}{{ range(1, 10, 3)|list }}{{ range(5)|length }}{{ range(3)[1] }}{{ range(10, 0, -3)|list }}{{ range(0) }})~"),
      R"~(range(0, 5)[0, 1, 2, 3, 4][1, 4, 7]51[10, 7, 4, 1]range(0, 0))~");
  EXPECT_ERROR(R"~({{ range(100001) }})~",
               R"~(Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).)~");
  EXPECT_EQ(R(R"~({{ dict(a=1, b=2) }}{{ dict([('x', 1)]) }}{{ dict(d, z=3) }})~"),
            R"~({'a': 1, 'b': 2}{'x': 1}{'a': 1, 'b': [1, 2], 'c': {'x': 'y'}, 'z': 3})~");
  EXPECT_ERROR(R"~({{ raise_exception('boom') }})~", R"~(boom)~");
  EXPECT_EQ(
      R(R"~({{ strftime_now('%Y-%m-%d %H:%M:%S %d %b %Y %B %A %a %j %p %I %y %m %-d %%') }})~"),
      R"~(2024-07-26 12:00:00 26 Jul 2024 July Friday Fri 208 PM 12 24 07 26 %)~");
  EXPECT_EQ(
      R(R"~({{ strftime_now('%c') }}|{{ strftime_now('%x %X') }}|{{ strftime_now('%U %W %w %u %G %V %e %D %F %T %R %h %n %t|%C %g') }})~"),
      R"~(Fri Jul 26 12:00:00 2024|07/26/24 12:00:00|29 30 5 5 2024 30 26 07/26/24 2024-07-26 12:00:00 12:00 Jul 
 	|20 24)~");
}

}  // namespace
}  // namespace stet

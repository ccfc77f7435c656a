#!/usr/bin/env python3
"""Render every chat template in ../shared/chat-templates with Python's Jinja2.

stet's chat-template engine (src/template) must reproduce these renderings
byte for byte; tests/template/golden_test.cc compares them.  Run by hand
when the template corpus or the conversations below change:

    python3 scripts/golden/make_chat_template_goldens.py \
        [--templates ../shared/chat-templates] [--out tests/golden/chat_templates]

and for stet's built-in templates (tests/golden/builtin_templates):

    python3 scripts/golden/make_chat_template_goldens.py \
        --templates src/template/builtin --out tests/golden/builtin_templates

The Environment mirrors HF transformers' apply_chat_template
(transformers/utils/chat_template_utils.py, _compile_jinja_template):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
extensions=[generation-tag extension, jinja2.ext.loopcontrols]), the `tojson`
filter replaced by json.dumps(x, ensure_ascii=False, indent=None,
separators=None, sort_keys=False), and the globals `raise_exception(msg)` and
`strftime_now(fmt)`.  The render call passes messages, tools (None when there
are none), documents=None, add_generation_prompt, and the special tokens.

Determinism: strftime_now formats a FIXED instant, 2024-07-26 12:00:00 (the
same default stet uses, RenderOptions::now_unix = 1721995200, read as UTC),
never the wall clock.

Each output file <template-name>.json holds
    {"source": ..., "template": "<file name>", "cases": [
        {"name", "context", "expected"}            rendered text, or
        {"name", "context", "error": true, "error_type", "error_message"}]}
`context` is exactly the keyword arguments given to Template.render, in order.
"""

import argparse
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

SOURCE = "python jinja2 %s via scripts/golden/make_chat_template_goldens.py" % jinja2.__version__
FIXED_NOW = datetime.datetime(2024, 7, 26, 12, 0, 0)
BOS, EOS = "<s>", "</s>"


class GenerationTag(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}` renders its body unchanged, as
    transformers' AssistantTracker does when no tracker is active."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_passthrough"), [], [], body).set_lineno(lineno)

    def _passthrough(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER1 = {"role": "user", "content": "What is the capital of France?"}
ASSISTANT1 = {"role": "assistant", "content": "The capital of France is Paris."}
USER2 = {"role": "user", "content": "And of Germany?"}

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}]


def tool_conversation(arguments, assistant_content):
    return [
        SYSTEM,
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": assistant_content, "tool_calls": [{
            "id": "call0A1b2",  # 9 alphanumerics: some templates insist
            "type": "function",
            "function": {"name": "get_weather", "arguments": arguments},
        }]},
        {"role": "tool", "tool_call_id": "call0A1b2", "name": "get_weather",
         "content": "{\"temperature\": 22, \"unit\": \"celsius\"}"},
    ]


def cases_for(source):
    """The conversations rendered with one template: (name, messages, tools, agp, extra)."""
    cases = [
        ("system_user_gen", [SYSTEM, USER1], None, True, {}),
        ("system_user_nogen", [SYSTEM, USER1], None, False, {}),
        ("user_only_gen", [USER1], None, True, {}),
        ("multi_turn_gen", [USER1, ASSISTANT1, USER2], None, True, {}),
        ("multi_turn_end_assistant", [SYSTEM, USER1, ASSISTANT1], None, False, {}),
        ("unicode", [
            {"role": "system", "content": "Réponds en français, s'il te plaît. \"Quotes\" & <tags>"},
            {"role": "user", "content": "Grüße! 你好，世界 🌍🚀 — naïve café\tTab\nNew line"},
            {"role": "assistant", "content": "Bonjour ! 😀 ✓"},
            {"role": "user", "content": "Ещё раз, пожалуйста 🙏"},
        ], None, True, {}),
        ("content_parts", [
            {"role": "user", "content": [{"type": "text", "text": "Describe the weather."}]},
        ], None, True, {}),
        ("whitespace_and_braces", [
            {"role": "system", "content": "  \n Be concise.\n\n  "},
            {"role": "user", "content": "Echo {{ braces }} and {% tags %} and {# this #} literally.  "},
        ], None, True, {}),
        ("reasoning", [
            USER1,
            {"role": "assistant", "content": "The capital of France is Paris.",
             "reasoning_content": "The user asks about France. Its capital is Paris."},
            USER2,
        ], None, True, {}),
    ]
    if "tools" in source:
        cases.append(("tools_openai", tool_conversation(
            "{\"location\": \"Paris\", \"unit\": \"celsius\"}", None), TOOLS, True, {}))
        cases.append(("tools_dict_args", tool_conversation(
            {"location": "Paris", "unit": "celsius"}, ""), TOOLS, True, {}))
    if "tools" in source:
        cases.append(("parallel_tool_calls", [
            {"role": "user", "content": "Weather in Paris and Berlin?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call0A1b2", "type": "function",
                 "function": {"name": "get_weather", "arguments": {"location": "Paris"}}},
                {"id": "call3C4d5", "type": "function",
                 "function": {"name": "get_weather", "arguments": {"location": "Berlin", "unit": "celsius"}}},
            ]},
            {"role": "tool", "tool_call_id": "call0A1b2", "name": "get_weather", "content": "22"},
            {"role": "tool", "tool_call_id": "call3C4d5", "name": "get_weather", "content": "18"},
            {"role": "assistant", "content": "Paris: 22°C, Berlin: 18°C."},
        ], TOOLS, False, {}))
    if "reasoning_effort" in source:
        cases.append(("reasoning_effort_high", [SYSTEM, USER1], None, True, {"reasoning_effort": "high"}))
    if "enable_thinking" in source:
        cases.append(("thinking_disabled", [SYSTEM, USER1], None, True, {"enable_thinking": False}))
    return cases


def render_template(env, name, source):
    out = {"source": SOURCE, "template": name, "cases": []}
    try:
        template = env.from_string(source)
        compile_error = None
    except Exception as e:  # noqa: BLE001 -- any failure is recorded, not raised
        template, compile_error = None, e
    for case_name, messages, tools, agp, extra in cases_for(source):
        context = {"messages": messages, "tools": tools, "documents": None,
                   "add_generation_prompt": agp, "bos_token": BOS, "eos_token": EOS}
        context.update(extra)
        case = {"name": case_name, "context": context}
        try:
            if compile_error is not None:
                raise compile_error
            case["expected"] = template.render(**context)
        except Exception as e:  # noqa: BLE001
            case["error"] = True
            case["error_type"] = type(e).__name__
            case["error_message"] = str(e)
        out["cases"].append(case)
    return out


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--templates", default=os.path.join(root, "..", "shared", "chat-templates"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "golden", "chat_templates"))
    args = ap.parse_args()
    if jinja2.__version__ != "3.1.6":
        print("warning: goldens were made with jinja2 3.1.6, this is %s" % jinja2.__version__,
              file=sys.stderr)
    env = make_env()
    os.makedirs(args.out, exist_ok=True)
    names = sorted(f for f in os.listdir(args.templates) if f.endswith(".jinja"))
    for name in names:
        with open(os.path.join(args.templates, name), encoding="utf-8", newline="") as f:
            source = f.read()
        result = render_template(env, name, source)
        stem = name[: -len(".jinja")]
        with open(os.path.join(args.out, stem + ".json"), "w", encoding="utf-8", newline="\n") as f:
            json.dump(result, f, ensure_ascii=False, indent=1)
            f.write("\n")
        errors = sum(1 for c in result["cases"] if c.get("error"))
        print("%-60s %d cases, %d errors" % (stem, len(result["cases"]), errors))
    print("%d templates" % len(names))


if __name__ == "__main__":
    main()

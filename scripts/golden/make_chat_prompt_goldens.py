#!/usr/bin/env python3
"""Render a chat request's options with Python's Jinja2: the expected output of
stet's ChatPrompt::Render (src/server/openai/chat_prompt.cc) for
chat_template_kwargs (per request, over the server's --chat-template-kwargs),
add_generation_prompt, continue_final_message and the template clock.

tests/server/chat_prompt_test.cc compares stet's renders with these byte for
byte.  Run by hand when the cases below change:

    python3 scripts/golden/make_chat_prompt_goldens.py \
        [--templates ../shared/chat-templates] [--out tests/golden/chat_prompt/options.json]

The Jinja2 environment is make_chat_template_goldens.py's (transformers'
apply_chat_template), with strftime_now reading each case's clock.  The
context is what vLLM and llama.cpp pass: messages, tools, documents=None,
add_generation_prompt (false under continue_final_message), bos_token "<s>",
eos_token "</s>" (stories260K's, the tokenizer the test loads), date_string =
the clock as "%d %b %Y" (llama.cpp's variable for Llama 3.x), then the
server's kwargs, then the request's.  continue_final_message cuts the render
after the final message as transformers' apply_chat_template does
(transformers/utils/chat_template_utils.py, written out in continue_final()
below), except that a blank final message is an error (transformers would
keep the end of turn it cannot find).

Each case: {"name", "template": {"shared"|"builtin"|"inline": ...}, "messages",
"tools", "default_kwargs", "options": {"chat_template_kwargs",
"add_generation_prompt", "continue_final_message", "now_unix"}} and
"expected" (the text) or "error": true.
"""

import argparse
import calendar
import datetime
import json
import os
import sys

import jinja2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_chat_template_goldens as base  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = "python jinja2 %s via scripts/golden/make_chat_prompt_goldens.py" % jinja2.__version__
CLOCK = calendar.timegm((2031, 2, 3, 4, 5, 6))  # 2031-02-03T04:05:06Z
FIXED = 1721995200  # ChatTemplateOptions' default instant, 2024-07-26T12:00:00Z

SYSTEM, USER1, ASSISTANT1 = base.SYSTEM, base.USER1, base.ASSISTANT1
PREFILL = {"role": "assistant", "content": "The capital of France is"}


def case(name, template, messages, tools=None, default_kwargs=None, kwargs=None, agp=True,
         cfm=False, now=CLOCK):
    return {"name": name, "template": template, "messages": messages, "tools": tools,
            "default_kwargs": default_kwargs,
            "options": {"chat_template_kwargs": kwargs, "add_generation_prompt": agp,
                        "continue_final_message": cfm, "now_unix": now}}


def cases():
    qwen3 = {"shared": "Qwen-Qwen3-0.6B.jinja"}
    llama31 = {"shared": "meta-llama-Llama-3.1-8B-Instruct.jinja"}
    return [
        case("qwen3_thinking_off", qwen3, [SYSTEM, USER1], kwargs={"enable_thinking": False}),
        case("qwen3_thinking_default", qwen3, [SYSTEM, USER1]),
        case("qwen3_thinking_off_by_server", qwen3, [SYSTEM, USER1],
             default_kwargs={"enable_thinking": False}),
        case("qwen3_request_overrides_server", qwen3, [SYSTEM, USER1],
             default_kwargs={"enable_thinking": False}, kwargs={"enable_thinking": True}),
        case("qwen3_no_generation_prompt", qwen3, [SYSTEM, USER1], kwargs={"enable_thinking": False},
             agp=False),
        case("qwen3_prefill", qwen3, [USER1, PREFILL], agp=False, cfm=True),
        case("llama31_today_from_clock", llama31, [SYSTEM, USER1]),
        case("llama31_fixed_instant", llama31, [SYSTEM, USER1], now=FIXED),
        case("llama31_date_string_kwarg", llama31, [SYSTEM, USER1],
             kwargs={"date_string": "01 Jan 2000"}),
        case("llama32_strftime_now", {"shared": "meta-llama-Llama-3.2-3B-Instruct.jinja"},
             [SYSTEM, USER1]),
        case("mistral_small_strftime_now", {"shared": "Mistral-Small-3.2-24B-Instruct-2506.jinja"},
             [USER1]),
        case("granite_strftime_now", {"shared": "ibm-granite-granite-3.3-2B-Instruct.jinja"}, [USER1]),
        case("llama3_builtin_tools_clock", {"builtin": "llama3"}, [USER1], tools=base.TOOLS),
        case("gemma_builtin_prefill_trimmed", {"builtin": "gemma"},
             [USER1, {"role": "assistant", "content": "  The capital of France is  "}], agp=False,
             cfm=True),
        case("chatml_builtin_prefill_user", {"builtin": "chatml"},
             [SYSTEM, {"role": "user", "content": "Complete: once upon"}], agp=False, cfm=True),
        case("mistral_builtin_prefill", {"builtin": "mistral"}, [USER1, PREFILL], agp=False, cfm=True),
        case("kwargs_any_json", {"inline": "{{ flags | tojson }} {{ level * 2 }} {{ name }}"},
             [USER1], kwargs={"flags": {"a": [1, 2.5, None, True]}, "level": 21, "name": "x"}),
        case("prefill_not_in_render", {"inline": "{% for m in messages %}{{ m.role }}{% endfor %}"},
             [USER1, PREFILL], agp=False, cfm=True),
        case("prefill_blank", {"builtin": "chatml"}, [USER1, {"role": "assistant", "content": " "}],
             agp=False, cfm=True),
    ]


def continue_final(rendered, final):
    """transformers' apply_chat_template(continue_final_message=True) after the render."""
    if not final.strip():
        raise ValueError("blank final message")
    if final.strip() not in rendered:
        raise ValueError("the final message does not appear in the render")
    loc = rendered.rindex(final.strip())
    if rendered[loc: loc + len(final.lstrip())] == final:
        return rendered[: loc + len(final.lstrip())]
    return rendered[: loc + len(final.strip())]


def render(c, templates_dir):
    t = c["template"]
    if "shared" in t:
        with open(os.path.join(templates_dir, t["shared"]), encoding="utf-8", newline="") as f:
            source = f.read()
    elif "builtin" in t:
        path = os.path.join(ROOT, "src", "template", "builtin", t["builtin"] + ".jinja")
        with open(path, encoding="utf-8", newline="") as f:
            source = f.read()
    else:
        source = t["inline"]
    o = c["options"]
    now = datetime.datetime.fromtimestamp(o["now_unix"], datetime.timezone.utc).replace(tzinfo=None)
    env = base.make_env()
    env.globals["strftime_now"] = now.strftime
    context = {"messages": c["messages"], "tools": c["tools"], "documents": None,
               "add_generation_prompt": o["add_generation_prompt"] and not o["continue_final_message"],
               "bos_token": "<s>", "eos_token": "</s>", "date_string": now.strftime("%d %b %Y")}
    context.update(c["default_kwargs"] or {})
    context.update(o["chat_template_kwargs"] or {})
    text = env.from_string(source).render(**context)
    if o["continue_final_message"]:
        text = continue_final(text, c["messages"][-1]["content"])
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--templates", default=os.path.join(ROOT, "..", "shared", "chat-templates"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "golden", "chat_prompt", "options.json"))
    args = ap.parse_args()
    out = {"source": SOURCE, "cases": []}
    for c in cases():
        try:
            c["expected"] = render(c, args.templates)
        except Exception as e:  # noqa: BLE001 -- recorded, not raised
            c["error"] = True
            c["error_message"] = "%s: %s" % (type(e).__name__, e)
        out["cases"].append(c)
        print("%-36s %s" % (c["name"], "error" if c.get("error") else "%d bytes" % len(c["expected"])))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

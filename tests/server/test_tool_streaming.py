"""Streaming with tools on a real model (SmolLM2-135M-Instruct, Q4_1; its
template teaches the generic JSON call format), with the openai package's
own streaming clients: content streams token by token while the answer cannot
be a call; a forced call streams as OpenAI streams one (index, id, type and
name first with arguments "", then the arguments in pieces, finish_reason
"tool_calls"); the folded stream equals the non-streamed answer byte for byte
(same seed); chat.completions.stream's final completion and the Responses
API's function_call_arguments.delta events agree with it."""
import unittest

import stet_server as S

S.require_openai()

SMOL = S.smollm2_path()
PARAMS = {"type": "object", "properties": {"location": {"type": "string", "maxLength": 12},
                                           "days": {"type": "integer"}},
          "required": ["location", "days"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                           "parameters": PARAMS}}]
ASK = [{"role": "user", "content": "What is the weather in Paris for the next 3 days?"}]
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def fold(chunks):
    """The chat stream folded by hand: content, calls by index, finish_reason."""
    content, calls, finish = "", {}, None
    for c in chunks:
        if not c.choices:
            continue
        ch = c.choices[0]
        d = ch.delta
        content += d.content or ""
        for t in d.tool_calls or []:
            call = calls.setdefault(t.index, {"id": None, "name": None, "arguments": ""})
            call["id"] = call["id"] or t.id
            if t.function is not None:
                call["name"] = call["name"] or t.function.name
                call["arguments"] += t.function.arguments or ""
        finish = ch.finish_reason or finish
    return content or None, [calls[i] for i in sorted(calls)], finish


class ToolStreamingTest(S.ClientTest):
    MODEL = SMOL

    def chat(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("messages", ASK)
        kw.setdefault("tools", TOOLS)
        kw.setdefault("max_tokens", 80)
        kw.setdefault("temperature", 0.7)
        kw.setdefault("seed", 1)
        return self.client.chat.completions.create(**kw)

    def test_forced_call_streams_as_openai_does(self):
        whole = self.chat(tool_choice=NAMED, parallel_tool_calls=False)
        self.assertEqual(whole.choices[0].finish_reason, "tool_calls", whole)
        chunks = list(self.chat(tool_choice=NAMED, parallel_tool_calls=False, stream=True))
        deltas = [t for c in chunks if c.choices for t in (c.choices[0].delta.tool_calls or [])]
        head = deltas[0]
        self.assertEqual((head.index, head.type, head.function.name, head.function.arguments),
                         (0, "function", "get_weather", ""))
        self.assertTrue(head.id.startswith("call_"))
        self.assertGreaterEqual(len(deltas), 3, deltas)  # the arguments came in pieces
        self.assertTrue(all(d.id is None and d.function.name is None for d in deltas[1:]))
        content, calls, finish = fold(chunks)
        want = whole.choices[0].message
        self.assertEqual(content, want.content)
        self.assertEqual(calls, [{"id": t.id, "name": t.function.name, "arguments": t.function.arguments}
                                 for t in want.tool_calls])
        self.assertEqual(finish, "tool_calls")
        # The openai package's stream helper accumulates the same call.
        with self.client.chat.completions.stream(model=self.model, messages=ASK, tools=TOOLS,
                                                 tool_choice=NAMED, parallel_tool_calls=False,
                                                 max_tokens=80, temperature=0.7, seed=1) as s:
            for _ in s:
                pass
            final = s.get_final_completion()
        got = final.choices[0].message.tool_calls
        self.assertEqual([(t.id, t.function.name, t.function.arguments) for t in got],
                         [(t.id, t.function.name, t.function.arguments) for t in want.tool_calls])
        self.assertEqual(final.choices[0].finish_reason, "tool_calls")

    def test_auto_streams_text_that_cannot_be_a_call(self):
        whole = self.chat()
        m = whole.choices[0].message
        self.assertIsNone(m.tool_calls)
        self.assertFalse(m.content.lstrip().startswith(("{", "[")), m.content)  # prose, not a call
        chunks = list(self.chat(stream=True))
        pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
        self.assertGreater(len(pieces), 5)  # token by token, not held back to the end
        self.assertEqual(fold(chunks), (m.content, [], whole.choices[0].finish_reason))

    def test_responses_stream_call_arguments_in_pieces(self):
        tools = [{"type": "function", "name": "get_weather", "parameters": PARAMS}]
        kw = dict(model=self.model, input="Weather in Paris for 3 days?", tools=tools,
                  tool_choice={"type": "function", "name": "get_weather"}, max_output_tokens=80,
                  temperature=0.7, extra_body={"seed": 1})
        whole = self.client.responses.create(**kw)
        calls = [o for o in whole.output if o.type == "function_call"]
        self.assertEqual(len(calls), 1, whole.output)
        events = list(self.client.responses.create(stream=True, **kw))
        deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
        done = [e.arguments for e in events if e.type == "response.function_call_arguments.done"]
        self.assertGreaterEqual(len(deltas), 2)
        self.assertEqual("".join(deltas), calls[0].arguments)
        self.assertEqual(done, [calls[0].arguments])
        final = events[-1].response
        self.assertEqual([(o.type, getattr(o, "call_id", None), getattr(o, "arguments", None))
                          for o in final.output],
                         [(o.type, getattr(o, "call_id", None), getattr(o, "arguments", None))
                          for o in whole.output])


if __name__ == "__main__":
    unittest.main()

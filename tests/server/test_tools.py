"""Tool calls on a live server with the openai client, on stories260K (the
built-in ChatML fallback, tools listed in its system turn: the generic JSON format): an answer that is not a call comes back as
text, streamed with tools token by token (its first bytes cannot start a
call) and equal to the non-streamed text; tool_choice none leaves the answer unparsed and streamed
token by token; a tool round trip (call -> tool message -> answer) is
accepted; tool_choice required / named force a call (constrained decoding),
and naming an unknown function is a clear 400. The parser itself is
tested on the real templates' formats in tool_calls_test.cc."""
import unittest

import stet_server as S

S.require_openai()
import openai  # noqa: E402

STORIES = S.stories_path()
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                           "parameters": {"type": "object",
                                                          "properties": {"location": {"type": "string"}},
                                                          "required": ["location"]}}}]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


class ToolsTest(S.ClientTest):
    MODEL = STORIES

    def chat(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("messages", ASK)
        return self.client.chat.completions.create(**kw)

    def test_text_answer_with_tools_stays_text(self):
        r = self.chat(tools=TOOLS, max_tokens=30, temperature=0.8, seed=2, logprobs=True)
        m = r.choices[0].message
        self.assertIsNone(m.tool_calls)
        self.assertTrue(m.content)
        self.assertIn(r.choices[0].finish_reason, ("stop", "length"))
        # The fallback template lists the tools in its system turn (the generic JSON convention).
        status, prompt = self.srv.post("/apply-template", {"messages": ASK, "tools": TOOLS})
        self.assertEqual(status, 200, prompt)
        self.assertTrue(prompt["prompt"].startswith("<|im_start|>system\nFunctions you can call:\n"))
        self.assertIn('"name": "get_weather"', prompt["prompt"])
        chunks = list(self.chat(tools=TOOLS, max_tokens=30, temperature=0.8, seed=2, logprobs=True, stream=True))
        content = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
        self.assertGreater(len(content), 1)  # streamed: prose cannot be a JSON call
        self.assertEqual("".join(content), m.content)
        streamed_lps = [e.logprob for c in chunks if c.choices and c.choices[0].logprobs
                        for e in c.choices[0].logprobs.content]
        self.assertEqual(streamed_lps, [e.logprob for e in r.choices[0].logprobs.content])
        self.assertEqual(chunks[-1].choices[0].finish_reason, r.choices[0].finish_reason)
        # tool_choice none: nothing is parsed or held back.
        none = list(self.chat(tools=TOOLS, tool_choice="none", max_tokens=30, temperature=0.8, seed=2, stream=True))
        pieces = [c.choices[0].delta.content for c in none if c.choices and c.choices[0].delta.content]
        self.assertGreater(len(pieces), 1)
        self.assertEqual("".join(pieces), m.content)

    def test_tool_round_trip_is_accepted(self):
        msgs = ASK + [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"location\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 22}"}]
        r = self.chat(messages=msgs, tools=TOOLS, max_tokens=10, temperature=0, parallel_tool_calls=False)
        self.assertIsNotNone(r.choices[0].message.content)

    def test_required_and_named_force_a_call(self):
        # Constrained decoding (test_structured.py covers it on SmolLM2): the answer is a call in
        # the template's format, the generic JSON one here.
        tools = [{"type": "function", "function": {
            "name": "get_weather", "parameters": {"type": "object", "required": ["location"],
                                                  "properties": {"location": {"type": "string", "maxLength": 8}}}}}]
        for choice in ("required", {"type": "function", "function": {"name": "get_weather"}}):
            r = self.chat(tools=tools, tool_choice=choice, max_tokens=150, temperature=0.8, seed=3,
                          parallel_tool_calls=False)
            self.assertEqual(r.choices[0].finish_reason, "tool_calls", r)
            self.assertEqual(r.choices[0].message.tool_calls[0].function.name, "get_weather")
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}}, max_tokens=4)
        self.assertEqual(cm.exception.param, "tool_choice")
        self.assertIn("nope", str(cm.exception))
        with self.assertRaises(openai.BadRequestError):
            self.chat(tools=TOOLS, parallel_tool_calls="yes", max_tokens=4)


if __name__ == "__main__":
    unittest.main()

"""A model file without a chat template gets its family's built-in, live, with
the openai client: Gemma 3 270M (the Q4_K_M file people pull carries no
tokenizer.chat_template). The startup log, /v1/models and /tokenizer_info
name the built-in; the prompt is Gemma's turn format token for token; a chat
answers text (greedy); the answer ends at <end_of_turn>, which never leaks
into the content; tools are described in the first user turn and a forced
call comes back parsed as tool_calls (stet's generic JSON format); a tool
round trip renders as a user turn with the result.

This file is the pretrained (base) Gemma 3 270M, not the instruction-tuned
one: its <end_of_turn> embedding was never trained, so greedy decoding does
not end a turn by itself (llama.cpp's run of the same file in
tests/golden/gemma3 shows the same). The chat is therefore few-shot, as base
models are prompted, and the stop at <end_of_turn> is checked by making that
token the answer's first (logit_bias)."""
import json
import unittest

import stet_server as S

S.require_openai()

GEMMA = S.gemma3_path()
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                           "parameters": {"type": "object",
                                                          "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]
FEW_SHOT = [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "2+2 is 4."},
            {"role": "user", "content": "What color is the sky?"},
            {"role": "assistant", "content": "The sky is blue."},
            {"role": "user", "content": "What is the capital of France?"}]
BOS, START, END, NL, USER, MODEL = 2, 105, 106, 107, 2364, 4368  # Gemma 3's vocabulary


class GemmaBuiltinTest(S.ClientTest):
    MODEL = GEMMA

    def test_the_builtin_is_named(self):
        self.assertTrue(any("no chat template: using stet's built-in 'gemma'" in line for line in self.srv.lines()),
                        self.srv.lines())
        m = self.client.models.list().data[0]
        self.assertEqual(m.model_extra["chat_template"], {"builtin": True, "name": "gemma"})
        status, _, data = self.srv.http("GET", "/tokenizer_info")
        self.assertEqual(status, 200)
        info = json.loads(data)
        self.assertTrue(info["chat_template_fallback"])
        self.assertEqual(info["chat_template_builtin"], "gemma")
        self.assertIn("<start_of_turn>", info["chat_template"])

    def test_prompt_is_gemmas_turn_format(self):
        status, hi = self.srv.post("/tokenize", {"content": "Hi"})
        self.assertEqual(status, 200, hi)
        status, r = self.srv.post("/tokenize", {"messages": [{"role": "user", "content": "Hi"}]})
        self.assertEqual(status, 200, r)
        self.assertEqual(r["tokens"], [BOS, START, USER, NL] + hi["tokens"] + [END, NL, START, MODEL, NL])
        # A system message opens the first user turn (Gemma has no system role).
        status, r = self.srv.post("/apply-template", {"messages": [{"role": "system", "content": "Be brief."},
                                                                    {"role": "user", "content": "Hi"}]})
        self.assertEqual(r["prompt"], "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n")

    def test_chat_answers_text(self):
        r = self.client.chat.completions.create(model=self.model, messages=FEW_SHOT, temperature=0, max_tokens=12)
        text = r.choices[0].message.content
        self.assertTrue(text.strip())
        self.assertIn("Paris", text)
        for marker in ("<start_of_turn>", "<end_of_turn>", "<bos>"):
            self.assertNotIn(marker, text)

    def test_answer_stops_at_end_of_turn(self):
        kw = dict(model=self.model, messages=FEW_SHOT, temperature=0, max_tokens=12,
                  logit_bias={str(END): 100}, extra_body={"return_token_ids": True})
        r = self.client.chat.completions.create(**kw)
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertEqual(r.choices[0].message.content, "")
        self.assertEqual(r.choices[0].model_extra["token_ids"], [])  # the end of turn ends it, unshown
        chunks = list(self.client.chat.completions.create(stream=True, **kw))
        self.assertEqual([c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason],
                         ["stop"])

    def test_tools_in_the_first_user_turn_and_a_forced_call_parses(self):
        status, r = self.srv.post("/apply-template", {"messages": [{"role": "user", "content": "Weather in Paris?"}],
                                                       "tools": TOOLS})
        self.assertEqual(status, 200, r)
        self.assertTrue(r["prompt"].startswith("<bos><start_of_turn>user\nYou can call these functions"), r["prompt"])
        self.assertIn('"name": "get_weather"', r["prompt"])
        msgs = [{"role": "user", "content": "Weather in Paris?"}]
        r = self.client.chat.completions.create(model=self.model, messages=msgs, tools=TOOLS, tool_choice="required",
                                                temperature=0, max_tokens=60)
        calls = r.choices[0].message.tool_calls
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0].function.name, "get_weather")
        self.assertIsInstance(json.loads(calls[0].function.arguments)["city"], str)
        # The round trip: the call in history, its result in a user turn.
        msgs += [{"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in calls]},
                 {"role": "tool", "tool_call_id": calls[0].id, "name": "get_weather", "content": "22 C"}]
        status, r = self.srv.post("/apply-template", {"messages": msgs, "tools": TOOLS})
        self.assertEqual(status, 200, r)
        self.assertIn('<start_of_turn>model\n{"name": "get_weather", "arguments": ', r["prompt"])
        self.assertTrue(r["prompt"].endswith("<start_of_turn>user\nResult of get_weather:\n22 C<end_of_turn>\n"
                                             "<start_of_turn>model\n"), r["prompt"])


if __name__ == "__main__":
    unittest.main()

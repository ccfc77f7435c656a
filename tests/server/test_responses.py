"""POST /v1/responses with the official openai client (client.responses.create),
on stories260K: plain and streamed (the Responses event sequence, deltas that
concatenate to the text, a final response equal to the non-streamed one),
the same text as the equivalent chat request with the same seed, logprobs
through include, stet's seed and system_fingerprint, incomplete on
max_output_tokens, and clear 400s for what a stateless server cannot do or a
request gets wrong. Function tools: test_responses_tools.py."""
import json
import unittest

import stet_server as S

S.require_openai()
import openai  # noqa: E402

STORIES = S.stories_path()
ASK = "Tell me a story."


class ResponsesTest(S.ClientTest):
    MODEL = STORIES

    def create(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("input", ASK)
        return self.client.responses.create(**kw)

    def chat(self, messages, **kw):
        return self.client.chat.completions.create(model=self.model, messages=messages, **kw)

    def test_plain(self):
        r = self.create(max_output_tokens=30, temperature=0.8, extra_body={"seed": 3})
        self.assertTrue(r.id.startswith("resp_"))
        self.assertEqual(r.object, "response")
        self.assertIn(r.status, ("completed", "incomplete"))
        self.assertEqual(r.model, self.model)
        self.assertTrue(r.output_text)
        self.assertEqual(len(r.output), 1)
        msg = r.output[0]
        self.assertEqual((msg.type, msg.role), ("message", "assistant"))
        self.assertTrue(msg.id.startswith("msg_"))
        self.assertEqual(msg.content[0].type, "output_text")
        extra = r.model_extra
        self.assertTrue(extra["system_fingerprint"].startswith("fp_"))
        self.assertEqual(extra["seed"], 3)
        self.assertEqual(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens)
        self.assertLessEqual(r.usage.output_tokens, 30)
        self.assertEqual(r.max_output_tokens, 30)
        self.assertEqual(r.temperature, 0.8)
        self.assertFalse(r.store)
        # The same request, seed included, gives the same bytes.
        again = self.create(max_output_tokens=30, temperature=0.8, extra_body={"seed": 3})
        self.assertEqual(again.output_text, r.output_text)
        # It is the chat request with the same messages and seed.
        chat = self.chat([{"role": "user", "content": ASK}], max_tokens=30, temperature=0.8, seed=3)
        self.assertEqual(chat.choices[0].message.content, r.output_text)
        self.assertEqual(chat.usage.prompt_tokens, r.usage.input_tokens)
        # Without a seed the server picks one and reports it.
        picked = self.create(max_output_tokens=20, temperature=1.0)
        seed = picked.model_extra["seed"]
        self.assertEqual(self.create(max_output_tokens=20, temperature=1.0, extra_body={"seed": seed}).output_text,
                         picked.output_text)

    def test_instructions_and_message_items(self):
        items = [{"role": "user", "content": [{"type": "input_text", "text": "Once"},
                                              {"type": "input_text", "text": "upon a time"}]},
                 {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "there was"}]},
                 {"role": "user", "content": "a dog"}]
        r = self.create(input=items, instructions="Tell stories.", max_output_tokens=25, temperature=0,
                        extra_body={"seed": 1})
        self.assertEqual(r.instructions, "Tell stories.")
        chat = self.chat([{"role": "system", "content": "Tell stories."},
                          {"role": "user", "content": "Once\nupon a time"},
                          {"role": "assistant", "content": "there was"},
                          {"role": "user", "content": "a dog"}], max_tokens=25, temperature=0)
        self.assertEqual(r.output_text, chat.choices[0].message.content)
        self.assertEqual(r.usage.input_tokens, chat.usage.prompt_tokens)

    def test_incomplete_on_max_output_tokens(self):
        r = self.create(max_output_tokens=5, temperature=0, extra_body={"ignore_eos": True})
        self.assertEqual(r.status, "incomplete")
        self.assertEqual(r.incomplete_details.reason, "max_output_tokens")
        self.assertEqual(r.output[0].status, "incomplete")
        self.assertEqual(r.usage.output_tokens, 5)

    def test_logprobs(self):
        r = self.create(max_output_tokens=20, temperature=0.9, top_logprobs=3,
                        include=["message.output_text.logprobs"], extra_body={"seed": 12})
        lps = r.output[0].content[0].logprobs
        self.assertGreater(len(lps), 0)
        chat = self.chat([{"role": "user", "content": ASK}], max_tokens=20, temperature=0.9, seed=12,
                         logprobs=True, top_logprobs=3)
        content = chat.choices[0].logprobs.content
        self.assertEqual([e.logprob for e in lps], [e.logprob for e in content])
        self.assertEqual([e.token for e in lps], [e.token for e in content])
        for e in lps:
            self.assertEqual(len(e.top_logprobs), 3)
        self.assertEqual(bytes(b for e in lps for b in e.bytes).decode("utf-8", "replace"), r.output_text)
        plain = self.create(max_output_tokens=20, temperature=0.9, extra_body={"seed": 12})
        self.assertIsNone(plain.output[0].content[0].logprobs)
        self.assertEqual(plain.output_text, r.output_text)

    def test_stream(self):
        kw = dict(max_output_tokens=30, temperature=0.7, include=["message.output_text.logprobs"], top_logprobs=2,
                  extra_body={"seed": 9})
        full = self.create(**kw)
        events = list(self.create(stream=True, **kw))
        types = [e.type for e in events]
        self.assertEqual(types[:4], ["response.created", "response.in_progress", "response.output_item.added",
                                     "response.content_part.added"])
        final = "response.completed" if full.status == "completed" else "response.incomplete"
        self.assertEqual(types[-4:], ["response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", final])
        self.assertTrue(all(t == "response.output_text.delta" for t in types[4:-4]))
        self.assertEqual([e.sequence_number for e in events], list(range(len(events))))
        self.assertEqual(events[0].response.status, "in_progress")
        deltas = [e for e in events if e.type == "response.output_text.delta"]
        text = "".join(e.delta for e in deltas)
        self.assertEqual(text, full.output_text)
        self.assertEqual(events[-4].text, full.output_text)
        self.assertEqual([lp.logprob for e in deltas for lp in e.logprobs],
                         [lp.logprob for lp in full.output[0].content[0].logprobs])
        done = events[-1].response
        self.assertEqual(done.output_text, full.output_text)
        self.assertEqual((done.usage.input_tokens, done.usage.output_tokens),
                         (full.usage.input_tokens, full.usage.output_tokens))  # cached_tokens may differ
        self.assertEqual(done.status, full.status)
        self.assertEqual(done.model_extra["system_fingerprint"], full.model_extra["system_fingerprint"])
        self.assertEqual(done.model_extra["seed"], 9)
        item_ids = {e.item_id for e in deltas}
        self.assertEqual(item_ids, {done.output[0].id})
        # Raw: typed SSE events, no [DONE].
        status, _, data = self.srv.http("POST", "/v1/responses", {"model": self.model, "input": ASK, "stream": True,
                                                                  "max_output_tokens": 3})
        self.assertEqual(status, 200)
        raw = data.decode()
        self.assertTrue(raw.startswith("event: response.created\ndata: {"), raw[:80])
        self.assertNotIn("[DONE]", raw)

    def test_refusals_are_clear_400s(self):
        cases = [({"previous_response_id": "resp_abc"}, "previous_response_id"),
                 ({"store": True}, "store"),
                 ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
                 ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools[0].name"),
                 ({"tool_choice": "required"}, "tool_choice"),
                 ({"tool_choice": {"type": "function"}, "tools": [{"type": "function", "name": "f"}]},
                  "tool_choice.name"),
                 ({"text": {"format": {"type": "json_schema", "name": "x",
                                       "schema": {"oneOf": [{"type": "number"}, {"type": "integer"}]}}}},
                  "text.format.schema"),
                 ({"text": {"format": {"type": "json_schema", "name": "x",
                                       "schema": {"type": "object", "patternProperties": {}}}}},
                  "text.format.schema"),
                 ({"text": {"format": {"type": "yaml"}}}, "text.format.type"),
                 ({"include": ["reasoning.encrypted_content"]}, "include"),
                 ({"max_output_tokens": 0}, "max_output_tokens"),
                 ({"input": [{"type": "function_call_output", "output": "{}"}]}, "input[0].call_id"),
                 ({"input": [{"type": "function_call", "call_id": "c", "name": "f"}]}, "input[0].arguments"),
                 ({"input": [{"type": "reasoning", "summary": []}]}, "input"),
                 ({"input": [{"type": "reasoning", "summary": [], "encrypted_content": "x"},
                            {"role": "user", "content": ASK}]},
                  "input[0].encrypted_content"),
                 ({"input": [{"type": "reasoning", "content": [{"type": "reasoning_text"}]},
                            {"role": "user", "content": ASK}]},
                  "input[0].content[0].text"),
                 ({"input": [{"type": "computer_call"}]}, "input[0].type"),
                 ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
                  "input[0].content[0].type"),
                 ({"input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
                 ({"input": []}, "input"),
                 ({"temperature": 3}, "temperature"),
                 ({"top_logprobs": 21, "include": ["message.output_text.logprobs"]}, "top_logprobs")]
        for extra, param in cases:
            body = {"model": self.model, "input": ASK, "max_output_tokens": 4}
            body.update(extra)
            status, out = self.srv.post("/v1/responses", body)
            self.assertEqual(status, 400, (extra, out))
            self.assertEqual(out["error"]["param"], param, out)
            self.assertEqual(out["error"]["type"], "invalid_request_error")
        with self.assertRaises(openai.BadRequestError) as cm:
            self.create(previous_response_id="resp_x")
        self.assertIn("stores no responses", str(cm.exception))
        with self.assertRaises(openai.NotFoundError):
            self.create(model="gpt-4o")
        status, out = self.srv.post("/v1/responses", {"model": self.model})
        self.assertEqual((status, out["error"]["param"]), (400, "input"))
        # Accepted as OpenAI spells the defaults.
        r = self.create(max_output_tokens=4, store=False, tool_choice="auto", tools=[], text={"format": {"type": "text"}})
        self.assertTrue(r.output_text is not None)
        self.assertTrue(self.srv.healthy())


if __name__ == "__main__":
    unittest.main()

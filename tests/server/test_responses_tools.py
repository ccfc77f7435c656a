"""Function tools on POST /v1/responses with the official openai client, on
stories260K (ChatML fallback: the generic JSON tool-call format). tool_choice
"required" or a named function forces a call by constrained decoding, so even
this tiny model emits a valid one: it comes back as a function_call item whose
ids derive from the seed (the same ids as the equivalent chat request's
tool_calls); the call and its function_call_output go back as input items and
render the same prompt as chat's assistant tool_calls and tool message; the
streamed events are the ones the client parses (output_item.added,
function_call_arguments.delta / .done, output_item.done, response.completed)
and rebuild the non-streamed response; an answer that is not a call stays
text; and a `stet serve --record` store holds /v1/responses requests."""
import json
import os
import sqlite3
import subprocess
import tempfile
import threading
import unittest
from concurrent.futures import ThreadPoolExecutor

import stet_server as S

S.require_openai()
import openai  # noqa: E402

STORIES = S.stories_path()
ASK = "What is the weather in Paris?"
PARAMS = {"type": "object", "required": ["location"],
          "properties": {"location": {"type": "string", "maxLength": 8}}}
TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather in a city.",
          "parameters": PARAMS, "strict": True}]
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                                "parameters": PARAMS}}]
FORCED = dict(tools=TOOLS, tool_choice="required", parallel_tool_calls=False, max_output_tokens=150,
              temperature=0.8, extra_body={"seed": 3})


class ResponsesToolsTest(S.ClientTest):
    MODEL = STORIES

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stet-resp-rec-")
        cls.db = os.path.join(cls.tmp, "records.db")
        cls.SERVE_ARGS = ("--threads", "2", "--record", cls.db)
        super().setUpClass()

    def create(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("input", ASK)
        return self.client.responses.create(**kw)

    def chat(self, messages, **kw):
        return self.client.chat.completions.create(model=self.model, messages=messages, **kw)

    def check_call(self, item):
        self.assertEqual((item.type, item.name, item.status), ("function_call", "get_weather", "completed"))
        self.assertRegex(item.call_id, r"^call_[0-9a-f]{24}$")
        self.assertEqual(item.id, "fc_" + item.call_id[5:])
        args = json.loads(item.arguments)
        self.assertIsInstance(args["location"], str)
        self.assertLessEqual(len(args["location"]), 8)

    def test_forced_call_is_a_function_call_item(self):
        r = self.create(**FORCED)
        self.assertEqual(r.status, "completed")
        self.assertEqual(len(r.output), 1, r.output)
        call = r.output[0]
        self.check_call(call)
        self.assertEqual(r.tools[0].name, "get_weather")
        self.assertEqual((r.tool_choice, r.parallel_tool_calls), ("required", False))
        self.assertEqual(r.output_text, "")
        # Same request, same bytes: the ids derive from the seed.
        again = self.create(**FORCED)
        self.assertEqual(again.output[0].model_dump(), call.model_dump())
        # The equivalent chat request makes the same call with the same id.
        chat = self.chat([{"role": "user", "content": ASK}], tools=CHAT_TOOLS, tool_choice="required",
                         parallel_tool_calls=False, max_tokens=150, temperature=0.8, seed=3)
        tc = chat.choices[0].message.tool_calls[0]
        self.assertEqual((tc.id, tc.function.name, tc.function.arguments),
                         (call.call_id, call.name, call.arguments))
        self.assertEqual(chat.usage.prompt_tokens, r.usage.input_tokens)
        # A call cut short by max_output_tokens is not a call: it comes back as text, never an error.
        cut = self.create(**dict(FORCED, max_output_tokens=4))
        self.assertEqual((cut.status, [o.type for o in cut.output]), ("incomplete", ["message"]))
        self.assertTrue(cut.output_text)
        self.assertNotIn("function_call", json.dumps(cut.model_dump()["output"]))
        events = list(self.create(stream=True, **dict(FORCED, max_output_tokens=4)))
        self.assertEqual(events[-1].type, "response.incomplete")
        self.assertEqual(events[-1].response.output_text, cut.output_text)
        # A named function, as the Responses API spells it.
        named = self.create(**dict(FORCED, tool_choice={"type": "function", "name": "get_weather"}))
        self.check_call(named.output[0])
        self.assertEqual(named.tool_choice.name, "get_weather")

    def test_round_trip(self):
        first = self.create(**FORCED)
        call = first.output[0]
        # What a client does: append the output items and the function's result.
        items = [{"role": "user", "content": ASK}] + [o.model_dump(exclude_none=True) for o in first.output]
        items.append({"type": "function_call_output", "call_id": call.call_id, "output": "{\"temperature\": 22}"})
        r = self.create(input=items, tools=TOOLS, max_output_tokens=20, temperature=0, extra_body={"seed": 5})
        self.assertIn(r.status, ("completed", "incomplete"))
        # The items render as chat's assistant tool_calls and tool message.
        messages = [{"role": "user", "content": ASK},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": call.call_id, "type": "function",
                         "function": {"name": call.name, "arguments": call.arguments}}]},
                    {"role": "tool", "tool_call_id": call.call_id, "name": "get_weather",
                     "content": "{\"temperature\": 22}"}]
        chat = self.chat(messages, tools=CHAT_TOOLS, max_tokens=20, temperature=0, seed=5)
        self.assertEqual(r.usage.input_tokens, chat.usage.prompt_tokens)
        m = chat.choices[0].message
        if m.tool_calls:  # the answer parsed as a call on both endpoints
            self.assertEqual(r.output[-1].call_id, m.tool_calls[0].id)
        else:
            self.assertEqual(r.output_text, m.content)
        # A text answer with tools offered stays text (nothing forces a call).
        text = self.create(tools=TOOLS, max_output_tokens=25, temperature=0.9, extra_body={"seed": 2})
        self.assertEqual([o.type for o in text.output], ["message"])
        self.assertTrue(text.output_text)

    def test_stream_with_a_tool(self):
        full = self.create(**FORCED)
        events = list(self.create(stream=True, **FORCED))
        types = [e.type for e in events]
        # The arguments in pieces, as OpenAI streams them.
        n = types.count("response.function_call_arguments.delta")
        self.assertGreaterEqual(n, 2)
        self.assertEqual(types, ["response.created", "response.in_progress", "response.output_item.added"]
                         + ["response.function_call_arguments.delta"] * n
                         + ["response.function_call_arguments.done", "response.output_item.done",
                            "response.completed"])
        self.assertEqual([e.sequence_number for e in events], list(range(len(events))))
        added, done, item_done, completed = events[2], events[-3], events[-2], events[-1]
        deltas = events[3:3 + n]
        self.assertEqual((added.item.type, added.item.status, added.item.arguments),
                         ("function_call", "in_progress", ""))
        self.assertEqual(added.item.call_id, full.output[0].call_id)
        self.assertEqual({d.item_id for d in deltas}, {full.output[0].id})
        self.assertEqual("".join(d.delta for d in deltas), full.output[0].arguments)
        self.assertEqual(done.arguments, full.output[0].arguments)
        self.assertEqual(item_done.item.model_dump(), full.output[0].model_dump())
        self.assertEqual([o.model_dump() for o in completed.response.output],
                         [o.model_dump() for o in full.output])
        # The client's higher-level stream helper accumulates the same call.
        with self.client.responses.stream(model=self.model, input=ASK, **FORCED) as st:
            for _ in st:
                pass
            final = st.get_final_response()
        self.assertEqual((final.output[0].call_id, final.output[0].arguments),
                         (full.output[0].call_id, full.output[0].arguments))
        # Tools offered, text answered: prose cannot be a call, so the message streams token
        # by token; the .done events carry its logprobs.
        kw = dict(tools=TOOLS, max_output_tokens=25, temperature=0.9, extra_body={"seed": 2},
                  include=["message.output_text.logprobs"], top_logprobs=1)
        text = self.create(**kw)
        events = list(self.create(stream=True, **kw))
        types = [e.type for e in events]
        n = types.count("response.output_text.delta")
        self.assertGreater(n, 1)
        self.assertEqual(types[2:], ["response.output_item.added", "response.content_part.added"]
                         + ["response.output_text.delta"] * n
                         + ["response.output_text.done", "response.content_part.done",
                            "response.output_item.done",
                            "response.completed" if text.status == "completed" else "response.incomplete"])
        self.assertEqual([e.sequence_number for e in events], list(range(len(events))))
        self.assertEqual("".join(e.delta for e in events[4:4 + n]), text.output_text)
        done = events[4 + n]
        self.assertEqual([lp.logprob for lp in done.logprobs],
                         [lp.logprob for lp in text.output[0].content[0].logprobs])

    def test_calls_under_load_equal_calls_alone(self):
        # Forced calls (constrained decoding) and text answers with tools, streamed and not,
        # sent all at once beside plain chat traffic: each the same bytes as alone.
        def items(output):  # a message's id is the response's (new per request); a call's is the seed's
            return json.dumps([o.model_dump(exclude={"id"} if o.type == "message" else None) for o in output],
                              sort_keys=True)

        def one(i):
            kw = dict(FORCED, extra_body={"seed": 100 + i})
            if i % 3 == 2:
                kw = dict(tools=TOOLS, max_output_tokens=20 + i, temperature=0.9, extra_body={"seed": i})
            if i % 2:
                done = [e for e in self.create(stream=True, **kw) if e.type in ("response.completed",
                                                                                "response.incomplete")]
                return items(done[0].response.output)
            return items(self.create(**kw).output)

        def noise(i):
            return self.chat([{"role": "user", "content": "Once upon a time"}], max_tokens=40 + i,
                             temperature=0.7, seed=i).choices[0].message.content

        alone = [one(i) for i in range(9)]
        self.assertTrue(any("function_call" in a for a in alone) and any('"message"' in a for a in alone))
        barrier = threading.Barrier(17)

        def together(job):
            barrier.wait()
            return job()

        jobs = [lambda i=i: one(i) for i in range(9)] + [lambda i=i: noise(i) for i in range(8)]
        with ThreadPoolExecutor(max_workers=17) as pool:
            out = list(pool.map(together, jobs))
        self.assertEqual(out[:9], alone)
        # They did run together (the engine's high-water mark; every other test here is serial).
        self.assertGreater(self.srv.metrics()[("stet_running_sequences_max", frozenset())], 2)

    def test_forced_call_with_a_text_format(self):
        # The forced call is this turn's output; text.format is for text turns.
        body = {"model": self.model, "input": ASK, "seed": 3,
                **{k: v for k, v in FORCED.items() if k != "extra_body"},
                "text": {"format": {"type": "json_object"}}}
        status, out = self.srv.post("/v1/responses", body)
        self.assertEqual(status, 200, out)
        self.assertIn("function_call", [item["type"] for item in out["output"]], out)

    def test_refusals(self):
        cases = [({"tools": TOOLS, "tool_choice": {"type": "function", "name": "nope"}}, "tool_choice"),
                 ({"tools": [{"type": "function", "name": ""}]}, "tools[0].name"),
                 ({"tools": [{"type": "function", "name": "f", "parameters": "x"}]}, "tools[0].parameters"),
                 ({"input": [{"type": "function_call_output", "call_id": "c", "output": 3}]}, "input[0].output")]
        for extra, param in cases:
            body = {"model": self.model, "input": ASK, "max_output_tokens": 4}
            body.update(extra)
            status, out = self.srv.post("/v1/responses", body)
            self.assertEqual(status, 400, (extra, out))
            self.assertEqual(out["error"]["param"], param, out)
        with self.assertRaises(openai.BadRequestError):
            self.create(tools=[{"type": "file_search", "vector_store_ids": ["x"]}])

    def test_recorded(self):
        r = self.create(**FORCED)
        con = sqlite3.connect(self.db)
        try:
            row = con.execute("SELECT record FROM records WHERE id = ?", (r.id,)).fetchone()
        finally:
            con.close()
        self.assertIsNotNone(row, "no record of " + r.id)
        rec = json.loads(row[0])
        self.assertEqual((rec["endpoint"], rec["seed"]), ("/v1/responses", 3))
        self.assertEqual(rec["request"]["tools"], TOOLS)
        self.assertEqual(len(rec["choices"]), 1)
        self.assertIn("get_weather", rec["choices"][0]["text"])  # the model's raw call
        self.assertTrue(rec["rendered_prompt"])
        text = self.create(max_output_tokens=12, temperature=0.9, include=["message.output_text.logprobs"],
                           top_logprobs=2, extra_body={"seed": 8})
        # stet replay re-sends each record to /v1/responses and compares token ids and logprobs.
        for rid in (r.id, text.id):
            out = subprocess.run([S.stet_binary(), "replay", self.db, "--endpoint", self.srv.url, "--id", rid],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertIn("identical", out.stdout + out.stderr)
        # The replay compares what it says it compares: a record whose tokens were changed diverges.
        con = sqlite3.connect(self.db)
        try:
            row = con.execute("SELECT record FROM records WHERE id = ?", (text.id,)).fetchone()
            rec = json.loads(row[0])
            rec["choices"][0]["token_ids"][0] += 1
            con.execute("UPDATE records SET record = ? WHERE id = ?", (json.dumps(rec), text.id))
            con.commit()
        finally:
            con.close()
        out = subprocess.run([S.stet_binary(), "replay", self.db, "--endpoint", self.srv.url, "--id", text.id],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)


if __name__ == "__main__":
    unittest.main()

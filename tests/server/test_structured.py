"""Structured outputs on a real model (SmolLM2-135M-Instruct, Q4_1): every
constrained output parses and validates against its schema (Python
jsonschema), on /v1/chat/completions, /v1/completions (response_format and
llama.cpp's GBNF `grammar`) and /v1/responses (text.format); tool_choice
"required" and a named function force tool calls whose arguments validate
against the function's parameters; a constrained request gives the same bytes
alone and beside other traffic, and with speculation on or off; schemas and
grammars stet cannot enforce are a 400 naming the problem."""
import concurrent.futures
import json
import re
import unittest

import stet_server as S

S.require_openai()
try:
    import jsonschema
except ImportError:
    S.require(False, "the Python package 'jsonschema' (scripts/setup installs it)")

SMOL = S.smollm2_path()

PERSON = {
    "type": "object",
    "$defs": {
        "city": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 16},
            "country": {"enum": ["France", "Japan", "Peru"]}},
            "required": ["name", "country"], "additionalProperties": False},
    },
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 20},
        "age": {"type": "integer"},
        "height": {"type": "number"},
        "student": {"type": "boolean"},
        "nickname": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]},
        "hobbies": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
        "home": {"$ref": "#/$defs/city"},
    },
    "required": ["name", "age", "student", "hobbies", "home"],
    "additionalProperties": False,
}

WEATHER_TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 24},
            "unit": {"enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "unit"]}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Current time in a time zone",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 24}},
                       "required": ["zone"]}}},
]

MESSAGES = [{"role": "user", "content": "Describe a person who lives in Lima as JSON."}]


def schema_format(schema, name="person"):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


class StructuredTest(S.ClientTest):
    MODEL = SMOL
    SERVE_ARGS = ("--ctx", "2048", "--threads", "2")

    def chat(self, **kw):
        body = {"model": self.model, "messages": MESSAGES, "max_tokens": 200, "seed": 5}
        body.update(kw)
        status, j = self.srv.post("/v1/chat/completions", body)
        self.assertEqual(status, 200, j)
        return j

    def assert_valid(self, text, schema):
        doc = json.loads(text)
        jsonschema.validate(doc, schema)
        return doc

    def test_json_schema_chat_outputs_validate(self):
        for temp in (0, 0.9):
            j = self.chat(response_format=schema_format(PERSON), temperature=temp, n=3)
            for c in j["choices"]:
                self.assertEqual(c["finish_reason"], "stop", c)
                self.assert_valid(c["message"]["content"], PERSON)

    def test_json_object_chat(self):
        j = self.chat(response_format={"type": "json_object"}, temperature=0.7, n=2, max_tokens=300)
        for c in j["choices"]:
            if c["finish_reason"] == "stop":
                self.assertIsInstance(json.loads(c["message"]["content"]), dict)
            else:  # cut at max_tokens: still a prefix of an object
                self.assertTrue(c["message"]["content"].startswith("{"))

    def test_openai_client_json_schema(self):
        r = self.client.chat.completions.create(
            model=self.model, messages=MESSAGES, max_tokens=200, seed=9, temperature=0.5,
            response_format=schema_format(PERSON))
        self.assert_valid(r.choices[0].message.content, PERSON)

    def test_completions_schema_and_grammar(self):
        status, j = self.srv.post("/v1/completions", {
            "model": self.model, "prompt": "A person as JSON:", "max_tokens": 200, "seed": 3,
            "temperature": 0.8, "n": 2, "response_format": schema_format(PERSON)})
        self.assertEqual(status, 200, j)
        for c in j["choices"]:
            self.assertEqual(c["finish_reason"], "stop")
            self.assert_valid(c["text"], PERSON)
        gbnf = 'root ::= "Answer: " ("yes" | "no") ", because " [a-z ]{1,40} "."'
        status, j = self.srv.post("/v1/completions", {
            "model": self.model, "prompt": "Is the sky blue?", "max_tokens": 60, "seed": 3,
            "temperature": 0.8, "grammar": gbnf})
        self.assertEqual(status, 200, j)
        self.assertRegex(j["choices"][0]["text"], r"^Answer: (yes|no), because [a-z ]{1,40}\.$")
        self.assertEqual(j["choices"][0]["finish_reason"], "stop")

    def test_responses_text_format(self):
        r = self.client.responses.create(
            model=self.model, input="Describe a person as JSON.", max_output_tokens=200,
            temperature=0.6, text={"format": {"type": "json_schema", "name": "person",
                                              "schema": PERSON, "strict": True}},
            extra_body={"seed": 4})
        self.assertEqual(r.status, "completed")
        self.assert_valid(r.output_text, PERSON)
        self.assertEqual(r.text.format.type, "json_schema")

    def tool_call(self, choice, **kw):
        j = self.chat(messages=[{"role": "user", "content": "What's the weather in Paris?"}],
                      tools=WEATHER_TOOLS, tool_choice=choice, **kw)
        out = []
        for c in j["choices"]:
            self.assertEqual(c["finish_reason"], "tool_calls", c)
            calls = c["message"]["tool_calls"]
            self.assertGreaterEqual(len(calls), 1)
            for call in calls:
                fn = next(t["function"] for t in WEATHER_TOOLS
                          if t["function"]["name"] == call["function"]["name"])
                jsonschema.validate(json.loads(call["function"]["arguments"]), fn["parameters"])
                self.assertTrue(call["id"].startswith("call_"))
            out.append(calls)
        return out

    def test_tool_choice_required(self):
        self.tool_call("required", temperature=0.8, n=2, parallel_tool_calls=False)

    def test_tool_choice_named_function(self):
        for calls in self.tool_call({"type": "function", "function": {"name": "get_time"}},
                                    temperature=0.8, n=2):
            self.assertEqual([c["function"]["name"] for c in calls], ["get_time"])

    def test_same_bytes_alone_and_under_load_and_with_speculation(self):
        body = {"model": self.model, "messages": MESSAGES, "max_tokens": 200, "seed": 11,
                "temperature": 0.9, "n": 2, "response_format": schema_format(PERSON),
                "logprobs": True, "top_logprobs": 2}
        status, alone = self.srv.post("/v1/chat/completions", body)
        self.assertEqual(status, 200, alone)

        def other(i):
            return self.srv.post("/v1/chat/completions", {
                "model": self.model, "max_tokens": 40 + i, "seed": i, "temperature": 1.0,
                "messages": [{"role": "user", "content": f"Tell me a story number {i}."}]})

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            noise = [pool.submit(other, i) for i in range(5)]
            loaded = pool.submit(self.srv.post, "/v1/chat/completions", body)
            spec = pool.submit(self.srv.post, "/v1/chat/completions", dict(body, speculative=True))
            for f in noise:
                self.assertEqual(f.result()[0], 200)
            for got in (loaded.result(), spec.result()):
                self.assertEqual(got[0], 200)
                for a, b in zip(alone["choices"], got[1]["choices"]):
                    self.assertEqual(a["message"]["content"], b["message"]["content"])
                    self.assertEqual(a["logprobs"], b["logprobs"])

    def test_streamed_equals_non_streamed(self):
        kw = dict(model=self.model, messages=MESSAGES, max_tokens=200, seed=21, temperature=0.7,
                  response_format=schema_format(PERSON))
        whole = self.client.chat.completions.create(**kw).choices[0].message.content
        parts = [c.choices[0].delta.content or "" for c in self.client.chat.completions.create(stream=True, **kw)
                 if c.choices]
        self.assertEqual("".join(parts), whole)
        self.assert_valid(whole, PERSON)
        # Forced calls streamed: tool_calls deltas carrying the same call.
        kw = dict(model=self.model, max_tokens=120, seed=8, temperature=0.7, tools=WEATHER_TOOLS,
                  tool_choice={"type": "function", "function": {"name": "get_weather"}},
                  messages=[{"role": "user", "content": "Weather in Oslo?"}])
        call = self.client.chat.completions.create(**kw).choices[0].message.tool_calls[0]
        deltas = [c.choices[0].delta for c in self.client.chat.completions.create(stream=True, **kw)
                  if c.choices and c.choices[0].delta.tool_calls]
        self.assertEqual(deltas[0].tool_calls[0].function.name, "get_weather")
        self.assertEqual(deltas[0].tool_calls[0].id, call.id)
        # The arguments follow the call's first delta in pieces.
        self.assertEqual("".join(d.tool_calls[0].function.arguments for d in deltas), call.function.arguments)

    def test_pydantic_parse(self):
        import pydantic

        class City(pydantic.BaseModel):
            name: str = pydantic.Field(max_length=16)
            country: str = pydantic.Field(max_length=12)
            population: int

        parse = getattr(self.client.chat.completions, "parse", None) or self.client.beta.chat.completions.parse
        r = parse(model=self.model, messages=[{"role": "user", "content": "Name a big city as JSON."}],
                  response_format=City, max_tokens=120, temperature=0.5, seed=2)
        city = r.choices[0].message.parsed
        self.assertIsInstance(city, City)
        self.assertLessEqual(len(city.name), 16)

    def test_a_grammar_outgrowing_its_limits_midway_is_a_400(self):
        status, tok = self.srv.post("/tokenize", {"prompt": "a", "add_special_tokens": False})
        self.assertEqual(status, 200, tok)
        a = tok["tokens"][0]
        # Each "a" doubles the ways to close what is open: past 1024 parse stacks the choice fails.
        status, j = self.srv.post("/v1/completions", {
            "model": self.model, "prompt": "x", "max_tokens": 40, "temperature": 0,
            "logit_bias": {str(a): 100}, "grammar": 'root ::= x "!"\nx ::= "a" x "b" | "a" x "c" | ""'})
        self.assertEqual(status, 400, j)
        self.assertEqual(j["error"]["param"], "grammar")
        self.assertIn("parse stacks", j["error"]["message"])

    def test_tools_with_a_response_format(self):
        # OpenAI's meaning: a forced call is the call this turn; with tool_choice
        # "auto" the model calls a tool or answers in the format.
        j = self.chat(tools=WEATHER_TOOLS, tool_choice="required",
                      response_format={"type": "json_object"}, max_tokens=120)
        msg = j["choices"][0]["message"]
        self.assertEqual(j["choices"][0]["finish_reason"], "tool_calls", j)
        self.assertIn(msg["tool_calls"][0]["function"]["name"], ("get_weather", "get_time"))
        schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 20}},
                  "required": ["answer"], "additionalProperties": False}
        j = self.chat(tools=WEATHER_TOOLS, temperature=0.9, n=4, max_tokens=120,
                      response_format={"type": "json_schema",
                                       "json_schema": {"name": "a", "schema": schema}})
        for c in j["choices"]:
            if c["message"].get("tool_calls"):
                self.assertEqual(c["finish_reason"], "tool_calls", c)
            else:
                self.assertEqual(c["finish_reason"], "stop", c)
                self.assert_valid(c["message"]["content"], schema)

    def test_refusals_are_400_with_the_field(self):
        cases = [
            ({"response_format": schema_format({"type": "string", "pattern": "^(?!a)"})}, "look-ahead"),
            ({"response_format": schema_format({"type": "string", "pattern": "(a)\\1"})}, "back-reference"),
            ({"response_format": schema_format({"type": "array", "uniqueItems": True})}, "uniqueItems"),
            ({"response_format": {"type": "json_schema"}}, "json_schema"),
            ({"response_format": {"type": "xml"}}, "response_format.type"),
            ({"grammar": "root ::= foo"}, "not defined"),
            ({"grammar": "root ::= root \"a\""}, "left recursion"),
            ({"grammar": 'root ::= "a"', "response_format": {"type": "json_object"}}, "not both"),
            ({"tools": WEATHER_TOOLS,
              "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "nope"),
            ({"tool_choice": "required"}, "tools"),
            ({"tools": WEATHER_TOOLS, "tool_choice": "required",
              "grammar": 'root ::= "a"'}, "cannot be combined"),
        ]
        for extra, needle in cases:
            body = {"model": self.model, "messages": MESSAGES, "max_tokens": 5}
            body.update(extra)
            status, j = self.srv.post("/v1/chat/completions", body)
            self.assertEqual(status, 400, (extra, j))
            self.assertEqual(j["error"]["type"], "invalid_request_error")
            self.assertIn(needle, json.dumps(j["error"]), (extra, j))
        status, j = self.srv.post("/v1/responses", {
            "model": self.model, "input": "hi",
            "text": {"format": {"type": "json_schema", "name": "x",
                                "schema": {"type": "integer", "multipleOf": 3}}}})
        self.assertEqual(status, 400, j)
        self.assertIn("multipleOf", j["error"]["message"])


if __name__ == "__main__":
    unittest.main()

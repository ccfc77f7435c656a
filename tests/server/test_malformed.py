"""Hostile and malformed input: each case gets the right 4xx with an
OpenAI-shaped error body, and the server keeps serving (/health is checked
after every case, and a real completion at the end). Raw sockets cover what
no client library sends: invalid UTF-8, a stalled (slowloris) body, partial
headers, oversize headers and bodies, broken chunked encoding."""
import json
import socket
import time
import unittest

import stet_server as S

S.require_openai()
import openai  # noqa: E402

STORIES = S.stories_path()
KEY = "sk-test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
MAX_BODY = 65536

C = "/v1/completions"
CH = "/v1/chat/completions"


def comp(**kw):
    body = {"model": "stories260K", "prompt": "Once", "max_tokens": 2}
    body.update(kw)
    return body


def chat(**kw):
    body = {"model": "stories260K", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    body.update(kw)
    return body


def drop(body, key):
    body = dict(body)
    del body[key]
    return body


# (name, path, body (dict -> JSON, bytes/str raw), expected status, expected error param or None)
CASES = [
    ("bad json", C, b'{"model": "stories260K", "prompt": ', 400, None),
    ("empty body", C, b"", 400, None),
    ("array body", C, b"[1, 2, 3]", 400, None),
    ("string body", C, b'"hello"', 400, None),
    ("number body", C, b"42", 400, None),
    ("invalid utf-8 in a string", C, b'{"model": "stories260K", "prompt": "\xc3\x28"}', 400, None),
    ("invalid utf-8 outside strings", C, b'{"model": "stories260K", \xff "prompt": "x"}', 400, None),
    ("lone surrogate escape", C, b'{"model": "stories260K", "prompt": "\\ud800"}', 400, None),
    ("NaN literal", C, b'{"model": "stories260K", "prompt": "x", "temperature": NaN}', 400, None),
    ("deep nesting", C, b'{"model": "stories260K", "prompt": ' + b"[" * 10000 + b"]" * 10000 + b"}", 400, None),
    ("missing model", C, drop(comp(), "model"), 400, "model"),
    ("model wrong type", C, comp(model=7), 400, "model"),
    ("unknown model", C, comp(model="gpt-4"), 404, "model"),
    ("missing prompt", C, drop(comp(), "prompt"), 400, "prompt"),
    ("prompt object", C, comp(prompt={"text": "x"}), 400, "prompt"),
    ("prompt empty array", C, comp(prompt=[]), 400, "prompt"),
    ("prompt negative id", C, comp(prompt=[1, -5]), 400, "prompt"),
    ("prompt id outside vocabulary", C, comp(prompt=[1, 512]), 400, "prompt"),
    ("prompt mixed array", C, comp(prompt=["a", 5]), 400, "prompt"),
    ("prompt float ids", C, comp(prompt=[1.5, 2]), 400, "prompt"),
    ("max_tokens negative", C, comp(max_tokens=-1), 400, "max_tokens"),
    ("max_tokens huge", C, comp(max_tokens=10 ** 20), 400, "max_tokens"),
    ("max_tokens string", C, comp(max_tokens="10"), 400, "max_tokens"),
    ("temperature too high", C, comp(temperature=5), 400, "temperature"),
    ("temperature negative", C, comp(temperature=-1), 400, "temperature"),
    ("top_p negative", C, comp(top_p=-0.5), 400, "top_p"),
    ("n zero", C, comp(n=0), 400, "n"),
    ("n huge", C, comp(n=100000), 400, "n"),
    ("n times prompts too many", C, comp(prompt=["a"] * 3, n=100), 400, "n"),
    ("logprobs 6", C, comp(logprobs=6), 400, "logprobs"),
    ("logprobs negative", C, comp(logprobs=-1), 400, "logprobs"),
    ("stop with 5 entries", C, comp(stop=["a", "b", "c", "d", "e"]), 400, "stop"),
    ("stop wrong type", C, comp(stop={"a": 1}), 400, "stop"),
    ("logit_bias non-numeric key", C, comp(logit_bias={"dog": 1}), 400, "logit_bias"),
    ("logit_bias value too large", C, comp(logit_bias={"5": 1000}), 400, "logit_bias"),
    ("logit_bias id outside vocabulary", C, comp(logit_bias={"100000": 1}), 400, "logit_bias"),
    ("logit_bias not an object", C, comp(logit_bias=[1, 2]), 400, "logit_bias"),
    ("presence_penalty out of range", C, comp(presence_penalty=10), 400, "presence_penalty"),
    ("seed string", C, comp(seed="42"), 400, "seed"),
    ("seed fractional", C, comp(seed=1.5), 400, "seed"),
    ("stream_options without stream", C, comp(stream_options={"include_usage": True}), 400, "stream_options"),
    ("stream not boolean", C, comp(stream="yes"), 400, "stream"),
    ("echo not boolean", C, comp(echo=1), 400, "echo"),
    ("over-long prompt", C, comp(prompt="word " * 3000), 400, "prompt"),
    ("chat messages missing", CH, drop(chat(), "messages"), 400, "messages"),
    ("chat messages empty", CH, chat(messages=[]), 400, "messages"),
    ("chat messages not an array", CH, chat(messages="hi"), 400, "messages"),
    ("chat message not an object", CH, chat(messages=["hi"]), 400, "messages[0]"),
    ("chat role invalid", CH, chat(messages=[{"role": "robot", "content": "x"}]), 400, "messages[0].role"),
    ("chat role missing", CH, chat(messages=[{"content": "x"}]), 400, "messages[0].role"),
    ("chat content missing", CH, chat(messages=[{"role": "user"}]), 400, "messages[0].content"),
    ("chat content number", CH, chat(messages=[{"role": "user", "content": 5}]), 400, "messages[0].content"),
    ("chat image part", CH, chat(messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://x"}}]}]), 400, "messages[0].content[0].type"),
    ("chat tool_calls on user", CH, chat(messages=[{"role": "user", "content": "x", "tool_calls": []}]), 400,
     "messages[0].tool_calls"),
    ("chat top_logprobs 21", CH, chat(logprobs=True, top_logprobs=21), 400, "top_logprobs"),
    ("chat top_logprobs without logprobs", CH, chat(top_logprobs=3), 400, "top_logprobs"),
    ("chat max_tokens 0", CH, chat(max_tokens=0), 400, "max_tokens"),
    ("chat max_completion_tokens negative", CH, chat(max_completion_tokens=-3), 400, "max_completion_tokens"),
    ("chat unknown model", CH, chat(model="llama-70b"), 404, "model"),
    ("chat over-long", CH, chat(messages=[{"role": "user", "content": "word " * 3000}]), 400, "messages"),
    ("chat response_format xml", CH, chat(response_format={"type": "xml"}), 400, "response_format.type"),
    ("chat response_format look-ahead pattern", CH,
     chat(response_format={"type": "json_schema", "json_schema": {"schema": {"type": "string", "pattern": "(?=a)b"}}}),
     400, "response_format.json_schema.schema"),
    ("chat grammar not a string", CH, chat(grammar=7), 400, "grammar"),
    ("completion bad grammar", C, comp(grammar="root ::= ("), 400, "grammar"),
    ("oversize body", C, comp(prompt="x" * (MAX_BODY + 10)), 413, None),
]


class MalformedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = S.StetServer(STORIES, "--api-key", KEY, "--max-body-bytes", str(MAX_BODY),
                               "--read-timeout", "2", "--threads", "1")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def assert_alive(self, what):
        self.assertIsNone(self.srv.proc.poll(), f"server died after {what}")
        self.assertTrue(self.srv.healthy(), f"/health failed after {what}")

    def assert_error_body(self, data, status, param, what):
        body = json.loads(data)
        err = body["error"]
        for k in ("message", "type", "param", "code"):
            self.assertIn(k, err, what)
        self.assertTrue(err["message"], what)
        if param is not None:
            self.assertEqual(err["param"], param, what)
        if status == 404 and param == "model":
            self.assertEqual(err["code"], "model_not_found")
        return err

    def test_cases(self):
        self.assertGreaterEqual(len(CASES), 30)
        for name, path, body, status, param in CASES:
            with self.subTest(name):
                got, _, data = self.srv.http("POST", path, body, AUTH)
                self.assertEqual(got, status, f"{name}: {data[:300]!r}")
                err = self.assert_error_body(data, status, param, name)
                if name.startswith("over-long") or name == "chat over-long":
                    self.assertEqual(err["code"], "context_length_exceeded")
                self.assert_alive(name)

    def test_auth(self):
        for headers, what in (({}, "missing key"), ({"Authorization": "Bearer wrong"}, "wrong key"),
                              ({"Authorization": f"Basic {KEY}"}, "wrong scheme"),
                              ({"Authorization": "Bearer"}, "empty bearer")):
            status, hdrs, data = self.srv.http("POST", C, comp(), headers)
            self.assertEqual(status, 401, what)
            self.assertEqual(json.loads(data)["error"]["code"], "invalid_api_key")
            self.assertEqual(hdrs.get("www-authenticate"), "Bearer")
            self.assertEqual(self.srv.http("GET", "/v1/models", None, headers)[0], 401)
        # /health stays open; /metrics needs the key too (unless --metrics-public).
        self.assertEqual(self.srv.http("GET", "/health")[0], 200)
        self.assertEqual(self.srv.http("GET", "/metrics")[0], 401)
        self.assertEqual(self.srv.http("GET", "/metrics", headers=AUTH)[0], 200)
        with self.assertRaises(openai.AuthenticationError):
            self.srv.client(api_key="nope").models.list()
        self.assertEqual(self.srv.client(api_key=KEY).models.list().data[0].object, "model")
        self.assert_alive("auth")

    def test_routing_errors(self):
        status, hdrs, data = self.srv.http("GET", C, None, AUTH)
        self.assertEqual(status, 405)
        self.assertEqual(hdrs.get("allow"), "POST")
        status, _, data = self.srv.http("POST", "/v1/embeddings", comp(), AUTH)
        self.assertEqual(status, 404)
        self.assertEqual(json.loads(data)["error"]["code"], "unknown_url")
        status, _, data = self.srv.http("GET", "/nope", None, AUTH)
        self.assertEqual(status, 404)
        self.assert_alive("routing")

    def test_openai_client_errors(self):
        client = self.srv.client(api_key=KEY)
        with self.assertRaises(openai.BadRequestError):
            client.chat.completions.create(model="stories260K", messages=[{"role": "user", "content": "x"}],
                                           logprobs=True, top_logprobs=21)
        with self.assertRaises(openai.BadRequestError):
            client.completions.create(model="stories260K", prompt="x", n=0)
        with self.assertRaises(openai.NotFoundError):
            client.completions.create(model="nope", prompt="x")
        self.assert_alive("client errors")

    def raw(self, data, read_timeout=10):
        """Sends raw bytes; returns (response bytes, seconds until the server closed)."""
        s = socket.create_connection(("127.0.0.1", self.srv.port))
        s.settimeout(read_timeout)
        t0 = time.time()
        s.sendall(data)
        out = b""
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                out += d
        except socket.timeout:
            out += b"<timeout>"
        except ConnectionResetError:
            pass
        s.close()
        return out, time.time() - t0

    def test_slowloris_partial_body(self):
        s = socket.create_connection(("127.0.0.1", self.srv.port))
        body = json.dumps(comp()).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY.encode() +
                  b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body) + 100).encode() +
                  b"\r\n\r\n" + body[:10])
        # While it stalls, everyone else is served.
        t0 = time.time()
        self.assertTrue(self.srv.healthy())
        r = self.srv.client(api_key=KEY).completions.create(model="stories260K", prompt="Once", max_tokens=3)
        self.assertTrue(r.choices)
        self.assertLess(time.time() - t0, 5.0)
        # The stalled connection is answered 408 after --read-timeout (2 s) of silence.
        s.settimeout(10)
        out = b""
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                out += d
        except (socket.timeout, ConnectionResetError):
            pass
        elapsed = time.time() - t0
        s.close()
        self.assertLess(elapsed, 15, "a stalled body was not dropped")
        self.assertTrue(out.startswith(b"HTTP/1.1 408"), out[:100])
        self.assert_alive("slowloris body")

    def test_partial_headers_and_broken_framing(self):
        out, secs = self.raw(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Len")
        self.assertLess(secs, 15)
        self.assertTrue(out.startswith(b"HTTP/1.1 408"), out[:100])
        out, _ = self.raw(b"GARBAGE\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 400"), out[:100])
        out, _ = self.raw(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
        self.assertFalse(out.startswith(b"HTTP/1.1 200"), out[:100])
        out, _ = self.raw(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY.encode() +
                          b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                          b"zz\r\nabc\r\n0\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 400"), out[:100])
        huge = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY.encode() + \
            b"\r\nContent-Length: 999999999999\r\nConnection: close\r\n\r\n{}"
        out, _ = self.raw(huge)
        self.assertTrue(out.startswith(b"HTTP/1.1 413"), out[:100])
        self.assert_alive("framing")

    def test_zz_still_serving(self):
        r = self.srv.client(api_key=KEY).completions.create(model="stories260K", prompt="Once upon", max_tokens=8,
                                                            temperature=0)
        self.assertEqual(r.usage.completion_tokens, 8)
        logs = self.srv.request_logs()
        self.assertTrue(any(l.get("status") == 400 and l.get("error") for l in logs))
        m = self.srv.metrics()
        bad = sum(v for (name, labels), v in m.items()
                  if name == "stet_http_requests_total" and ("status", "400") in labels)
        self.assertGreater(bad, 0)


if __name__ == "__main__":
    unittest.main()

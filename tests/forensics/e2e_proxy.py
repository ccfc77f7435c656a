"""End-to-end: `stet proxy` in front of two different upstreams — a small
independent OpenAI-compatible server written here (fake_upstream.py: tool
calls, /v1/responses, misbehaviour on demand) and `stet serve` on stories260K.
Each test checks what the client sees (status, bytes, timing of streamed
events) and what the store holds (every field of the exchange record).
"""
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402
import fake_upstream  # noqa: E402


def philox_u(seed, index, stream=0x53544C50):
    """The proxy's sampling draw, computed independently (Philox4x32-10, 53-bit double)."""
    m = 0xFFFFFFFF
    ctr = [index & m, (index >> 32) & m, stream, 0]
    key = [seed & m, (seed >> 32) & m]
    for _ in range(10):
        p0 = 0xD2511F53 * ctr[0]
        p1 = 0xCD9E8D57 * ctr[2]
        ctr = [((p1 >> 32) ^ ctr[1] ^ key[0]) & m, p1 & m, ((p0 >> 32) ^ ctr[3] ^ key[1]) & m, p0 & m]
        key = [(key[0] + 0x9E3779B9) & m, (key[1] + 0xBB67AE85) & m]
    bits = ((ctr[0] << 21) ^ (ctr[1] >> 11)) & ((1 << 53) - 1)
    return bits / float(1 << 53)


def sse_lines(raw):
    events, done = [], False
    for block in raw.decode().split("\n\n"):
        data = [ln[6:] for ln in block.split("\n") if ln.startswith("data: ")]
        if not data:
            continue
        if data[0] == "[DONE]":
            done = True
            continue
        events.append(json.loads("\n".join(data)))
    return events, done


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class FakeUpstream:
    def __init__(self):
        self.srv = fake_upstream.serve()
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class ProxyVsFake(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stet-e2e-proxy-")
        cls.up = FakeUpstream()

    @classmethod
    def tearDownClass(cls):
        cls.up.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def store(self, name):
        return os.path.join(self.tmp, name + ".db")

    def by_id(self, store, xid):
        recs = [r for r in sup.exchanges(store) if r["id"] == xid]
        self.assertEqual(len(recs), 1, f"exchange {xid} recorded once")
        return recs[0]

    def test_non_streamed_record_fields_and_snapshot_once(self):
        db = self.store("plain")
        with sup.StetProxy(self.up.url + "/v1", db, "--no-log") as p:
            system = {"role": "system", "content": "You are terse."}
            tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
            ids = []
            for i in range(3):
                body = {"model": "m", "max_tokens": 5, "messages": [system, {"role": "user", "content": f"q{i}"}],
                        "tools": tools, "metadata": {"trace": f"t{i}"}}
                st, h, raw = sup.http_request(p.url + "/v1/chat/completions", "POST", body,
                                              headers={"X-Stet-Context": json.dumps({"prompt_version": "v7"})})
                self.assertEqual(st, 200, raw)
                direct = json.loads(raw)
                self.assertEqual(direct["system_fingerprint"], "fp_fake0001")
                ids.append(h["x-stet-exchange-id"])
            st, h, raw = sup.http_request(p.url + "/v1/chat/completions", "POST",
                                          {"model": "m", "max_tokens": 3, "messages": [
                                              {"role": "system", "content": "Other."}, {"role": "user", "content": "x"}]})
            self.assertEqual(st, 200)
            other = h["x-stet-exchange-id"]
        recs = [self.by_id(db, i) for i in ids]
        r = recs[0]
        self.assertEqual(r["schema"], "stet.exchange/1")
        self.assertEqual(r["kind"], "traffic")
        self.assertEqual(r["endpoint"], "/v1/chat/completions")
        self.assertEqual(r["status"], 200)
        self.assertEqual(r["outcome"], "ok")
        self.assertEqual(r["model_requested"], "m")
        self.assertEqual(r["model_answered"], "fake-model-2024-01-01")
        self.assertEqual(r["system_fingerprint"], "fp_fake0001")
        self.assertTrue(r["upstream_request_id"].startswith("req_"))
        self.assertEqual(r["headers"]["x-ratelimit-remaining-requests"], "99")
        self.assertEqual(r["context"], {"header": {"prompt_version": "v7"}, "metadata": {"trace": "t0"}})
        self.assertGreater(r["latency_ms"], 0)
        self.assertRegex(r["received_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual(r["request"]["messages"][1]["content"], "q0")
        self.assertEqual(r["response"]["choices"][0]["message"]["content"].split()[0] in fake_upstream.WORDS, True)
        # One snapshot for the three requests with the same system prompt and tools; another for the fourth.
        self.assertEqual(len({x["snapshot"] for x in recs}), 1)
        other_rec = self.by_id(db, other)
        self.assertNotEqual(other_rec["snapshot"], r["snapshot"])
        con = sqlite3.connect(db)
        snaps = dict(con.execute("SELECT sha256, body FROM snapshots").fetchall())
        con.close()
        self.assertEqual(len(snaps), 2)
        body = snaps[r["snapshot"]]
        self.assertEqual(hashlib.sha256(body.encode()).hexdigest(), r["snapshot"])
        self.assertEqual(json.loads(body), {"system": [{"content": "You are terse.", "role": "system"}], "tools": tools})

    def test_stream_folded_tool_calls_and_event_by_event_relay(self):
        db = self.store("stream")
        with sup.StetProxy(self.up.url, db, "--no-log") as p:
            st, h, raw = sup.http_request(p.url + "/v1/chat/completions", "POST",
                                          {"model": "tools", "stream": True, "messages": [{"role": "user", "content": "w"}]})
            self.assertEqual(st, 200)
            self.assertTrue(h["content-type"].startswith("text/event-stream"))
            events, done = sse_lines(raw)
            self.assertTrue(done)
            rec = self.by_id(db, h["x-stet-exchange-id"])
            msg = rec["response"]["choices"][0]["message"]
            self.assertEqual(msg["tool_calls"], [{"id": "call_1", "type": "function", "function": {
                "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}])
            self.assertEqual(rec["response"]["choices"][0]["finish_reason"], "tool_calls")
            self.assertTrue(rec["stream"])
            self.assertIsNotNone(rec["ttft_ms"])
            # Completions streamed with usage: folded text equals the streamed pieces joined.
            st, h, raw = sup.http_request(p.url + "/v1/completions", "POST",
                                          {"model": "m", "prompt": "p", "max_tokens": 6, "stream": True,
                                           "stream_options": {"include_usage": True}})
            events, done = sse_lines(raw)
            text = "".join(c["text"] for e in events for c in e["choices"])
            rec = self.by_id(db, h["x-stet-exchange-id"])
            self.assertEqual(rec["response"]["choices"][0]["text"], text)
            self.assertEqual(rec["response"]["usage"]["completion_tokens"], 6)
            # Relayed as the upstream sends: 20 events 50 ms apart; the first arrives long before the last.
            req = urllib.request.Request(p.url + "/v1/chat/completions", data=json.dumps(
                {"model": "trickle", "stream": True, "max_tokens": 20, "messages": [{"role": "user", "content": "t"}]}).encode(),
                headers={"Content-Type": "application/json"})
            t0 = time.time()
            arrivals = []
            with urllib.request.urlopen(req, timeout=30) as r:
                buf = b""
                while True:
                    chunk = r.read1(65536)
                    if not chunk:
                        break
                    buf += chunk
                    while b"\n\n" in buf:
                        ev, buf = buf.split(b"\n\n", 1)
                        arrivals.append(time.time() - t0)
            self.assertGreaterEqual(len(arrivals), 21)
            self.assertLess(arrivals[1], 0.6, arrivals[:5])
            self.assertGreater(arrivals[-1] - arrivals[1], 0.6, arrivals)

    def test_responses_api_stream_folds_final_response(self):
        db = self.store("responses")
        with sup.StetProxy(self.up.url, db, "--no-log") as p:
            st, h, raw = sup.http_request(p.url + "/v1/responses", "POST",
                                          {"model": "m", "input": "hello", "instructions": "Be kind.", "stream": True})
            self.assertEqual(st, 200)
            self.assertIn(b"event: response.completed", raw)
            rec = self.by_id(db, h["x-stet-exchange-id"])
            self.assertEqual(rec["response"]["status"], "completed")
            self.assertEqual(rec["model_answered"], "fake-model-2024-01-01")
            self.assertIsNotNone(rec["snapshot"])  # instructions shape the answer

    def test_errors_pass_through_and_are_recorded(self):
        db = self.store("errors")
        with sup.StetProxy(self.up.url, db, "--no-log") as p:
            st, h, raw = sup.http_request(p.url + "/v1/chat/completions", "POST",
                                          {"model": "status-429", "messages": [{"role": "user", "content": "x"}]})
            self.assertEqual(st, 429)
            self.assertEqual(h.get("retry-after"), "7")
            self.assertEqual(json.loads(raw)["error"]["code"], "e429")
            rec = self.by_id(db, h["x-stet-exchange-id"])
            self.assertEqual((rec["status"], rec["upstream_status"], rec["outcome"]), (429, 429, "upstream_error"))
            self.assertEqual(rec["response"]["error"]["message"], "simulated 429")
            self.assertEqual(rec["headers"]["retry-after"], "7")
            st, h, raw = sup.http_request(p.url + "/v1/completions", "POST", {"model": "status-500", "prompt": "x"})
            self.assertEqual(st, 500)
            # Pass-through paths are forwarded, not recorded.
            n = len(sup.exchanges(db))
            st, h, raw = sup.http_request(p.url + "/v1/models")
            self.assertEqual(st, 200)
            self.assertEqual(json.loads(raw)["data"][0]["id"], "fake-model-2024-01-01")
            self.assertEqual(len(sup.exchanges(db)), n)

    def test_upstream_disconnect_mid_stream(self):
        db = self.store("drop")
        with sup.StetProxy(self.up.url, db, "--no-log") as p:
            req = urllib.request.Request(p.url + "/v1/chat/completions", data=json.dumps(
                {"model": "drop", "stream": True, "max_tokens": 8, "messages": [{"role": "user", "content": "d"}]}).encode(),
                headers={"Content-Type": "application/json"})
            got = b""
            broken = False
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    xid = r.headers["X-Stet-Exchange-Id"]
                    while True:
                        c = r.read1(65536)
                        if not c:
                            break
                        got += c
            except Exception:  # the proxy ends the chunked body abnormally: the client sees a broken stream
                broken = True
            self.assertNotIn(b"[DONE]", got)
            self.assertIn(b"upstream_disconnected", got)
            self.assertTrue(broken or not got.endswith(b"0\r\n\r\n"))
            time.sleep(0.3)
            rec = self.by_id(db, xid)
            self.assertEqual(rec["outcome"], "upstream_disconnected")
            self.assertEqual(len(rec["response"]["choices"][0]["message"]["content"].split()), 2)
            # The proxy goes on serving.
            st, _, _ = sup.http_request(p.url + "/health")
            self.assertEqual(st, 200)

    def test_client_disconnect_mid_stream(self):
        db = self.store("client-gone")
        with sup.StetProxy(self.up.url, db, "--no-log") as p:
            s = socket.create_connection(("127.0.0.1", p.port))
            body = json.dumps({"model": "trickle", "stream": True, "max_tokens": 20,
                               "messages": [{"role": "user", "content": "c"}]})
            s.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
            got = b""
            while got.count(b"data: ") < 3:
                got += s.recv(65536)
            s.close()
            deadline = time.time() + 10
            recs = []
            while time.time() < deadline:
                recs = [r for r in sup.exchanges(db) if r["outcome"] == "client_disconnected"]
                if recs:
                    break
                time.sleep(0.1)
            self.assertEqual(len(recs), 1, "the abandoned stream is recorded as client_disconnected")
            n_words = len((recs[0]["response"]["choices"][0]["message"]["content"] or "").split())
            self.assertLess(n_words, 20)
            st, _, _ = sup.http_request(p.url + "/health")
            self.assertEqual(st, 200)

    def test_client_leaving_a_silent_stream_is_noticed(self):
        db = self.store("stall")
        with sup.StetProxy(self.up.url, db, "--no-log", "--upstream-timeout", "30") as p:
            s = socket.create_connection(("127.0.0.1", p.port))
            body = json.dumps({"model": "stall", "stream": True, "max_tokens": 5,
                               "messages": [{"role": "user", "content": "z"}]})
            s.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
            got = b""
            while got.count(b"data: ") < 2:
                got += s.recv(65536)
            t0 = time.time()
            s.close()
            recs = []
            while time.time() - t0 < 6:
                recs = [r for r in sup.exchanges(db) if r["outcome"] == "client_disconnected"]
                if recs:
                    break
                time.sleep(0.1)
            # Noticed within the 1 s liveness slice, not after the 8 s silence or the 30 s timeout.
            self.assertEqual(len(recs), 1)
            self.assertLess(time.time() - t0, 4)

    def test_slow_and_unreachable_upstreams(self):
        db = self.store("slow")
        with sup.StetProxy(self.up.url, db, "--no-log", "--upstream-timeout", "1", "--workers", "2") as p:
            results = {}

            def slow(k):
                t0 = time.time()
                st, h, raw = sup.http_request(p.url + "/v1/chat/completions", "POST",
                                              {"model": "slow-3", "messages": [{"role": "user", "content": "s"}]})
                results[k] = (st, time.time() - t0, raw)

            threads = [threading.Thread(target=slow, args=(k,)) for k in range(2)]
            for t in threads:
                t.start()
            time.sleep(0.2)
            # Both relay workers wait on the upstream; /health answers at once all the same.
            t0 = time.time()
            st, _, raw = sup.http_request(p.url + "/health", timeout=5)
            self.assertEqual(st, 200)
            self.assertLess(time.time() - t0, 0.5)
            self.assertEqual(json.loads(raw)["in_flight"], 2)
            for t in threads:
                t.join(30)
            for k in range(2):
                st, secs, raw = results[k]
                self.assertEqual(st, 504, raw)
                self.assertLess(secs, 2.9)
                self.assertEqual(json.loads(raw)["error"]["code"], "upstream_timeout")
        timeouts = [r for r in sup.exchanges(db) if r["outcome"] == "upstream_timeout"]
        self.assertEqual(len(timeouts), 2)
        self.assertEqual(timeouts[0]["status"], 504)
        dead = f"http://127.0.0.1:{free_port()}"
        with sup.StetProxy(dead, self.store("dead"), "--no-log") as p:
            st, h, raw = sup.http_request(p.url + "/v1/completions", "POST", {"model": "m", "prompt": "x"})
            self.assertEqual(st, 502)
            self.assertEqual(json.loads(raw)["error"]["code"], "upstream_unreachable")
            st, _, _ = sup.http_request(p.url + "/health")
            self.assertEqual(st, 200)
        rec = sup.exchanges(self.store("dead"))[0]
        self.assertEqual((rec["status"], rec["outcome"], rec["upstream_status"]), (502, "upstream_unreachable", None))

    def test_authorization_forwarded_or_replaced_and_never_stored(self):
        db = self.store("auth")
        with sup.StetProxy(self.up.url, db) as p:
            st, _, raw = sup.http_request(p.url + "/admin/echo", "POST", {"x": 1},
                                          headers={"Authorization": "Bearer client-key-123", "X-Stet-Context": "{}"})
            seen = {k.lower(): v for k, v in json.loads(raw)["headers"].items()}
            self.assertEqual(seen["authorization"], "Bearer client-key-123")
            self.assertNotIn("x-stet-context", seen)
        env = dict(os.environ, UPSTREAM_SECRET="sk-upstream-secret-987")
        db2 = self.store("auth2")
        with sup.StetProxy(self.up.url, db2, "--upstream-key-env", "UPSTREAM_SECRET", "--api-key", "proxy-key",
                           env=env) as p:
            st, _, _ = sup.http_request(p.url + "/admin/echo", "POST", {"x": 1})
            self.assertEqual(st, 401)
            st, _, raw = sup.http_request(p.url + "/admin/echo", "POST", {"x": 1},
                                          headers={"Authorization": "Bearer proxy-key"})
            seen = {k.lower(): v for k, v in json.loads(raw)["headers"].items()}
            self.assertEqual(seen["authorization"], "Bearer sk-upstream-secret-987")
            st, _, _ = sup.http_request(p.url + "/v1/chat/completions", "POST",
                                        {"model": "m", "messages": [{"role": "user", "content": "k"}]},
                                        headers={"Authorization": "Bearer proxy-key"})
            self.assertEqual(st, 200)
            logs = "\n".join(p.lines)
        p.stop()
        for path in [db2, db2 + "-wal"]:
            if os.path.exists(path):
                with open(path, "rb") as f:
                    data = f.read()
                self.assertNotIn(b"sk-upstream-secret-987", data)
                self.assertNotIn(b"proxy-key", data)
        self.assertNotIn("sk-upstream-secret-987", logs)
        self.assertEqual(len(sup.exchanges(db2)), 1)

    def test_logprob_sampling_seeded_recorded_and_stripped(self):
        db = self.store("sample")
        with sup.StetProxy(self.up.url, db, "--no-log", "--logprob-sample", "0.5", "--sample-seed", "7") as p:
            for i in range(12):
                stream = i % 2 == 1
                chat = i % 3 != 0
                body = {"model": "m", "max_tokens": 4, "stream": stream}
                if chat:
                    body["messages"] = [{"role": "user", "content": f"s{i}"}]
                else:
                    body["prompt"] = f"s{i}"
                st, h, raw = sup.http_request(p.url + ("/v1/chat/completions" if chat else "/v1/completions"), "POST", body)
                self.assertEqual(st, 200)
                answers = sse_lines(raw)[0] if stream else [json.loads(raw)]
                for a in answers:
                    for c in a["choices"]:
                        self.assertIsNone(c.get("logprobs"), "logprobs the client did not ask for are stripped")
            # A request that asked keeps its logprobs and takes no part in the draw.
            st, h, raw = sup.http_request(p.url + "/v1/chat/completions", "POST",
                                          {"model": "m", "max_tokens": 3, "logprobs": True, "top_logprobs": 2,
                                           "messages": [{"role": "user", "content": "a"}]})
            self.assertIsNotNone(json.loads(raw)["choices"][0]["logprobs"])
            asked = h["x-stet-exchange-id"]
            # An upstream that refuses logprobs: retried without them, the client never sees the 400.
            st, h, raw = sup.http_request(p.url + "/v1/chat/completions", "POST",
                                          {"model": "no-logprobs", "max_tokens": 3, "messages": [{"role": "user", "content": "n"}]})
            refused_id = h["x-stet-exchange-id"]
            self.assertEqual(st, 200)
        recs = sup.exchanges(db)
        drawn = [r for r in recs if r["logprob_sample"]]
        self.assertEqual([r["logprob_sample"]["index"] for r in drawn], list(range(len(drawn))))
        for r in drawn:
            s = r["logprob_sample"]
            self.assertEqual((s["rate"], s["seed"]), (0.5, 7))
            self.assertEqual(s["u"], philox_u(7, s["index"]))
            self.assertEqual(s["sampled"], s["u"] < 0.5)
            lp = r["response"]["choices"][0]["logprobs"]
            if s["sampled"] and "refused_status" not in s:
                self.assertIsNotNone(r["injected"])
                self.assertIsNotNone(lp, r["id"])
                if r["endpoint"] == "/v1/chat/completions":
                    self.assertEqual(len(lp["content"][0]["top_logprobs"]), 5)
                else:
                    self.assertEqual(len(lp["tokens"]), 4)
            else:
                self.assertIsNone(r["injected"])
        self.assertGreater(sum(r["logprob_sample"]["sampled"] for r in drawn), 0)
        self.assertLess(sum(r["logprob_sample"]["sampled"] for r in drawn), len(drawn))
        self.assertIsNone([r for r in recs if r["id"] == asked][0]["logprob_sample"])
        refused = [r for r in recs if r["id"] == refused_id][0]
        if refused["logprob_sample"]["sampled"]:
            self.assertEqual(refused["logprob_sample"]["refused_status"], 400)

    def test_redaction_before_anything_is_written(self):
        db = self.store("redact")
        with sup.StetProxy(self.up.url, db, "--no-log", "--redact", "request.messages[*].content",
                           "--redact", "response.choices[*].message.content") as p:
            st, h, raw = sup.http_request(p.url + "/v1/chat/completions", "POST", {
                "model": "m", "max_tokens": 4, "messages": [{"role": "system", "content": "SECRET-SYSTEM"},
                                                            {"role": "user", "content": "SECRET-USER"}]})
            self.assertEqual(st, 200)
            answer = json.loads(raw)["choices"][0]["message"]["content"]
        rec = sup.exchanges(db)[0]
        self.assertEqual([m["content"] for m in rec["request"]["messages"]], ["[redacted]", "[redacted]"])
        self.assertEqual(rec["response"]["choices"][0]["message"]["content"], "[redacted]")
        for path in [db, db + "-wal"]:
            if os.path.exists(path):
                with open(path, "rb") as f:
                    data = f.read()
                self.assertNotIn(b"SECRET-SYSTEM", data)
                self.assertNotIn(b"SECRET-USER", data)
                self.assertNotIn(answer.encode(), data)

    def test_agent_session_replays_as_recorded_and_names_the_departure(self):
        db = self.store("session")
        fake_upstream.STATE.update(salt_from_messages=0)
        with sup.StetProxy(self.up.url, db, "--no-log") as p:
            msgs = [{"role": "system", "content": "agent"}, {"role": "user", "content": "weather in Paris?"}]
            bodies = []
            for turn in range(3):
                body = {"model": "tools" if turn == 0 else "m", "max_tokens": 6, "logprobs": True, "top_logprobs": 2,
                        "messages": list(msgs), "stream": turn == 1}
                st, h, raw = sup.http_request(p.url + "/v1/chat/completions", "POST", body)
                self.assertEqual(st, 200)
                bodies.append(body)
                rec = sup.exchanges(db)[-1]
                msgs.append(rec["response"]["choices"][0]["message"])
                if turn == 0:
                    msgs.append({"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"})
                else:
                    msgs.append({"role": "user", "content": f"and then {turn}?"})
            # A lone request in between, another session.
            sup.http_request(p.url + "/v1/completions", "POST", {"model": "m", "prompt": "alone", "max_tokens": 3})
        recorded = sup.exchanges(db)
        fake_upstream.STATE["received"].clear()
        out = os.path.join(self.tmp, "replay.json")
        r = sup.run_stet("replay", db, "--endpoint", self.up.url, "--json", out, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rep = sup.read_json(out)
        self.assertEqual((rep["identical"], rep["sessions"]), (4, 2))
        self.assertEqual([e["session"] for e in rep["exchanges"]], [1, 1, 1, 2])
        self.assertEqual([e["turn"] for e in rep["exchanges"]], [1, 2, 3, 1])
        # What was sent is what was recorded (streaming off): no tool ran, no message was rebuilt.
        sent = [b for path, b in fake_upstream.STATE["received"] if path == "/v1/chat/completions"]
        sent.sort(key=lambda b: len(b["messages"]))
        for rec, body in zip(recorded[:3], sent):
            expect = dict(rec["request"])
            expect.pop("stream")
            self.assertEqual(body, expect)
        # The backend changes for long conversations, and its model and fingerprint change.
        fake_upstream.STATE.update(salt_from_messages=4, model="fake-model-2024-06-01", fp="fp_fake0002")
        try:
            r = sup.run_stet("replay", db, "--endpoint", self.up.url, "--json", out, timeout=60)
        finally:
            fake_upstream.STATE.update(salt_from_messages=0, model="fake-model-2024-01-01", fp="fp_fake0001")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rep = sup.read_json(out)
        self.assertTrue(rep["model_changed"] and rep["fingerprint_changed"])
        verdicts = [e["verdict"] for e in rep["exchanges"]]
        self.assertEqual(verdicts, ["identical", "diverged", "diverged", "identical"])
        d = rep["exchanges"][1]["departure"]
        self.assertEqual(d["kind"], "token")
        self.assertTrue(rep["exchanges"][1]["compared_tokens"])
        self.assertIn("session 1 (3 requests): departs first at turn 2", r.stdout)
        self.assertIn("[model fake-model-2024-01-01 -> fake-model-2024-06-01]", r.stdout)

    def test_bad_command_lines(self):
        for args in [["--upstream", "ftp://x", "--record", "x.db"], ["--upstream", "http://h", "--record", "x.db",
                                                                     "--logprob-sample", "2"],
                     ["--upstream", "http://h", "--record", "x.db", "--redact", "request.[x]"],
                     ["--upstream", "http://h", "--record", "x.db", "--retain", "30 days"],
                     ["--upstream", "http://h", "--record", "x.db", "--api-key", "k"],
                     ["--upstream", "http://h", "--record", "x.db", "--upstream-key-env", "STET_TEST_UNSET_VAR"]]:
            p = sup.run_stet("proxy", *args, "--port", "0", timeout=30)
            self.assertEqual(p.returncode, 2, (args, p.stderr))


class ProxyVsStet(unittest.TestCase):
    """stet serve as the upstream: what the proxy relays is what stet answers, token for token."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stet-e2e-proxy-stet-")
        cls.server = sup.StetServer(sup.stories_path(), threads=1)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_same_answers_through_the_proxy(self):
        db = os.path.join(self.tmp, "stet.db")
        s = self.server
        with sup.StetProxy(s.url, db, "--no-log") as p:
            cases = [("/v1/completions", {"model": s.model, "prompt": "Once upon a time", "max_tokens": 12, "seed": 3,
                                          "logprobs": 2}),
                     ("/v1/chat/completions", {"model": s.model, "max_tokens": 10, "seed": 5,
                                               "messages": [{"role": "user", "content": "Tell me a story"}]})]
            for path, body in cases:
                for stream in (False, True):
                    b = dict(body, stream=stream)
                    st1, _, direct = sup.http_request(s.url + path, "POST", b)
                    st2, h, relayed = sup.http_request(p.url + path, "POST", b)
                    self.assertEqual((st1, st2), (200, 200))
                    if stream:
                        e1, d1 = sse_lines(direct)
                        e2, d2 = sse_lines(relayed)
                        self.assertTrue(d1 and d2)
                        strip = lambda evs: [{k: v for k, v in e.items() if k not in ("id", "created")} for e in evs]
                        self.assertEqual(strip(e1), strip(e2))
                        text = "".join((c.get("delta") or {}).get("content") or c.get("text") or ""
                                       for e in e2 for c in e["choices"])
                    else:
                        a1, a2 = json.loads(direct), json.loads(relayed)
                        for a in (a1, a2):  # ids, times and prefix-cache hits differ between two requests
                            a.pop("id")
                            a.pop("created")
                            a["usage"].pop("prompt_tokens_details", None)
                        self.assertEqual(a1, a2)
                        c = a2["choices"][0]
                        text = c["message"]["content"] if "message" in c else c["text"]
                    rec = [r for r in sup.exchanges(db) if r["id"] == h["x-stet-exchange-id"]][0]
                    self.assertEqual(rec["system_fingerprint"], s.fingerprint)
                    c = rec["response"]["choices"][0]
                    self.assertEqual(c["message"]["content"] if "message" in c else c["text"], text)
            st, h, raw = sup.http_request(p.url + "/v1/completions", "POST", {"model": "nope", "prompt": "x"})
            self.assertEqual(st, 404)
            self.assertEqual(json.loads(raw)["error"]["code"], "model_not_found")
        # Replayed against stet itself: every answered exchange identical, token by token where logprobs were asked.
        r = sup.run_stet("replay", db, "--endpoint", s.url, "--json", os.path.join(self.tmp, "r.json"), timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rep = sup.read_json(os.path.join(self.tmp, "r.json"))
        self.assertEqual((rep["identical"], rep["skipped"]), (4, 1))
        self.assertEqual([e["compared_tokens"] for e in rep["exchanges"]], [True, True, False, False])
        self.assertFalse(rep["model_changed"] or rep["fingerprint_changed"])
        # The same store against an in-process stet on the same file ("what would this model have
        # said"), with the recorded instant pinned: the same answers, no endpoint needed.
        out = os.path.join(self.tmp, "r2.json")
        r = sup.run_stet("replay", db, "--against", "stet", "-m", sup.stories_path(), "-t", "1",
                         "--clock", "recorded", "--json", out, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("answering with", r.stderr)
        rep = sup.read_json(out)
        self.assertEqual((rep["identical"], rep["skipped"]), (4, 1))
        self.assertFalse(rep["fingerprint_changed"])
        # Another file of the model (a q8_0 copy): the report says the fingerprint moved.
        other = os.path.join(self.tmp, "stories-q8_0.gguf")
        sup.quantize(sup.stories_path(), other, "q8_0")
        r = sup.run_stet("replay", db, "--against", "stet", "-m", other, "-t", "1", "--json", out,
                         timeout=120)
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        self.assertTrue(sup.read_json(out)["fingerprint_changed"])
        # Usage errors: both an endpoint and --against, neither, an unknown --against or --clock.
        for args in (["--endpoint", s.url, "--against", "stet"], [], ["--against", "vllm"],
                     ["--endpoint", s.url, "--clock", "tomorrow"]):
            r = sup.run_stet("replay", db, *args, timeout=30)
            self.assertEqual(r.returncode, 2, (args, r.stdout + r.stderr))
        r = sup.run_stet("replay", os.path.join(self.tmp, "missing.db"), "--against", "stet", timeout=30)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertNotIn("answering with", r.stderr)  # the store is checked before a model loads


if __name__ == "__main__":
    unittest.main()

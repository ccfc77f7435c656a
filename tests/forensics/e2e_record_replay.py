"""End-to-end: `stet serve --record`, `stet replay`, `stet record export/import`
on stories260K (tests/forensics/e2e_support.py starts the servers).

- A session (completions and chat, streamed and not, seeded and unseeded
  sampling, n > 1, several prompts, echo, a tool result in the messages, a
  frozen clock) is recorded, then replayed against a fresh server with other
  threads, batch limits and chunk size while companion traffic runs: every
  record must come back identical, token ids and logprobs bit for bit.
- Replayed against the same model quantized to Q8_0 (another fingerprint),
  replay refuses (exit 2) and sends nothing; with --allow-fingerprint-change
  it reports the divergences (exit 1).
"""
import calendar
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402

CLOCK = "2031-02-03T04:05:06Z"
TOOL_MESSAGES = [
    {"role": "system", "content": "You tell short stories."},
    {"role": "user", "content": "What is the weather in the story town?"},
    {"role": "assistant", "content": "",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "weather", "arguments": "{\"town\": \"Oak\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\": \"sunny\", \"temp_c\": 21}"},
    {"role": "user", "content": "Tell me a story about that day."},
]


def session(server):
    """Sends the recorded session; returns {id: what the client saw}."""
    m = server.model
    bodies = [
        ("/v1/completions", {"model": m, "prompt": "Once upon a time", "max_tokens": 24, "temperature": 0,
                             "logprobs": 3}),
        ("/v1/completions", {"model": m, "prompt": "The little dog", "max_tokens": 20, "temperature": 0.9,
                             "n": 2, "logprobs": 1}),  # no seed: the server draws one and records it
        ("/v1/completions", {"model": m, "prompt": ["Lily saw a", "Ben and his mom"], "max_tokens": 16,
                             "temperature": 0.7, "top_p": 0.9, "seed": 7}),
        ("/v1/completions", {"model": m, "prompt": "Tim went to the park", "max_tokens": 18, "temperature": 1.0,
                             "stream": True, "stream_options": {"include_usage": True}}),
        ("/v1/completions", {"model": m, "prompt": "The sun", "max_tokens": 8, "echo": True, "logprobs": 2,
                             "temperature": 0.5, "seed": 3, "frequency_penalty": 0.5}),
        ("/v1/chat/completions", {"model": m, "messages": TOOL_MESSAGES, "max_tokens": 24, "temperature": 0.8,
                                  "logprobs": True, "top_logprobs": 2, "metadata": {"stet_clock": CLOCK}}),
        ("/v1/chat/completions", {"model": m, "messages": [{"role": "user", "content": "Tell me about a cat."}],
                                  "max_tokens": 20, "temperature": 0.6, "stream": True}),
    ]
    seen = {}
    lock = threading.Lock()

    def send(path, body):
        status, resp = server.post(path, body)
        assert status == 200, (status, resp)
        if body.get("stream"):
            events, done = sup.sse_events(resp)
            assert done, "stream without [DONE]"
            rid = events[0]["id"]
        else:
            rid = resp["id"]
        with lock:
            seen[rid] = (path, body, resp)

    # The first two alone, the rest three at a time (the recording itself is under load too).
    for path, body in bodies[:2]:
        send(path, body)
    threads = [threading.Thread(target=send, args=pb) for pb in bodies[2:]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(seen) == len(bodies), seen.keys()
    return seen


class RecordReplay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stet-e2e-rec-")
        cls.model = sup.stories_path()
        cls.db = os.path.join(cls.tmp, "session.db")
        try:
            with sup.StetServer(cls.model, "--record", cls.db, threads=1) as s:
                cls.recorded_fp = s.fingerprint
                cls.model_name = s.model
                cls.seen = session(s)
            cls.q8 = sup.quantize(cls.model, os.path.join(cls.tmp, "stories-q8.gguf"), "q8_0")
        except BaseException:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def records(self, db=None):
        con = sqlite3.connect(db or self.db)
        try:
            return {rid: json.loads(text) for rid, text in con.execute("SELECT id, record FROM records ORDER BY seq")}
        finally:
            con.close()

    def test_records_hold_what_shaped_each_answer(self):
        con = sqlite3.connect(self.db)
        self.assertEqual(con.execute("PRAGMA journal_mode").fetchone()[0], "wal")
        self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        con.close()
        recs = self.records()
        self.assertEqual(set(recs), set(self.seen))
        for rid, r in recs.items():
            path, body, resp = self.seen[rid]
            self.assertEqual(r["schema"], "stet.record/1")
            self.assertEqual(r["endpoint"], path)
            self.assertEqual(r["system_fingerprint"], self.recorded_fp)
            self.assertEqual(len(r["model_sha256"]), 64)
            self.assertEqual(r["request"], body)  # the body as sent, key order included
            self.assertEqual(r["seed_generated"], "seed" not in body)
            if "seed" in body:
                self.assertEqual(r["seed"], body["seed"])
            self.assertTrue(all(len(p) > 0 for p in r["prompt_token_ids"]))
            for c in r["choices"]:
                self.assertEqual(len(c["token_ids"]), len(c["logprobs"]))
                self.assertEqual(len(c["token_ids"]), len(c["tokens"]))
                self.assertIn(c["finish_reason"], ("stop", "length"))
            if not body.get("stream"):
                self.assertEqual(r["seed"], resp["seed"])
                texts = [c.get("text", c.get("message", {}).get("content")) for c in resp["choices"]]
                if body.get("echo"):
                    texts = [t[len(body["prompt"]):] for t in texts]
                self.assertEqual([c["text"] for c in r["choices"]], texts)
            if path == "/v1/chat/completions":
                self.assertEqual(len(r["chat_template_sha256"]), 64)
                self.assertIn("rendered_prompt", r)
        chat = [r for r in recs.values() if r["endpoint"] == "/v1/chat/completions"]
        clocked = [r for r in chat if "metadata" in r["request"]]
        self.assertEqual(clocked[0]["clock"], {"unix": calendar.timegm((2031, 2, 3, 4, 5, 6)), "utc": CLOCK, "source": "metadata.stet_clock"})
        self.assertIn("sunny", clocked[0]["rendered_prompt"])  # the tool result is part of what was rendered
        unclocked = [r for r in chat if "metadata" not in r["request"]]
        self.assertEqual(unclocked[0]["clock"]["source"], "server clock")

    def test_replay_is_identical_under_other_load_and_settings(self):
        # Other thread count, batch limits and prefill chunking, with companion traffic.
        with sup.StetServer(self.model, "--max-seqs", "6", "--batch-tokens", "40", "--chunk", "5",
                            threads=2) as s:
            self.assertEqual(s.fingerprint, self.recorded_fp)
            load = sup.Load(s, workers=2)
            try:
                out = os.path.join(self.tmp, "replay.json")
                p = sup.run_stet("replay", self.db, "--endpoint", s.url, "-c", "3", "--json", out)
                p2 = sup.run_stet("replay", self.db, "--endpoint", s.url, "--logprobs", "-c", "2")
            finally:
                load.stop()
            self.assertGreater(load.sent, 0)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p2.returncode, 0, p2.stdout + p2.stderr)
        rep = sup.read_json(out)
        self.assertEqual(rep["identical"], len(self.seen))
        for o in rep["records"]:
            self.assertEqual(o["verdict"], "identical", o)
            self.assertTrue(o["token_ids_compared"], o)
        # Records whose request asked for logprobs had them compared bit for bit.
        with_lp = {rid for rid, (_, b, _) in self.seen.items() if b.get("logprobs") not in (None, False)}
        self.assertTrue(with_lp)
        for o in rep["records"]:
            self.assertEqual(o["logprobs_compared"], o["id"] in with_lp, o)
        self.assertIn("logprobs bit for bit", p2.stdout)
        self.assertNotIn("no logprobs in the answer", p2.stdout)
        print(f"replay under load ({load.sent} companion requests): " + p.stdout.strip().splitlines()[-1])

    def test_replay_one_record_and_since(self):
        with sup.StetServer(self.model) as s:
            rid = sorted(self.seen)[0]
            p = sup.run_stet("replay", self.db, "--endpoint", s.url, "--id", rid, check=0)
            self.assertIn(f"{rid}  identical", p.stdout)
            self.assertIn("1 of 1 identical", p.stdout)
            p = sup.run_stet("replay", self.db, "--endpoint", s.url, "--id", "cmpl-nope")
            self.assertEqual(p.returncode, 2)
            self.assertIn("no record with id", p.stderr)
            p = sup.run_stet("replay", self.db, "--endpoint", s.url, "--since", "2999-01-01T00:00:00Z")
            self.assertEqual(p.returncode, 2)
            p = sup.run_stet("replay", self.db, "--endpoint", s.url, "--since", "2000-01-01T00:00:00+02:00", check=0)
            self.assertIn(f"{len(self.seen)} of {len(self.seen)} identical", p.stdout)

    def test_refuses_other_fingerprint_and_reports_divergence_when_allowed(self):
        with sup.StetServer(self.q8) as s:
            self.assertNotEqual(s.fingerprint, self.recorded_fp)
            before = s.get("/v1/models")
            p = sup.run_stet("replay", self.db, "--endpoint", s.url, "--model", s.model)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn("refused", p.stderr)
            self.assertIn(s.fingerprint, p.stderr)
            self.assertIn("--allow-fingerprint-change", p.stderr)
            metrics = urllib_get(s.url + "/metrics")
            self.assertNotIn('endpoint="/v1/completions"', metrics)  # nothing was sent
            out = os.path.join(self.tmp, "q8.json")
            p = sup.run_stet("replay", self.db, "--endpoint", s.url, "--model", s.model,
                             "--allow-fingerprint-change", "--json", out)
            self.assertIsNotNone(before)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        rep = sup.read_json(out)
        self.assertEqual(rep["errors"], 0, rep)
        self.assertEqual(rep["refused"], 0, rep)
        self.assertGreaterEqual(rep["diverged"], 1)
        kinds = {}
        for o in rep["records"]:
            self.assertEqual(o["replayed_fingerprint"], rep["endpoint_fingerprint"])
            if o["verdict"] == "diverged":
                d = o["divergence"]
                kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
                self.assertIn(d["kind"], ("token", "logprob", "top_logprobs", "text", "finish_reason"))
                if d["kind"] == "token":
                    self.assertIsNotNone(d["recorded_id"] if d["recorded_value"] == "" else 0)
                if d["kind"] == "logprob":
                    self.assertNotEqual(d["recorded_logprob"], d["replayed_logprob"])
        # Every record whose answer carries logprobs must show the quantization: Q8_0 moves every logit.
        for o in rep["records"]:
            if o["logprobs_compared"]:
                self.assertEqual(o["verdict"], "diverged", o)
        self.assertIn("diverged", p.stdout)
        print("replay against Q8_0 with --allow-fingerprint-change: " + p.stdout.strip().splitlines()[-1] +
              f"; first divergences by kind: {kinds}")

    def test_export_import_roundtrip(self):
        jl = os.path.join(self.tmp, "cassette.jsonl")
        sup.run_stet("record", "export", self.db, "-o", jl, check=0)
        lines = [json.loads(x) for x in sup.read(jl).splitlines() if x.strip()]
        self.assertEqual(len(lines), len(self.seen))
        db2 = os.path.join(self.tmp, "imported.db")
        p = sup.run_stet("record", "import", jl, db2, check=0)
        self.assertIn(f"imported {len(self.seen)} record(s)", p.stderr)
        p = sup.run_stet("record", "import", jl, db2, check=0)
        self.assertIn(f"imported 0 record(s)", p.stderr)
        self.assertIn(f"{len(self.seen)} already present", p.stderr)
        self.assertEqual(self.records(db2), self.records())
        jl2 = os.path.join(self.tmp, "cassette2.jsonl")
        sup.run_stet("record", "export", db2, "-o", jl2, check=0)
        self.assertEqual(sup.read(jl), sup.read(jl2))
        bad = os.path.join(self.tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write(sup.read(jl).splitlines()[0] + "\n")
            f.write('{"schema": "stet.record/1", "id": "x"}\n')
        p = sup.run_stet("record", "import", bad, os.path.join(self.tmp, "bad.db"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("bad.jsonl:2:", p.stderr)
        p = sup.run_stet("replay", jl, "--endpoint", "http://127.0.0.1:9")
        self.assertEqual(p.returncode, 2)


def urllib_get(url):
    import urllib.request
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


if __name__ == "__main__":
    unittest.main()

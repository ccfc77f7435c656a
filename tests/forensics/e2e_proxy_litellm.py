"""End-to-end: `stet proxy` in front of a third-party OpenAI-compatible gateway,
LiteLLM's proxy (PyPI `litellm[proxy]`, installed by scripts/setup in its own
venv), which itself forwards to `stet serve` on stories260K:

  openai client -> stet proxy --record STORE -> litellm proxy -> stet serve

LiteLLM rewrites ids, headers, chunking and the model name, so this checks the
proxy's records of an upstream that is not stet: the request as sent, the
answer as the client received it (streamed chunks folded), the model LiteLLM
answers with, status codes, a LiteLLM error passed through with its body, and
`stet replay` of the store against LiteLLM.

LiteLLM is found at $STET_LITELLM, ~/.cache/stet/venv-litellm/bin/litellm or
on PATH. Outside CI a missing LiteLLM skips (exit 77, with a line saying so);
in CI (CI=true) it fails.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402
from stet_server import require_openai  # noqa: E402

ALIAS = "stories-via-litellm"


def litellm_binary():
    cands = [os.environ.get("STET_LITELLM"),
             os.path.expanduser("~/.cache/stet/venv-litellm/bin/litellm"), shutil.which("litellm")]
    for c in cands:
        if c and os.path.exists(c):
            return c
    sup.require(False, "LiteLLM's proxy (`litellm`; scripts/setup installs litellm[proxy] in "
                       "~/.cache/stet/venv-litellm, or set STET_LITELLM)")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class LiteLLM:
    """A LiteLLM proxy on 127.0.0.1 serving ALIAS as `openai/<model>` at `upstream`/v1, offline."""

    def __init__(self, binary, upstream, model, tmp):
        self.port = free_port()
        # LiteLLM refuses to start without a master key; clients send it, stet proxy forwards it.
        self.key = "sk-stet-" + os.urandom(16).hex()
        self.url = f"http://127.0.0.1:{self.port}"
        cfg = os.path.join(tmp, "litellm.yaml")
        with open(cfg, "w") as f:
            f.write(f"model_list:\n  - model_name: {ALIAS}\n    litellm_params:\n"
                    f"      model: openai/{model}\n      api_base: {upstream}/v1\n      api_key: none\n"
                    "litellm_settings:\n  telemetry: false\n  num_retries: 0\n"
                    f"general_settings:\n  master_key: {self.key}\n")
        env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_TELEMETRY="False",
                   NO_PROXY="*", no_proxy="*")
        for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "DATABASE_URL", "LITELLM_MASTER_KEY"):
            env.pop(k, None)
        self.log = open(os.path.join(tmp, "litellm.log"), "w+")
        self.proc = subprocess.Popen([binary, "--config", cfg, "--host", "127.0.0.1", "--port", str(self.port),
                                      "--num_workers", "1"], stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        self.startup_s = self._wait_ready(300)  # 20 s idle; minutes on a loaded 2-core machine

    def _wait_ready(self, timeout):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.proc.poll() is not None:
                break
            try:
                st, _, _ = sup.http_request(self.url + "/health/liveliness", timeout=2)
                if st == 200:
                    return time.time() - t0
            except OSError:
                pass
            time.sleep(0.5)
        self.log.seek(0)
        text = self.log.read()[-4000:]
        self.stop()
        raise RuntimeError("LiteLLM did not start:\n" + text)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self.log.close()


def folded_chat(chunks):
    text = "".join((c.choices[0].delta.content or "") for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    return text, finish[-1] if finish else None


class ProxyVsLiteLLM(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_openai()
        binary = litellm_binary()
        cls.tmp = tempfile.mkdtemp(prefix="stet-e2e-proxy-litellm-")
        cls.server = sup.StetServer(sup.stories_path(), threads=1)
        try:
            cls.litellm = LiteLLM(binary, cls.server.url, cls.server.model, cls.tmp)
        except Exception:
            cls.server.stop()
            raise
        print(f"LiteLLM ready in {cls.litellm.startup_s:.1f} s", file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.litellm.stop()
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def record(self, db, xid):
        recs = [r for r in sup.exchanges(db) if r["id"] == xid]
        self.assertEqual(len(recs), 1, f"exchange {xid} recorded once")
        return recs[0]

    def test_records_of_litellm_answers_and_replay(self):
        import openai
        db = os.path.join(self.tmp, "litellm.db")
        with sup.StetProxy(self.litellm.url, db, "--no-log") as p:
            client = openai.OpenAI(base_url=p.url + "/v1", api_key=self.litellm.key, max_retries=0, timeout=120)
            msgs = [{"role": "user", "content": "Tell me a story"}]

            # Non-streamed chat: the record holds the body as sent and the answer as received.
            raw = client.chat.completions.with_raw_response.create(model=ALIAS, messages=msgs, max_tokens=10, seed=5)
            answer = raw.parse()
            got = json.loads(raw.http_response.content)
            rec = self.record(db, raw.headers["x-stet-exchange-id"])
            self.assertEqual((rec["status"], rec["outcome"], rec["stream"]), (200, "ok", False))
            self.assertEqual(rec["endpoint"], "/v1/chat/completions")
            self.assertEqual(rec["request"], {"model": ALIAS, "messages": msgs, "max_tokens": 10, "seed": 5})
            self.assertEqual(rec["response"], got)
            self.assertEqual(rec["model_requested"], ALIAS)
            self.assertEqual(rec["model_answered"], answer.model)
            # LiteLLM answers under its route's name, not stet's; stet's fingerprint passes through.
            self.assertEqual(answer.model, ALIAS)
            self.assertNotEqual(ALIAS, self.server.model)
            self.assertEqual(rec["system_fingerprint"], self.server.fingerprint)
            self.assertTrue(answer.choices[0].message.content)
            # The words are stet's: LiteLLM relays what stet serve says to the same request.
            st, direct = self.server.post("/v1/chat/completions", {"model": self.server.model, "messages": msgs,
                                                               "max_tokens": 10, "seed": 5})
            self.assertEqual(st, 200, direct)
            self.assertEqual(answer.choices[0].message.content, direct["choices"][0]["message"]["content"])

            # Streamed chat: LiteLLM re-chunks; the record folds the chunks into one message.
            with client.chat.completions.with_streaming_response.create(
                    model=ALIAS, messages=msgs, max_tokens=10, seed=5, stream=True) as s:
                xid_stream = s.headers["x-stet-exchange-id"]
                chunks = list(s.parse())
            text, finish = folded_chat(chunks)
            self.assertEqual(text, answer.choices[0].message.content)
            rec = self.record(db, xid_stream)
            self.assertEqual((rec["status"], rec["outcome"], rec["stream"]), (200, "ok", True))
            self.assertTrue(rec["request"]["stream"])
            self.assertEqual(rec["response"]["choices"][0]["message"]["content"], text)
            self.assertEqual(rec["response"]["choices"][0]["finish_reason"], finish)
            self.assertEqual(rec["model_answered"], chunks[0].model)
            self.assertIsNotNone(rec["ttft_ms"])

            # Completions, as LiteLLM passes them on.
            raw = client.completions.with_raw_response.create(model=ALIAS, prompt="Once upon a time",
                                                              max_tokens=8, seed=3)
            comp = raw.parse()
            rec = self.record(db, raw.headers["x-stet-exchange-id"])
            self.assertEqual((rec["status"], rec["endpoint"]), (200, "/v1/completions"))
            self.assertEqual(rec["response"]["choices"][0]["text"], comp.choices[0].text)
            self.assertEqual(rec["model_answered"], comp.model)

            # LiteLLM's own error (a model it does not route) passes through with its body.
            with self.assertRaises(openai.APIStatusError) as cm:
                client.chat.completions.create(model="no-such-model", messages=msgs, max_tokens=3)
            err = cm.exception.response
            self.assertTrue(400 <= err.status_code < 500, err.status_code)
            rec = self.record(db, err.headers["x-stet-exchange-id"])
            self.assertEqual((rec["status"], rec["upstream_status"], rec["outcome"]),
                             (err.status_code, err.status_code, "upstream_error"))
            self.assertEqual(rec["response"], json.loads(err.content))
            self.assertIn("no-such-model", json.dumps(rec["response"]))
        recs = sup.exchanges(db)
        self.assertEqual(len(recs), 4)
        print("recorded (status, model_answered, system_fingerprint): "
              f"{[(r['status'], r['model_answered'], r['system_fingerprint']) for r in recs]}", file=sys.stderr)
        with open(db, "rb") as f:
            self.assertNotIn(self.litellm.key.encode(), f.read(), "the key is not stored")

        # Replay against LiteLLM: the three answered exchanges again, the error not replayable.
        out = os.path.join(self.tmp, "replay.json")
        t0 = time.time()
        r = sup.run_stet("replay", db, "--endpoint", self.litellm.url, "--api-key", self.litellm.key, "--json", out, timeout=120)
        print(f"replay through LiteLLM: {time.time() - t0:.1f} s\n{r.stdout}", file=sys.stderr)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rep = sup.read_json(out)
        self.assertEqual((rep["identical"], rep["skipped"]), (3, 1), rep)
        self.assertFalse(rep["model_changed"])


if __name__ == "__main__":
    unittest.main()

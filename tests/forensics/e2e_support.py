"""Harness for the forensics end-to-end tests: starts `stet serve` on a free
loopback port (--port 0; the port is read from its "listening on" line), sends
requests with the standard library only, runs `stet` subcommands, and makes
quantized copies of stories260K with `stet quantize`.

Missing material (the stet binary, the stories260K model) skips a test module
with exit code 77 outside CI and FAILS it in CI (CI=true).
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
# The material checks are the server tests' (tests/server/stet_server.py).
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from stet_server import SKIP, in_ci, require, stet_binary, stories_path  # noqa: E402,F401


def read(path):
    with open(path) as f:
        return f.read()


def read_json(path):
    return json.loads(read(path))


def run_stet(*args, timeout=300, check=None):
    """Runs `stet ARGS`; returns CompletedProcess (text). check: expected exit code."""
    p = subprocess.run([stet_binary(), *map(str, args)], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError(f"stet {' '.join(map(str, args))} exited {p.returncode}, expected {check}\n"
                             f"stdout:\n{p.stdout[-4000:]}\nstderr:\n{p.stderr[-4000:]}")
    return p


def quantize(src, dst, qtype):
    run_stet("quantize", "-m", src, "-o", dst, "--type", qtype, check=0)
    return dst


class StetServer:
    """A `stet serve` process on 127.0.0.1 with an OS-chosen port."""

    def __init__(self, model, *args, threads=1):
        self.cmd = [stet_binary(), "serve", "-m", model, "--host", "127.0.0.1", "--port", "0",
                    "-t", str(threads), "--no-log", *map(str, args)]
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        self.lines = []
        self.port = None
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self.ready.wait(120) or self.port is None:
            self.kill()
            raise RuntimeError("stet serve did not become ready:\n" + "\n".join(self.lines[-30:]))
        self.url = f"http://127.0.0.1:{self.port}"
        self.model = self.get("/v1/models")["data"][0]["id"]
        self.fingerprint = self.get("/v1/models")["data"][0]["system_fingerprint"]

    def _read(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            m = re.match(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                self.ready.set()
        self.ready.set()

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=60) as r:
            return json.loads(r.read())

    def post(self, path, body, timeout=120):
        """POSTs JSON; returns (status, parsed body or SSE text)."""
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                data = r.read().decode("utf-8")
                if r.headers.get("Content-Type", "").startswith("text/event-stream"):
                    return r.status, data
                return r.status, json.loads(data)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self._close()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._close()

    def _close(self):
        self._reader.join(10)
        if self.proc.stderr:
            self.proc.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def sse_events(text):
    """The JSON events of an SSE body, up to [DONE]; also whether [DONE] came."""
    events, done = [], False
    for block in text.split("\n\n"):
        if not block.startswith("data: "):
            continue
        data = block[len("data: "):]
        if data == "[DONE]":
            done = True
            break
        events.append(json.loads(data))
    return events, done


class Load:
    """Companion traffic: `workers` threads sending other prompts of other
    lengths to `server` until stop(), so the requests under test share their
    batches with unrelated work."""

    PROMPTS = ["Once upon a time, there was a little dog", "The sun was hot and the kids",
               "Lily and Ben went to the park. They saw", "One day a big bird", "Tom had a red ball."]

    def __init__(self, server, workers=3):
        self.server = server
        self.stopped = threading.Event()
        self.sent = 0
        self.threads = [threading.Thread(target=self._run, args=(k,), daemon=True) for k in range(workers)]
        for t in self.threads:
            t.start()

    def _run(self, k):
        i = 0
        while not self.stopped.is_set():
            body = {"model": self.server.model, "prompt": self.PROMPTS[(k + i) % len(self.PROMPTS)] * (1 + i % 3),
                    "max_tokens": 8 + (7 * i + 5 * k) % 40, "temperature": 0.8, "seed": i}
            try:
                self.server.post("/v1/completions", body)
                self.sent += 1
            except Exception:  # the server may be going away at the end of a test
                pass
            i += 1

    def stop(self):
        self.stopped.set()
        for t in self.threads:
            t.join(60)


class StetProxy:
    """A `stet proxy` process on 127.0.0.1 with an OS-chosen port, in front of `upstream`."""

    def __init__(self, upstream, store, *args, env=None):
        self.cmd = [stet_binary(), "proxy", "--upstream", upstream, "--record", store, "--host", "127.0.0.1",
                    "--port", "0", *map(str, args)]
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env)
        self.lines = []
        self.port = None
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self.ready.wait(30) or self.port is None:
            self.kill()
            raise RuntimeError("stet proxy did not start:\n" + "\n".join(self.lines[-30:]))
        self.url = f"http://127.0.0.1:{self.port}"

    def _read(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            m = re.match(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                self.ready.set()
        self.ready.set()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self._reader.join(10)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._reader.join(10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def http_request(url, method="GET", body=None, headers=None, timeout=60):
    """(status, headers dict (lower-case names), body bytes); HTTP errors are answers, not exceptions."""
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    h = {"Content-Type": "application/json"} if data is not None else {}
    h.update(headers or {})
    req = urllib.request.Request(url, data=data, headers=h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def exchanges(store):
    """The records of a SQLite exchange store, in stored order."""
    import sqlite3
    con = sqlite3.connect(store)
    try:
        return [json.loads(r[0]) for r in con.execute("SELECT record FROM exchanges ORDER BY seq")]
    finally:
        con.close()

"""Test harness for `stet serve`: starts the server on a free loopback port
(--port 0; the port is read from the "listening on" line), talks to it with
the official `openai` client or raw HTTP, parses /metrics, and stops it.

Missing material (the openai package, a model file) skips a test module with
exit code 77 outside CI and fails it in CI (CI=true), like the C++ tests'
STET_REQUIRE_FILE.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


def in_ci():
    return os.environ.get("CI") == "true"


def require(ok, what):
    """Skips the whole module (exit 77) outside CI, fails it in CI."""
    if ok:
        return
    if in_ci():
        print(f"FAIL: required test material missing: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: test material not present: {what}", file=sys.stderr)
    sys.exit(SKIP)


def require_openai():
    try:
        import openai  # noqa: F401
    except ImportError:
        require(False, "the Python package 'openai' (scripts/setup installs it)")


def stet_binary():
    b = os.environ.get("STET_BINARY")
    if not b:
        for cand in ("build/bin/stet", "build-server/bin/stet", "build-rec/bin/stet"):
            p = os.path.join(HERE, "..", "..", cand)
            if os.path.exists(p):
                b = p
                break
    require(b and os.path.exists(b), "the stet binary (set STET_BINARY)")
    return b


def stories_file():
    """Where stories260K lies: $STET_SHARED_DIR, else the shared/ beside the checkout.
    tests/python/conftest.py looks here too."""
    shared = os.environ.get("STET_SHARED_DIR", os.path.join(HERE, "..", "..", "..", "shared"))
    return os.path.join(shared, "models", "stories260K", "stories260K.gguf")


def smollm2_file():
    """Where SmolLM2-135M-Instruct Q4_1 lies: $STET_MODEL_CACHE, else the setup cache."""
    cache = os.environ.get("STET_MODEL_CACHE", os.path.expanduser("~/.cache/stet/models"))
    return os.path.join(cache, "SmolLM2-135M-Instruct.Q4_1.gguf")


def stories_path():
    p = stories_file()
    require(os.path.exists(p), p)
    return p


def smollm2_path():
    p = smollm2_file()
    require(os.path.exists(p), p)
    return p


def gemma3_path():
    cache = os.environ.get("STET_MODEL_CACHE", os.path.expanduser("~/.cache/stet/models"))
    p = os.path.join(cache, "gemma-3-270m-q4_k_m.gguf")
    require(os.path.exists(p), p)
    return p


class StetServer:
    """A `stet serve` process on 127.0.0.1 with an OS-chosen port."""

    # Raw HTTP answers of the generation paths are checked too (wire_check.py);
    # a test that sends what no OpenAI server answers may turn it off.
    check_wire = True

    def __init__(self, model, *args, wait=True, host="127.0.0.1", launcher=(), env=None):
        """launcher: a command the server runs under (["mpirun", "-np", "2"])."""
        self.host = host
        self.cmd = [*launcher, stet_binary(), "serve", "-m", model, "--host", host, "--port", "0",
                    *args]
        # /metrics needs the key when the server has one (unless --metrics-public).
        self.api_key = args[args.index("--api-key") + 1] if "--api-key" in args else None
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE,
                                     env=None if env is None else {**os.environ, **env})
        self._lines = []
        self._cv = threading.Condition()
        self.port = None
        self.ready = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if wait:
            self.wait_ready()

    def _read(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._cv:
                self._lines.append(line)
                m = re.search(r"http://" + re.escape(self.host) + r":(\d+)", line)
                if m and self.port is None:
                    self.port = int(m.group(1))
                if line.startswith("listening on "):
                    self.ready = True
                self._cv.notify_all()
        with self._cv:
            self._cv.notify_all()

    def wait_for(self, pred, timeout=120):
        deadline = time.time() + timeout
        with self._cv:
            while not pred():
                left = deadline - time.time()
                if left <= 0 or (self.proc.poll() is not None and not pred()):
                    return pred()
                self._cv.wait(min(left, 0.2))
            return True

    def wait_ready(self, timeout=120):
        if not self.wait_for(lambda: self.ready, timeout):
            self.kill()
            raise RuntimeError("stet serve did not become ready:\n" + "\n".join(self._lines[-30:]))

    def lines(self):
        with self._cv:
            return list(self._lines)

    def request_logs(self):
        out = []
        for line in self.lines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    @property
    def url(self):
        return f"http://{self.host}:{self.port}"

    def client(self, api_key="none", **kw):
        """An openai client whose every answer is checked against the package's
        own types (wire_check.py)."""
        import openai
        import wire_check
        httpx = wire_check.httpx
        timeout = kw.pop("timeout", 300)
        if "http_client" not in kw:
            kw["http_client"] = httpx.Client(transport=wire_check.CheckingTransport(),
                                             timeout=timeout)
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, max_retries=0,
                             timeout=timeout, **kw)

    def http(self, method, path, body=None, headers=None, timeout=60):
        """Raw HTTP: returns (status, headers dict (lower-case keys), body bytes)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            elif isinstance(body, str):
                body = body.encode()
            h = {"Content-Type": "application/json"}
            h.update(headers or {})
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            data = r.read()
            if method == "POST" and self.check_wire:
                import wire_check
                wire_check.check_body(path, r.status, r.getheader("Content-Type"), data)
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            conn.close()

    def post(self, path, body, headers=None):
        status, hdrs, data = self.http("POST", path, body, headers)
        try:
            return status, json.loads(data)
        except ValueError:
            return status, data

    def metrics_text(self):
        auth = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else None
        status, _, data = self.http("GET", "/metrics", headers=auth)
        assert status == 200, status
        return data.decode()

    def metrics(self):
        """{(name, frozenset(labels)): value} of the exposition."""
        return parse_exposition(self.metrics_text())

    def gauge(self, name, **labels):
        return self.metrics().get((name, frozenset(labels.items())))

    def healthy(self):
        try:
            return self.http("GET", "/health", timeout=10)[0] == 200
        except OSError:
            return False

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self._reader.join(timeout=5)
        self.proc.stderr.close()
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=5)
        if not self.proc.stderr.closed:
            self.proc.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()


class ClientTest(unittest.TestCase):
    """One `stet serve MODEL SERVE_ARGS` for all the tests of a class: cls.srv,
    an openai client on it (cls.client) and the served model's id (cls.model)."""

    MODEL = None  # the model file; subclasses set it
    SERVE_ARGS = ("--threads", "2")

    @classmethod
    def setUpClass(cls):
        cls.srv = StetServer(cls.MODEL, *cls.SERVE_ARGS)
        cls.client = cls.srv.client()
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        assert rc == 0, rc


# --- Prometheus text format (0.0.4), checked strictly --------------------------

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
_SAMPLE = re.compile(rf"^({_NAME})(?:\{{(.*)\}})? (\S+)(?: (-?\d+))?$")
_LABEL_PAIR = re.compile(rf'({_LABEL})="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def _parse_value(s):
    if s in ("+Inf", "Inf"):
        return float("inf")
    if s == "-Inf":
        return float("-inf")
    if s == "NaN":
        return float("nan")
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", s):
        raise ValueError(f"bad sample value {s!r}")
    return float(s)


def _parse_labels(text):
    labels = {}
    pos = 0
    while pos < len(text):
        m = _LABEL_PAIR.match(text, pos)
        if not m:
            raise ValueError(f"bad label set {{{text}}}")
        name, value = m.group(1), m.group(2)
        if name in labels:
            raise ValueError(f"duplicate label {name}")
        labels[name] = value.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
        pos = m.end()
        if m.group(3) == "" and pos != len(text):
            raise ValueError(f"bad label set {{{text}}}")
    return labels


def check_exposition(text):
    """Raises ValueError on anything `promtool check metrics` would reject, and
    on its lint findings too: HELP and TYPE for every family, TYPE before the
    samples, one block per family, counters named *_total, histogram buckets
    cumulative with ascending le ending at +Inf == _count, _sum present, no
    other type named *_total, no duplicate series, a final newline."""
    if not text.endswith("\n"):
        raise ValueError("exposition must end with a newline")
    types, helps, seen_series, closed = {}, set(), set(), set()
    current = None
    hist = {}

    def family_of(name):
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[: -len(suffix)] if name.endswith(suffix) else None
            if base and types.get(base) == "histogram":
                return base
        return name

    for n, line in enumerate(text.split("\n")[:-1], 1):
        if not line:
            raise ValueError(f"line {n}: empty line")
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not re.fullmatch(_NAME, name):
                    raise ValueError(f"line {n}: bad metric name {name!r}")
                if parts[1] == "TYPE":
                    if name in types:
                        raise ValueError(f"line {n}: second TYPE for {name}")
                    if len(parts) != 4 or parts[3] not in ("counter", "gauge", "histogram", "summary", "untyped"):
                        raise ValueError(f"line {n}: bad TYPE line")
                    types[name] = parts[3]
                else:
                    if name in helps:
                        raise ValueError(f"line {n}: second HELP for {name}")
                    if len(parts) != 4 or not parts[3].strip():
                        raise ValueError(f"line {n}: empty HELP for {name}")
                    helps.add(name)
                if current != name:
                    if current is not None:
                        closed.add(current)
                    if name in closed:
                        raise ValueError(f"line {n}: family {name} is split")
                    current = name
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError(f"line {n}: not a sample: {line!r}")
        name, labels_text, value = m.group(1), m.group(2) or "", m.group(3)
        labels = _parse_labels(labels_text)
        v = _parse_value(value)
        fam = family_of(name)
        if fam not in types:
            raise ValueError(f"line {n}: sample {name} before its TYPE")
        if fam != current:
            raise ValueError(f"line {n}: sample {name} outside its family block")
        key = (name, frozenset(labels.items()))
        if key in seen_series:
            raise ValueError(f"line {n}: duplicate series {line!r}")
        seen_series.add(key)
        t = types[fam]
        if t == "counter":
            if not name.endswith("_total"):
                raise ValueError(f"line {n}: counter {name} should end in _total")
            if v < 0:
                raise ValueError(f"line {n}: negative counter")
        elif name.endswith("_total"):
            raise ValueError(f"line {n}: non-counter {name} should not end in _total")
        if t == "histogram":
            h = hist.setdefault(fam, {"le": [], "sum": None, "count": None})
            if name.endswith("_bucket"):
                if "le" not in labels:
                    raise ValueError(f"line {n}: bucket without le")
                h["le"].append((_parse_value(labels["le"]), v))
            elif name.endswith("_sum"):
                h["sum"] = v
            elif name.endswith("_count"):
                h["count"] = v
            else:
                raise ValueError(f"line {n}: bad histogram sample {name}")
    for name in types:
        if name not in helps:
            raise ValueError(f"{name} has no HELP")
    for fam, h in hist.items():
        les = [le for le, _ in h["le"]]
        counts = [c for _, c in h["le"]]
        if not les or les[-1] != float("inf"):
            raise ValueError(f"{fam}: no +Inf bucket")
        if les != sorted(les) or len(set(les)) != len(les):
            raise ValueError(f"{fam}: le not ascending")
        if counts != sorted(counts):
            raise ValueError(f"{fam}: buckets not cumulative")
        if h["count"] is None or h["sum"] is None:
            raise ValueError(f"{fam}: _sum or _count missing")
        if counts[-1] != h["count"]:
            raise ValueError(f"{fam}: +Inf bucket {counts[-1]} != _count {h['count']}")


def parse_exposition(text):
    out = {}
    for line in text.split("\n"):
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m:
            out[(m.group(1), frozenset(_parse_labels(m.group(2) or "").items()))] = _parse_value(m.group(3))
    return out


def promtool():
    """The promtool binary if this machine has one ($STET_PROMTOOL or PATH)."""
    import shutil
    p = os.environ.get("STET_PROMTOOL") or shutil.which("promtool")
    return p if p and os.path.exists(p) else None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --- helpers shared by the hostile-input tests -----------------------------

def vm_kib(pid, field):
    """A /proc/PID/status field in KiB (VmRSS, VmHWM, VmSize)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"{field} missing for {pid}")


def report(name, status, secs, srv=None):
    """The "CASE" line each hostile case prints: status, time and the server's VmHWM."""
    rss = f", VmHWM {vm_kib(srv.proc.pid, 'VmHWM') / 1024:.1f} MiB" if srv else ""
    print(f"CASE {name}: {status} in {secs:.2f} s{rss}", flush=True)


def timed_post(srv, path, body, headers=None, timeout=120):
    """(status, the body parsed as JSON where it is JSON, seconds)."""
    t0 = time.time()
    status, _, data = srv.http("POST", path, body, headers=headers, timeout=timeout)
    secs = time.time() - t0
    try:
        data = json.loads(data)
    except ValueError:
        pass
    return status, data, secs


def post_concurrently(srv, path, body, n):
    """n timed_posts of `body` at once: ([(status, data, secs)] in start order, total seconds)."""
    results = [None] * n

    def one(i):
        results[i] = timed_post(srv, path, body)

    t0 = time.time()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.time() - t0


def metric(srv, name):
    """An unlabelled sample of /metrics."""
    for (n, labels), v in srv.metrics().items():
        if n == name and not labels:
            return v
    raise AssertionError(f"{name} not in /metrics")


def poll_until(pred, timeout=15):
    """True once pred() is, polling every 20 ms for at most `timeout` s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()

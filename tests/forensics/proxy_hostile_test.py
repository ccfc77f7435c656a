"""Hostile clients and upstreams against `stet proxy` (issue 25): the proxy
cannot be pointed at another host nor told not to record, fields it reads are
checked as `stet serve` checks them, and upstream answers past
--max-response-bytes end in a 502 (or an error event) with a record marked
truncated, in bounded memory. Each case asserts the status, the time taken and
the proxy's peak RSS (VmHWM).

Two upstreams run in this process: the configured one (echoes what it got and
serves oversized answers on demand) and a "victim" host that must never be
contacted, since only the configured host may get the operator's key.
"""
import json
import os
import socket
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402

UPSTREAM_KEY = "sk-operator-secret"
PROXY_KEY = "px-client-key"
MAX_RESPONSE = 1 << 20  # the proxy's --max-response-bytes here
RSS_LIMIT_KB = 200 * 1024  # a 64 MiB answer must not be held: far below it


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen = []  # (host label, method, path, authorization)

    def log_message(self, *args):
        pass

    def _note(self):
        Upstream.seen.append((self.server.label, self.command, self.path,
                              self.headers.get("Authorization")))

    def _json(self, obj, status=200):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._note()
        self._json({"object": "list", "data": [], "path": self.path})

    def do_POST(self):
        self._note()
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        req = json.loads(raw or b"{}")
        model = req.get("model", "")
        if model == "huge-body":  # a non-streamed answer of 64 MiB
            n = 64 << 20
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b" " * (1 << 16)
            try:
                for _ in range(n // len(chunk)):
                    self.wfile.write(chunk)
            except OSError:
                pass
            return
        if model in ("endless-line", "long-stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                if model == "endless-line":  # one SSE line that never ends
                    data = b"data: " + b"x" * (1 << 16)
                    self._chunk(data)
                    for _ in range(1024):
                        self._chunk(b"x" * (1 << 16))
                else:  # many small complete events, 64 MiB in all
                    ev = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"y" * 4000 + b'"}}]}\n\n'
                    for _ in range((64 << 20) // len(ev)):
                        self._chunk(ev)
                self._chunk(b"")
            except OSError:
                pass
            return
        self._json({"id": "chatcmpl-1", "object": "chat.completion", "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                 "finish_reason": "stop"}]})

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


def start(label):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    srv.label = label
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def raw_request(port, head, body=b"", timeout=30):
    """Sends bytes as they are (request lines no HTTP library would write); returns (status, body)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(head + body)
    data = b""
    while True:
        try:
            got = s.recv(65536)
        except socket.timeout:
            break
        if not got:
            break
        data += got
        if b"\r\n\r\n" in data:
            hdr, _, rest = data.partition(b"\r\n\r\n")
            for line in hdr.split(b"\r\n"):
                if line.lower().startswith(b"content-length:") and len(rest) >= int(line.split(b":")[1]):
                    s.close()
                    return int(data.split(b" ")[1]), rest
    s.close()
    return (int(data.split(b" ")[1]) if data.startswith(b"HTTP/") else 0), data.partition(b"\r\n\r\n")[2]


def peak_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class ProxyHostile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sup.require(sup.stet_binary(), "the stet binary")
        cls.tmp = tempfile.mkdtemp(prefix="stet-proxy-hostile-")
        cls.up = start("configured")
        cls.victim = start("victim")
        cls.store = os.path.join(cls.tmp, "ex.db")
        env = dict(os.environ, UPKEY=UPSTREAM_KEY, STET_PROXY_API_KEY=PROXY_KEY)
        cls.proxy = sup.StetProxy(f"http://127.0.0.1:{cls.up.server_address[1]}/v1", cls.store,
                                  "--upstream-key-env", "UPKEY", "--max-response-bytes", MAX_RESPONSE,
                                  env=env)
        cls.port = cls.proxy.port
        cls.auth = f"Authorization: Bearer {PROXY_KEY}\r\n".encode()

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.up.shutdown()
        cls.victim.shutdown()

    def setUp(self):
        Upstream.seen.clear()
        self.t0 = time.monotonic()

    def tearDown(self):
        self.assertLess(time.monotonic() - self.t0, 20, "a hostile case took too long")
        self.assertLess(peak_rss_kb(self.proxy.proc.pid), RSS_LIMIT_KB, "the proxy's peak RSS")
        self.assertIsNone(self.proxy.proc.poll(), "the proxy died")

    def post(self, target, body, extra=b""):
        data = json.dumps(body).encode()
        head = (b"POST " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + self.auth + extra +
                b"Content-Type: application/json\r\nContent-Length: " + str(len(data)).encode() +
                b"\r\nConnection: close\r\n\r\n")
        return raw_request(self.port, head, data)

    def records(self):
        return sup.exchanges(self.store)

    def test_request_target_cannot_name_another_host(self):
        vport = self.victim.server_address[1]
        for target in [b"@127.0.0.1:%d/models" % vport, b"@127.0.0.1:%d/chat/completions" % vport,
                       b"http://127.0.0.1:%d/v1/models" % vport, b"/../../x", b"/v1/%2e%2e/%2e%2e/x"]:
            for method in (b"GET", b"POST"):
                head = (method + b" " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + self.auth +
                        b"Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n")
                status, body = raw_request(self.port, head, b"{}" if method == b"POST" else b"")
                self.assertIn(status, (400,), (target, status, body[:200]))
        self.assertFalse([s for s in Upstream.seen if s[0] == "victim"], Upstream.seen)
        # The operator's key went nowhere but the configured upstream.
        for label, _, _, auth in Upstream.seen:
            self.assertEqual(label, "configured")

    def test_every_spelling_of_a_route_is_recorded(self):
        before = len(self.records())
        spellings = [b"/v1/chat/completions", b"/v1/./chat/completions", b"/v1//chat/completions",
                     b"/v1/chat/completions/", b"/v1/%2e/chat/completions", b"/v1/x/../chat/completions",
                     b"/v1%2Fchat%2fcompletions", b"/%76%31/chat/completions?x=1"]
        for target in spellings:
            status, body = self.post(target, {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
            self.assertEqual(status, 200, (target, body[:200]))
        recs = self.records()[before:]
        self.assertEqual(len(recs), len(spellings), "an unrecorded spelling")
        self.assertEqual({r["endpoint"] for r in recs}, {"/v1/chat/completions"})
        # What went upstream is the normalized route under the configured base, with the operator's key.
        paths = {p for _, _, p, _ in Upstream.seen}
        self.assertTrue(all(p.startswith("/v1/chat/completions") for p in paths), paths)
        self.assertEqual({a for _, _, _, a in Upstream.seen}, {"Bearer " + UPSTREAM_KEY})

    def test_fields_the_proxy_reads_are_checked_like_serve(self):
        for body, param in [({"model": "m", "messages": [], "stream": None}, None),
                            ({"model": "m", "messages": [], "stream": "yes"}, "stream"),
                            ({"model": "m", "messages": [], "stream": 1}, "stream"),
                            ({"model": "m", "messages": [], "top_logprobs": "5"}, "top_logprobs"),
                            ({"model": "m", "messages": [{"role": None}]}, None)]:
            status, raw = self.post(b"/v1/chat/completions", body)
            if param is None:
                self.assertEqual(status, 200, (body, raw[:300]))
                continue
            self.assertEqual(status, 400, (body, raw[:300]))
            err = json.loads(raw)["error"]
            self.assertIn(f"'{param}'", err["message"])
            self.assertEqual(err["param"], param)

    def test_oversized_answer_is_a_502_and_a_truncated_record(self):
        before = len(self.records())
        status, raw = self.post(b"/v1/chat/completions", {"model": "huge-body", "messages": []})
        self.assertEqual(status, 502, raw[:300])
        self.assertIn("max-response-bytes", json.loads(raw)["error"]["message"])
        rec = self.records()[before:]
        self.assertEqual(len(rec), 1)
        self.assertTrue(rec[0]["truncated"])
        self.assertEqual(rec[0]["outcome"], "upstream_too_large")
        self.assertLessEqual(len(rec[0].get("response_text", "")), MAX_RESPONSE)

    def test_endless_sse_line_and_long_stream_end_with_an_error_event(self):
        for model in ("endless-line", "long-stream"):
            before = len(self.records())
            status, raw = self.post(b"/v1/chat/completions",
                                    {"model": model, "messages": [], "stream": True})
            self.assertEqual(status, 200)  # the stream had begun: the error is an event
            self.assertIn(b"upstream_too_large", raw[-4096:], model)
            self.assertNotIn(b"[DONE]", raw[-4096:])
            rec = self.records()[before:]
            self.assertEqual(len(rec), 1, model)
            self.assertTrue(rec[0]["truncated"], model)

    def test_header_and_auth_conformance(self):
        status, _ = raw_request(self.port, b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n" + self.auth +
                                b"Transfer-Encoding : chunked\r\nConnection: close\r\n\r\n")
        self.assertEqual(status, 400)
        status, _ = raw_request(self.port, b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n" + self.auth +
                                b"Authorization: Bearer other\r\nConnection: close\r\n\r\n")
        self.assertEqual(status, 400)
        for scheme in (b"bearer", b"BEARER", b"Bearer"):
            status, _ = raw_request(self.port, b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                    b"Authorization: " + scheme + b" " + PROXY_KEY.encode() +
                                    b"\r\nConnection: close\r\n\r\n")
            self.assertEqual(status, 200, scheme)
        status, _ = raw_request(self.port, b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                b"Authorization: Bearer wrong\r\nConnection: close\r\n\r\n")
        self.assertEqual(status, 401)


if __name__ == "__main__":
    unittest.main()

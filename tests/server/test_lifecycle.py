"""Operations: a client that disconnects mid-stream is cancelled in the engine
and its KV blocks come back (seen on /metrics); SIGTERM stops accepting
connections, lets in-flight requests finish with their full, unchanged
answers, and exits 0; --max-queue turns excess requests into 429 with
Retry-After; a burst of 120 connections gets answers (200 or 429), no resets."""
import json
import signal
import socket
import threading
import unittest

import stet_server as S
from stet_server import poll_until

S.require_openai()
import openai  # noqa: E402

STORIES = S.stories_path()


def open_stream(port, body):
    """Starts a streamed request on a raw socket; returns the socket after the
    response headers and the first SSE event have arrived, plus what was read."""
    s = socket.create_connection(("127.0.0.1", port))
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    s.settimeout(30)
    buf = b""
    while b"data: " not in buf:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    return s, buf


def read_all(s):
    buf = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
            if buf.endswith(b"0\r\n\r\n"):
                break
    except socket.timeout:
        pass
    return buf


def sse_text(raw):
    """Concatenated choice texts and the last finish_reason of a raw chunked SSE response."""
    body = raw.split(b"\r\n\r\n", 1)[1]
    text, finish, done = "", None, False
    for line in body.split(b"\n"):
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        payload = line[6:]
        if payload == b"[DONE]":
            done = True
            continue
        j = json.loads(payload)
        for c in j["choices"]:
            text += c["text"]
            finish = c["finish_reason"] or finish
    return text, finish, done


class LifecycleTest(unittest.TestCase):
    def test_disconnect_cancels_and_frees_kv(self):
        with S.StetServer(STORIES, "--threads", "2") as srv:
            idle = srv.gauge("stet_kv_blocks_used")
            self.assertEqual(idle, 0)
            body = {"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 2000, "n": 4,
                    "ignore_eos": True, "temperature": 0.8, "seed": 1, "stream": True}
            s, first = open_stream(srv.port, body)
            self.assertIn(b"200", first.split(b"\r\n")[0])
            self.assertTrue(poll_until(lambda: srv.gauge("stet_kv_blocks_used") > 0))
            self.assertEqual(srv.gauge("stet_requests_in_flight"), 1)
            s.close()  # the client goes away mid-stream
            self.assertTrue(poll_until(lambda: srv.gauge("stet_kv_blocks_used") == idle and
                                 srv.gauge("stet_requests_in_flight") == 0 and
                                 srv.gauge("stet_running_sequences") == 0),
                            srv.metrics_text())
            self.assertEqual(srv.gauge("stet_requests_cancelled_total"), 1)
            # It stopped early: far fewer tokens than the 8000 asked for.
            self.assertLess(srv.gauge("stet_engine_generated_tokens_total"), 6000)
            self.assertTrue(poll_until(lambda: any(l.get("cancelled") for l in srv.request_logs())))
            self.assertTrue(srv.healthy())
            r = srv.client().completions.create(model="stories260K", prompt="Once", max_tokens=4)
            self.assertEqual(r.usage.completion_tokens, 4)
            self.assertEqual(srv.stop(), 0)

    def test_sigterm_drains_in_flight_requests(self):
        srv = S.StetServer(STORIES, "--threads", "2")
        try:
            client = srv.client()
            body = {"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 1500, "ignore_eos": True,
                    "temperature": 0.7, "seed": 42}
            alone = srv.post("/v1/completions", body)[1]["choices"][0]["text"]
            results = {}

            def non_stream():
                results["plain"] = srv.post("/v1/completions", dict(body, max_tokens=1200, seed=43))

            s, first = open_stream(srv.port, dict(body, stream=True))
            t = threading.Thread(target=non_stream)
            t.start()
            self.assertTrue(poll_until(lambda: srv.gauge("stet_requests_in_flight") == 2))
            srv.proc.send_signal(signal.SIGTERM)

            def refused():
                try:
                    socket.create_connection(("127.0.0.1", srv.port), timeout=1).close()
                    return False
                except OSError:
                    return True

            self.assertTrue(poll_until(refused, 10), "the listener still accepts after SIGTERM")
            self.assertIsNone(srv.proc.poll(), "exited before draining")  # still draining
            raw = first + read_all(s)
            s.close()
            t.join(60)
            text, finish, done = sse_text(raw)
            self.assertTrue(done, raw[-200:])
            self.assertEqual(finish, "length")
            self.assertEqual(text, alone)  # the drained stream is complete and unchanged
            status, plain = results["plain"]
            self.assertEqual(status, 200)
            self.assertEqual(plain["usage"]["completion_tokens"], 1200)
            rc = srv.proc.wait(60)
            self.assertEqual(rc, 0)
            srv.stop()
            self.assertTrue(any("drained" in l for l in srv.lines()), srv.lines()[-5:])
        finally:
            srv.kill()

    def test_max_queue_answers_429(self):
        with S.StetServer(STORIES, "--max-queue", "2", "--threads", "2") as srv:
            body = {"model": "stories260K", "prompt": "Once", "max_tokens": 1500, "ignore_eos": True,
                    "stream": True}
            a, _ = open_stream(srv.port, body)
            b, _ = open_stream(srv.port, body)
            status, hdrs, data = srv.http("POST", "/v1/completions",
                                          {"model": "stories260K", "prompt": "Once", "max_tokens": 2})
            self.assertEqual(status, 429, data)
            self.assertEqual(hdrs.get("retry-after"), "1")
            err = json.loads(data)["error"]
            self.assertEqual(err["code"], "rate_limit_exceeded")
            with self.assertRaises(openai.RateLimitError):
                srv.client().completions.create(model="stories260K", prompt="Once", max_tokens=2)
            # /health and /metrics are not queued behind generation.
            self.assertTrue(srv.healthy())
            a.close()
            b.close()
            self.assertTrue(poll_until(lambda: srv.gauge("stet_requests_in_flight") == 0))
            r = srv.client().completions.create(model="stories260K", prompt="Once", max_tokens=2)
            self.assertEqual(r.usage.completion_tokens, 2)
            self.assertEqual(srv.stop(), 0)

    def test_burst_of_connections_gets_answers_not_resets(self):
        with S.StetServer(STORIES, "--max-queue", "16", "--threads", "2", "--no-log") as srv:
            codes, lock = {}, threading.Lock()
            barrier = threading.Barrier(120)

            def one(i):
                barrier.wait()
                try:
                    status = srv.http("POST", "/v1/completions", {
                        "model": "stories260K", "prompt": "Once", "max_tokens": 1 + i % 8, "stream": i % 2 == 0},
                        timeout=120)[0]
                except OSError as e:  # a reset or refused connection is the failure this test catches
                    status = type(e).__name__
                with lock:
                    codes[status] = codes.get(status, 0) + 1

            threads = [threading.Thread(target=one, args=(i,)) for i in range(120)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertTrue(set(codes) <= {200, 429}, codes)
            self.assertIn(200, codes)
            self.assertTrue(poll_until(lambda: srv.gauge("stet_requests_in_flight") == 0))
            self.assertTrue(srv.healthy())
            self.assertEqual(srv.stop(), 0)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""What `stet proxy` adds, measured in a few seconds on loopback.

1. Added latency per request: the same small non-streamed chat request sent
   alternately straight to the upstream and through the proxy (keep-alive
   connections both ways, recording into SQLite with synchronous=FULL), N
   times each; p50 and p99 of each side and of the paired differences.
   Upstream: fake_upstream.py (answers at once), in its own process, so the
   numbers are the proxy's own cost (parse, forward, fold, fsync'ed commit).
2. Streaming throughput: streamed completions of --tokens tokens from
   `stet serve` (stories260K, 1 thread), direct and through the proxy,
   counted as SSE events per second at the client.

Usage: bench/proxy/overhead.py [--stet build/bin/stet] [--requests 200] [--json OUT]
Numbers depend on the machine's load; this is not a benchmark suite.
"""
import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def start(cmd, pattern, env=None):
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    port = []
    ready = threading.Event()

    def read():
        for raw in p.stdout:
            m = re.search(pattern, raw.decode("utf-8", "replace"))
            if m and not port:
                port.append(int(m.group(1)))
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(120) or not port:
        p.kill()
        raise RuntimeError("did not start: " + " ".join(cmd))
    return p, port[0]


def connect(port, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.connect()
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def post(conn, path, body):
    t0 = time.perf_counter()
    conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise RuntimeError(f"{r.status}: {data[:200]}")
    return time.perf_counter() - t0, data


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stet", default=os.path.join(ROOT, "build", "bin", "stet"))
    ap.add_argument("--model", default=os.path.join(ROOT, "..", "shared", "models", "stories260K", "stories260K.gguf"))
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--store-dir", help="where the SQLite store goes (default: a temporary directory); "
                    "on tmpfs the fsync per acknowledged exchange costs nothing")
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="stet-proxy-bench-", dir=a.store_dir)
    procs = []
    try:
        fake, fport = start([sys.executable, os.path.join(ROOT, "tests", "forensics", "fake_upstream.py")],
                            r"listening on http://127\.0\.0\.1:(\d+)")
        procs.append(fake)
        proxy, pport = start([a.stet, "proxy", "--upstream", f"http://127.0.0.1:{fport}", "--record",
                              os.path.join(tmp, "bench.db"), "--port", "0", "--no-log"],
                             r"listening on http://127\.0\.0\.1:(\d+)")
        procs.append(proxy)
        direct = connect(fport)
        via = connect(pport)
        body = {"model": "m", "max_tokens": 16, "messages": [{"role": "system", "content": "Be brief."},
                                                              {"role": "user", "content": "Say something."}]}
        for _ in range(10):  # warm both connections
            post(direct, "/v1/chat/completions", body)
            post(via, "/v1/chat/completions", body)
        d, v = [], []
        for _ in range(a.requests):
            d.append(post(direct, "/v1/chat/completions", body)[0])
            v.append(post(via, "/v1/chat/completions", body)[0])
        diff = [y - x for x, y in zip(d, v)]
        lat = {"requests": a.requests,
               "direct_ms": {"p50": 1e3 * pct(d, .5), "p99": 1e3 * pct(d, .99)},
               "proxy_ms": {"p50": 1e3 * pct(v, .5), "p99": 1e3 * pct(v, .99)},
               "added_ms": {"p50": 1e3 * pct(diff, .5), "p99": 1e3 * pct(diff, .99),
                            "mean": 1e3 * statistics.mean(diff)}}
        proxy.terminate()
        proxy.wait(30)
        procs.remove(proxy)

        serve, sport = start([a.stet, "serve", "-m", a.model, "--port", "0", "-t", "1", "--no-log"],
                             r"listening on http://127\.0\.0\.1:(\d+)")
        procs.append(serve)
        proxy, pport = start([a.stet, "proxy", "--upstream", f"http://127.0.0.1:{sport}", "--record",
                              os.path.join(tmp, "bench2.db"), "--port", "0", "--no-log"],
                             r"listening on http://127\.0\.0\.1:(\d+)")
        procs.append(proxy)
        mc = http.client.HTTPConnection("127.0.0.1", sport, timeout=30)
        mc.request("GET", "/v1/models")
        model = json.loads(mc.getresponse().read())["data"][0]["id"]
        sbody = {"model": model, "prompt": "Once upon a time", "max_tokens": a.tokens, "seed": 1,
                 "temperature": 0.8, "ignore_eos": True, "stream": True}
        rates = {}
        for name, port in (("direct", sport), ("proxy", pport)):
            conn = connect(port, 120)
            best = []
            for _ in range(3):
                secs, data = post(conn, "/v1/completions", sbody)
                events = data.count(b"\n\ndata: {") + 1
                best.append(events / secs)
            rates[name] = max(best)
        stream = {"tokens": a.tokens, "direct_events_per_s": rates["direct"], "proxy_events_per_s": rates["proxy"],
                  "ratio": rates["proxy"] / rates["direct"]}
        out = {"latency": lat, "stream": stream}
        print(json.dumps(out, indent=2))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=2)
    finally:
        for p in procs:
            p.kill()
            p.wait(30)


if __name__ == "__main__":
    main()

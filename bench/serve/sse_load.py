#!/usr/bin/env python3
"""SSE load client for any OpenAI-compatible /v1/completions endpoint (stdlib only).

C closed-loop workers each send streaming requests one after another until N
requests are done; per request it records time to first token (first text
chunk), the gaps between text chunks (inter-token latency) and the token count
(usage when the server streams it, else the text chunks). Prints one JSON object.
"""
import argparse
import http.client
import json
import statistics
import sys
import threading
import time
import urllib.parse

# Fixed story openings; request i gets "<i>. " in front, so no two prompts
# share more than a few tokens and neither server's prefix cache helps.
PROMPTS = [
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
    "The spaceship landed quietly in the middle of the field, and the children ran",
    "Write a short letter to a friend describing your favourite season and why you",
    "In the heart of the city there was a bakery that opened every night at midnight",
    "The history of the bicycle begins in the early nineteenth century, when inventors",
    "Here is a recipe for a simple tomato soup. First, take four ripe tomatoes and",
    "The little robot looked at the broken clock on the wall and decided that it",
    "Dear diary, today was the strangest day of my life. When I woke up, I found",
]


def percentile(xs, q):
    """Linear-interpolated percentile (numpy's default), None for no data."""
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def one_request(host, port, path, body, headers, timeout):
    """Sends one streaming request; returns a dict of timings (seconds, perf_counter)."""
    rec = {"error": None, "ttft": None, "gaps": [], "tokens": 0, "chunks": 0}
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", path, body=body, headers=headers)
        resp = conn.getresponse()
        if resp.status != 200:
            rec["error"] = f"HTTP {resp.status}: {resp.read()[:200]!r}"
            return rec
        last = None
        usage_tokens = None
        while True:
            line = resp.readline()
            if not line:
                break
            now = time.perf_counter()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            try:
                obj = json.loads(data)
            except ValueError:
                rec["error"] = f"bad SSE data: {data[:200]!r}"
                return rec
            if "error" in obj:
                rec["error"] = f"stream error: {obj['error']}"
                return rec
            usage = obj.get("usage")
            if usage and usage.get("completion_tokens") is not None:
                usage_tokens = usage["completion_tokens"]
            text = "".join((c.get("text") or "") for c in obj.get("choices") or [])
            if not text:
                continue
            rec["chunks"] += 1
            if last is None:
                rec["ttft"] = now - t0
            else:
                rec["gaps"].append(now - last)
            last = now
        rec["tokens"] = usage_tokens if usage_tokens is not None else rec["chunks"]
        if rec["ttft"] is None:
            rec["error"] = "no text streamed"
    except (OSError, http.client.HTTPException) as e:
        rec["error"] = f"{type(e).__name__}: {e}"
    finally:
        conn.close()
        rec["e2e"] = time.perf_counter() - t0
    return rec


def run_level(url, model, concurrency, n_requests, max_tokens, timeout, extra, first_index=0):
    u = urllib.parse.urlsplit(url)
    host, port = u.hostname, u.port or 80
    path = u.path.rstrip("/") + "/v1/completions"
    headers = {"Content-Type": "application/json", "Authorization": "Bearer none"}
    lock = threading.Lock()
    next_i = [0]
    records = []

    def worker():
        while True:
            with lock:
                i = next_i[0]
                if i >= n_requests:
                    return
                next_i[0] += 1
            k = first_index + i
            body = {"model": model, "prompt": f"{k}. {PROMPTS[k % len(PROMPTS)]}",
                    "max_tokens": max_tokens, "temperature": 0, "stream": True,
                    "stream_options": {"include_usage": True}}
            body.update(extra)
            rec = one_request(host, port, path, json.dumps(body).encode(), headers, timeout)
            with lock:
                records.append(rec)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return summarize(records, wall, concurrency)


def summarize(records, wall, concurrency):
    ok = [r for r in records if r["error"] is None]
    ttft = [r["ttft"] for r in ok]
    gaps = [g for r in ok for g in r["gaps"]]
    tpot = [(r["e2e"] - r["ttft"]) / (r["tokens"] - 1) for r in ok if r["tokens"] > 1]
    tokens = sum(r["tokens"] for r in ok)
    ms = lambda x: None if x is None else x * 1000.0  # noqa: E731
    return {
        "concurrency": concurrency,
        "requests": len(records),
        "errors": len(records) - len(ok),
        "error_samples": [r["error"] for r in records if r["error"]][:3],
        "wall_s": wall,
        "completion_tokens": tokens,
        "tokens_per_s": tokens / wall if wall > 0 else None,
        "requests_per_s": len(ok) / wall if wall > 0 else None,
        "ttft_ms": {f"p{q}": ms(percentile(ttft, q)) for q in (50, 90, 99)},
        "itl_ms": {f"p{q}": ms(percentile(gaps, q)) for q in (50, 90, 99)},
        "tpot_ms_p50": ms(percentile(tpot, 50)),
        "e2e_ms_p50": ms(percentile([r["e2e"] for r in ok], 50)),
        "tokens_per_request_p50": statistics.median([r["tokens"] for r in ok]) if ok else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:8080")
    ap.add_argument("--model", required=True)
    ap.add_argument("-c", "--concurrency", type=int, default=1)
    ap.add_argument("-N", "--requests", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--first-index", type=int, default=0, help="prompt numbering offset")
    ap.add_argument("--extra", default="{}", help="JSON merged into every request body")
    a = ap.parse_args()
    res = run_level(a.url, a.model, a.concurrency, a.requests, a.max_tokens, a.timeout,
                    json.loads(a.extra), a.first_index)
    json.dump(res, sys.stdout)
    print()


if __name__ == "__main__":
    main()

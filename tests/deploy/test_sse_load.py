#!/usr/bin/env python3
"""The serving benchmark's SSE client (bench/serve/sse_load.py) against a live
`stet serve` (stories260K): every request streams exactly max_tokens tokens
(ignore_eos), TTFT/ITL are measured per text chunk, the percentiles are ordered,
and a refused request counts as an error instead of vanishing. Stdlib only;
missing material skips (exit 77) locally and fails in CI (CI=true).
"""
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "serve"))
import sse_load  # noqa: E402

failures = []


def require(ok, what):
    if ok:
        return
    if os.environ.get("CI") == "true":
        print(f"FAIL: required test material missing: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: test material not present: {what}", file=sys.stderr)
    sys.exit(77)


def check(ok, msg):
    if not ok:
        failures.append(msg)
        print(f"FAIL: {msg}", file=sys.stderr)


def main():
    stet = os.environ.get("STET_BINARY")
    if not stet:
        for cand in ("build-deploy/bin/stet", "build/bin/stet"):
            if os.path.exists(os.path.join(ROOT, cand)):
                stet = os.path.join(ROOT, cand)
                break
    require(stet and os.access(stet, os.X_OK), "the stet binary (set STET_BINARY)")
    shared = os.environ.get("STET_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
    model = os.path.join(shared, "models", "stories260K", "stories260K.gguf")
    require(os.path.exists(model), model)

    proc = subprocess.Popen([stet, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0",
                             "-t", "1", "--no-log"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    port = []
    ready = threading.Event()

    def read():
        for raw in proc.stderr:
            m = re.match(rb"listening on http://127\.0\.0\.1:(\d+)", raw)
            if m:
                port.append(int(m.group(1)))
                ready.set()
        ready.set()
    threading.Thread(target=read, daemon=True).start()
    try:
        require_ok = ready.wait(60) and port
        check(require_ok, "stet serve did not start")
        if not require_ok:
            return 1
        url = f"http://127.0.0.1:{port[0]}"
        t0 = time.time()
        r = sse_load.run_level(url, "stories260K", concurrency=4, n_requests=12, max_tokens=24,
                               timeout=60, extra={"ignore_eos": True})
        print(r)
        check(r["requests"] == 12 and r["errors"] == 0, f"requests/errors: {r['requests']}/{r['errors']} {r['error_samples']}")
        # usage (include_usage) says 24 completion tokens per request.
        check(r["completion_tokens"] == 12 * 24, f"completion_tokens {r['completion_tokens']} != 288")
        check(r["tokens_per_request_p50"] == 24, f"tokens/request {r['tokens_per_request_p50']}")
        for k in ("ttft_ms", "itl_ms"):
            p = r[k]
            check(None not in p.values() and 0 < p["p50"] <= p["p90"] <= p["p99"], f"{k} not ordered: {p}")
        check(r["ttft_ms"]["p99"] < r["e2e_ms_p50"] * 4, "ttft larger than whole requests")
        check(0 < r["wall_s"] <= time.time() - t0 + 0.01, f"wall {r['wall_s']}")
        check(abs(r["tokens_per_s"] - 288 / r["wall_s"]) < 1e-6, "tokens/s is not tokens / wall")

        # A request the server refuses (unknown model: 404) is an error, not a sample.
        bad = sse_load.run_level(url, "no-such-model", concurrency=2, n_requests=3, max_tokens=4,
                                 timeout=30, extra={})
        check(bad["errors"] == 3 and bad["completion_tokens"] == 0 and bad["ttft_ms"]["p50"] is None,
              f"refused requests not counted as errors: {bad}")
        check(any("HTTP 404" in e for e in bad["error_samples"]), f"error samples: {bad['error_samples']}")

        # Percentiles: numpy's linear interpolation.
        check(sse_load.percentile([1, 2, 3, 4], 50) == 2.5, "p50 of 1..4")
        check(abs(sse_load.percentile(list(range(101)), 99) - 99.0) < 1e-12, "p99 of 0..100")
        check(sse_load.percentile([7], 90) == 7, "p90 of one sample")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    print("FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Decode speed with and without constrained decoding: one `stet serve` on a
model, the same chat request unconstrained (ignore_eos) and under a JSON schema
whose output stays inside strings (where the token mask allows the most tokens,
so the trie walk is longest), max_tokens each, best of --reps. Prints tok/s.

  python3 bench/structured_speed.py [--model PATH] [--tokens 256] [--reps 3] [--threads 2]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "server"))
import stet_server as S  # noqa: E402

SCHEMA = {"type": "array", "items": {"type": "string"}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", default="2")
    a = ap.parse_args()
    srv = S.StetServer(a.model, "--ctx", "1024", "--threads", a.threads)
    try:
        model = srv.client().models.list().data[0].id
        base = {"model": model, "messages": [{"role": "user", "content": "List many animal names."}],
                "max_tokens": a.tokens, "temperature": 0.8, "seed": 1}
        runs = {
            "free": dict(base, ignore_eos=True),
            "json_schema": dict(base, response_format={
                "type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}}),
        }
        # Prompt-only timing to subtract: the same request with max_tokens 1.
        for name, body in runs.items():
            best = None
            for _ in range(a.reps):
                t0 = time.perf_counter()
                status, j = srv.post("/v1/chat/completions", dict(body, max_tokens=1))
                t1 = time.perf_counter()
                status, j = srv.post("/v1/chat/completions", body)
                t2 = time.perf_counter()
                assert status == 200, j
                n = j["usage"]["completion_tokens"]
                rate = (n - 1) / ((t2 - t1) - (t1 - t0))
                best = rate if best is None or rate > best else best
            print(json.dumps({"run": name, "completion_tokens": n, "decode_tok_s": round(best, 1),
                              "finish": j["choices"][0]["finish_reason"]}))
    finally:
        srv.stop()


if __name__ == "__main__":
    main()

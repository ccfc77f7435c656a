#!/usr/bin/env python3
"""stet vs llama.cpp on the same GGUF files, threads and machine.

Runs `stet bench` and llama.cpp's `llama-bench` (and `llama-batched-bench` for batched
decode) interleaved A/B/A/B — one repetition per invocation, so slow drifts in machine load
hit both sides alike — and reports medians: pp128, pp512, tg128, and aggregate decode
tokens/s with B = 1, 4, 16, 32 sequences. Also measures streaming-read bandwidth
(bench/membw.c) for the decode roofline: weight bytes read per token / bandwidth.

Builds nothing but membw (cc -O2): build stet first (Release, e.g. build-bench/) and the
peer with bench/build_llamacpp.sh. Missing random-weight models are written with
`stet gguf-random` into ~/.cache/stet/bench-models/. Python 3 standard library only.

    bench/run.py                      # everything, ~10 min on 2 cores
    bench/run.py --cases real-q4_1 --reps 3 --no-batched
"""

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import REPO, cpu_model, git, log, session_preexec  # noqa: E402
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "stet")
REAL_MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
GEMMA3_MODEL = os.path.join(CACHE, "models", "gemma-3-270m-q4_k_m.gguf")

# id, model file (None: random), gguf-random shape and type, note. `big` cases get --big-reps.
CASES = [
    dict(id="real-q4_1", model=REAL_MODEL, label="SmolLM2-135M-Instruct Q4_1 (real weights)",
         note="token_embd/output q8_0, as llama.cpp's quantizer wrote it"),
    dict(id="real-gemma3", model=GEMMA3_MODEL, label="Gemma 3 270M Q4_K_M (real weights)",
         note="Q5_0/Q8_0/Q4_K/Q6_K mix, 262144-row tied output q8_0; scripts/setup --model "
              "gemma3-270m fetches it"),
    dict(id="135m-f16", shape="smollm2-135m", type="f16", label="smollm2-135m f16 (random)"),
    dict(id="135m-q8_0", shape="smollm2-135m", type="q8_0", label="smollm2-135m q8_0 (random)"),
    dict(id="135m-q4_1", shape="smollm2-135m", type="q4_1", label="smollm2-135m q4_1 (random)"),
    dict(id="135m-q4_k", shape="smollm2-135m", type="q4_k", label="smollm2-135m q4_k (random)",
         note="K = 576 is not a multiple of 256: 180 of 210 matrices fall back to q8_0; "
              "only ffn_down (K = 1536) is q4_k — this case is mostly q8_0"),
    dict(id="0.5b-q4_1", shape="qwen2.5-0.5b", type="q4_1", label="qwen2.5-0.5b q4_1 (random)",
         big=True),
    dict(id="1b-q4_1", shape="llama-3.2-1b", type="q4_1", label="llama-3.2-1b q4_1 (random)",
         big=True, note="embedding/output q6_k (n_embd 2048 is a multiple of 256)"),
    dict(id="1b-q4_k", shape="llama-3.2-1b", type="q4_k", label="llama-3.2-1b q4_k (random)",
         big=True, note="every K (2048, 8192) is a multiple of 256: all matrices q4_k, "
                        "embedding/output q6_k — the K-quant kernels proper"),
    dict(id="1b-q4_k_m", shape="llama-3.2-1b", type="f16", quantize="q4_k_m",
         label="llama-3.2-1b Q4_K_M (random)", big=True,
         note="the type mix of the file people download: q4_k, with q6_k output and q6_k "
              "attn_v/ffn_down in 8 of 16 layers (stet quantize --type q4_k_m, llama.cpp's rule)"),
    # Bigger shapes (issue 31): written by gguf-random directly in the mix (no f16 copy
    # first); the writer holds the file in memory while it writes it.
    dict(id="3b-q4_k_m", shape="llama-3.2-3b", type="q4_k_m",
         label="llama-3.2-3b Q4_K_M (random)", big=True, note="~1.9 GiB"),
    dict(id="3b-q8_0", shape="llama-3.2-3b", type="q8_0", label="llama-3.2-3b q8_0 (random)",
         big=True, note="~3.2 GiB"),
    dict(id="8b-q4_k_m", shape="llama-3.1-8b", type="q4_k_m",
         label="llama-3.1-8b Q4_K_M (random)", big=True, note="~4.6 GiB"),
    dict(id="8b-q8_0", shape="llama-3.1-8b", type="q8_0", label="llama-3.1-8b q8_0 (random)",
         big=True, note="~8 GiB; 16 GiB of memory to write it"),
    dict(id="olmoe-q4_k_m", shape="olmoe-1b-7b", type="q4_k_m",
         label="OLMoE-1B-7B shape, qwen3moe, Q4_K_M (random)", big=True,
         note="64 experts of 1024, 8 per token: ~1.3 B of 6.9 B parameters read per token; "
              "~4 GiB"),
    dict(id="qwen3moe-q4_k_m", shape="qwen3-30b-a3b", type="q4_k_m",
         label="Qwen3-30B-A3B shape Q4_K_M (random)", big=True, optin=True,
         note="128 experts of 768, 8 per token; ~17 GiB, and as much memory to write it: "
              "only with --cases qwen3moe-q4_k_m on a machine that has it"),
]


def run(cmd, nice=0, timeout=900, env=None, own_session=True):
    """Runs cmd; returns (stdout, stderr, seconds). Raises on failure. own_session=False
    keeps it in this session (and autogroup): it then competes thread by thread with a
    companion process started the same way (the contended case)."""
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                       preexec_fn=session_preexec(nice) if own_session else None)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p.stdout, p.stderr, time.time() - t0


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def find_stet(arg):
    for p in [arg] if arg else [os.path.join(REPO, d, "bin", "stet") for d in ("build-bench", "build")]:
        if p and os.access(p, os.X_OK):
            return os.path.abspath(p)
    sys.exit("run.py: no stet binary; build one (cmake -S . -B build-bench "
             "-DCMAKE_BUILD_TYPE=Release && cmake --build build-bench --target stet) or pass --stet")


def find_llamacpp(arg, isa="auto"):
    """The peer build: with --isa avx2, the AVX2-only variant (build_llamacpp.sh --avx2)."""
    d = arg
    if not d:
        avx2 = isa == "avx2"
        cands = sorted(p for p in os.listdir(CACHE) if p.startswith("llama.cpp-")
                       and p.endswith("-avx2") == avx2) if os.path.isdir(CACHE) else []
        d = os.path.join(CACHE, cands[-1]) if cands else None
    if not d or not os.access(os.path.join(d, "bin", "llama-bench"), os.X_OK):
        return None
    info = {}
    try:
        with open(os.path.join(d, "build-info.txt")) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                info[k] = v
    except OSError:
        pass
    bb = os.path.join(d, "bin", "llama-batched-bench")
    return dict(dir=d, bench=os.path.join(d, "bin", "llama-bench"),
                batched=bb if os.access(bb, os.X_OK) else None, info=info)


def membw(threads, nice):
    exe = os.path.join(CACHE, "membw", "membw")
    os.makedirs(os.path.dirname(exe), exist_ok=True)
    src = os.path.join(REPO, "bench", "membw.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        subprocess.run(["cc", "-O2", "-pthread", src, "-o", exe], check=True)
    out, _, _ = run([exe, str(threads), "1024", "9"], nice=nice)
    return json.loads(out)


def ensure_model(stet, case, models_dir, threads):
    if case.get("model"):
        return case["model"] if os.path.exists(case["model"]) else None
    path = os.path.join(models_dir, f"{case['shape']}.{case['type']}.seed1.gguf")
    if not os.path.exists(path):
        os.makedirs(models_dir, exist_ok=True)
        log(f"writing {path}")
        run([stet, "gguf-random", "--shape", case["shape"], "--type", case["type"], "--seed", "1",
             "-t", str(threads), "-o", path + ".tmp"])
        os.replace(path + ".tmp", path)
    if case.get("quantize"):  # a mix, re-encoded from the random f16 file
        src, path = path, os.path.join(models_dir, f"{case['shape']}.{case['quantize']}.seed1.gguf")
        if not os.path.exists(path):
            log(f"writing {path}")
            run([stet, "quantize", "-m", src, "-o", path + ".tmp", "--type", case["quantize"]])
            os.replace(path + ".tmp", path)
    return path


def stet_bench(stet, model, args, extra, env, threads=None, contended=False):
    mode = [] if "--numerics" in extra else ["--numerics", args.numerics]
    out, _, _ = run([stet, "bench", "-m", model, "-t", str(threads or args.threads), "--reps", "1",
                     "--isa", args.isa, "--json", *mode, *extra], nice=0 if contended else args.nice,
                    env=env, own_session=not contended)
    return json.loads(out)


def llama_bench(peer, model, args, pp, tg, depths=None, threads=None, contended=False):
    extra = ["-d", ",".join(map(str, depths))] if depths else []
    out, _, _ = run([peer["bench"], "-m", model, "-t", str(threads or args.threads), "-r", "1",
                     "-p", ",".join(map(str, pp)), "-n", ",".join(map(str, tg)), *extra,
                     "-o", "json"], nice=0 if contended else args.nice,
                    own_session=not contended)
    return json.loads(out)


def llama_test_name(t):
    name = f"pp{t['n_prompt']}" if t["n_gen"] == 0 else f"tg{t['n_gen']}"
    return name + (f"@d{t['n_depth']}" if t.get("n_depth") else "")


class Companion:
    """`yes > /dev/null` in this session: one other CPU-bound process on the machine."""

    def __enter__(self):
        self.p = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
        time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        self.p.kill()
        self.p.wait()


def run_depths(case, model, stet, peer, args, env, reps):
    """pp/tg after --depths untimed context tokens, both engines (llama-bench -d)."""
    d = dict(stet={}, llama={})
    for rep in range(reps):
        log(f"{case['id']}: depths {args.depths}, rep {rep + 1}/{reps}")
        j = stet_bench(stet, model, args, ["-p", str(args.depth_pp), "-n", str(args.depth_tg),
                                           "-d", ",".join(map(str, args.depths))], env)
        for t in j["tests"]:
            d["stet"].setdefault(t["test"], []).append(t["median_tok_s"])
        if peer:
            for t in llama_bench(peer, model, args, [args.depth_pp], [args.depth_tg], args.depths):
                d["llama"].setdefault(llama_test_name(t), []).append(t["avg_ts"])
    return {side: {k: median(v) for k, v in x.items()} for side, x in d.items()}


def run_contended(case, model, stet, peer, args, env, reps):
    """-t 1 alone vs -t 2 beside a busy process, both engines, nice 0, one session."""
    c = {}
    for rep in range(reps):
        log(f"{case['id']}: contended, rep {rep + 1}/{reps}")
        for label, threads, busy in (("t1", 1, False), ("t2_busy", 2, True)):
            with (Companion() if busy else contextlib.nullcontext()):
                j = stet_bench(stet, model, args, ["-p", "128", "-n", "64"], env, threads=threads,
                               contended=True)
                for t in j["tests"]:
                    c.setdefault(f"stet_{label}", {}).setdefault(t["test"], []).append(
                        t["median_tok_s"])
                if peer:
                    for t in llama_bench(peer, model, args, [128], [64], threads=threads,
                                         contended=True):
                        c.setdefault(f"llama_{label}", {}).setdefault(llama_test_name(t),
                                                                      []).append(t["avg_ts"])
    return {k: {t: median(v) for t, v in x.items()} for k, x in c.items()}


def llama_batched(peer, model, args, batches, n, prompt):
    ctx = max(batches) * (prompt + n) + 256
    out, err, _ = run([peer["batched"], "-m", model, "-t", str(args.threads), "-tb",
                       str(args.threads), "-c", str(ctx), "-b", "2048", "-ub", "512",
                       "-npp", str(prompt), "-ntg", str(n), "-npl", ",".join(map(str, batches)),
                       "--output-format", "jsonl"], nice=args.nice)
    rows = []
    for line in (out + "\n" + err).splitlines():
        line = line.strip()
        if line.startswith("{") and '"speed_tg"' in line:
            rows.append(json.loads(re.sub(r":\s*-?nan", ": null", line)))
    return rows


def run_case(case, model, stet, peer, args, env):
    reps = args.big_reps if case.get("big") else args.reps
    batched = args.batched and case["id"] in args.batched_cases
    r = dict(id=case["id"], label=case["label"], model=model, note=case.get("note"), reps=reps,
             stet={}, llama={}, stet_batched={}, llama_batched={}, stet_adaptive={},
             stet_adaptive_batched={}, loadavg=[os.getloadavg()])
    pp, tg = args.pp, args.tg
    for rep in range(reps):
        log(f"{case['id']}: rep {rep + 1}/{reps}")
        j = stet_bench(stet, model, args, ["-p", ",".join(map(str, pp)),
                                           "-n", ",".join(map(str, tg))], env)
        r["stet_info"] = {k: j[k] for k in ("model_name", "arch", "type", "tensor_types",
                                            "n_params", "weight_bytes", "file_bytes", "isa",
                                            "numerics", "kv_type", "commit", "cpu", "threads")}
        for t in j["tests"]:
            r["stet"].setdefault(t["test"], []).append(t["median_tok_s"])
        if args.adaptive:
            j = stet_bench(stet, model, args, ["-p", ",".join(map(str, pp)),
                                               "-n", ",".join(map(str, tg)),
                                               "--numerics", "adaptive"], env)
            for t in j["tests"]:
                r["stet_adaptive"].setdefault(t["test"], []).append(t["median_tok_s"])
        if peer:
            for t in llama_bench(peer, model, args, pp, tg):
                r["llama"].setdefault(llama_test_name(t), []).append(t["avg_ts"])
                r["llama_info"] = {k: t.get(k) for k in ("build_commit", "build_number",
                                                         "cpu_info", "model_type", "n_batch",
                                                         "n_ubatch", "flash_attn", "type_k",
                                                         "type_v", "n_threads", "poll")}
        if batched:
            j = stet_bench(stet, model, args, ["-p", "0", "-n", str(args.batched_n), "--batch",
                                               ",".join(map(str, args.batch)), "--tg-prompt",
                                               str(args.batched_prompt)], env)
            for t in j["tests"]:
                r["stet_batched"].setdefault(str(t["batch"]), []).append(t["median_tok_s"])
            if args.adaptive:
                j = stet_bench(stet, model, args, ["-p", "0", "-n", str(args.batched_n), "--batch",
                                                   ",".join(map(str, args.batch)), "--tg-prompt",
                                                   str(args.batched_prompt), "--numerics",
                                                   "adaptive"], env)
                for t in j["tests"]:
                    r["stet_adaptive_batched"].setdefault(str(t["batch"]), []).append(
                        t["median_tok_s"])
            if peer and peer["batched"]:
                for row in llama_batched(peer, model, args, args.batch, args.batched_n,
                                         args.batched_prompt):
                    r["llama_batched"].setdefault(str(row["pl"]), []).append(row["speed_tg"])
    # The extra sections never discard the case's main numbers when they fail.
    for key, wanted, fn in (("depths", args.depths and case["id"] in args.depth_cases, run_depths),
                            ("contended", args.contended and case["id"] in args.contended_cases,
                             run_contended)):
        if not wanted:
            continue
        try:
            r[key] = fn(case, model, stet, peer, args, env, reps)
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError) as e:
            r[key + "_error"] = str(e)
            log(f"{case['id']}: {key}: {e}")
    r["loadavg"].append(os.getloadavg())
    for side in ("stet", "llama", "stet_batched", "llama_batched", "stet_adaptive",
                 "stet_adaptive_batched"):
        r[side + "_median"] = {k: median(v) for k, v in r[side].items()}
    return r


def fmt(x, digits=1):
    return "—" if x is None else f"{x:,.{digits}f}"


def ratio(a, b):
    return None if a is None or not b else a / b


def write_markdown(res, path):
    h = res["header"]
    peer = h.get("llama_cpp") or {}
    L = []
    L.append(f"# stet vs llama.cpp — {h['date']} on {h['host']}\n")
    L.append(f"- CPU: {h['cpu']} ({h['nproc']} logical CPUs), threads: {h['threads']}, "
             f"stet isa: {h.get('stet_isa')}, numerics: {h.get('numerics', 'invariant')}, "
             "KV cache f16 on both sides")
    L.append(f"- stet: commit `{h['stet_commit']}` (binary `{h['stet_binary']}`)")
    if peer:
        info = peer.get("info", {})
        L.append(f"- llama.cpp: commit `{info.get('llama_cpp_commit')}` (vendored in "
                 f"llama-cpp-python {info.get('llama_cpp_python_sdist')} sdist; llama-bench "
                 f"reports build `{h.get('llama_build')}`), {info.get('compiler')}, "
                 f"flags `{info.get('cmake_flags')}`; llama-bench defaults otherwise "
                 f"(n_batch 2048, n_ubatch 512, flash_attn {h.get('llama_flash_attn')})")
    else:
        L.append("- llama.cpp: not available (run bench/build_llamacpp.sh)")
    bw = h["membw"]
    L.append(f"- memory bandwidth (bench/membw.c, {bw['threads']} threads, 1 GiB streaming "
             f"read, best of {bw['passes']}): {bw['gbps_best']:.2f} GB/s "
             f"(median {bw['gbps_median']:.2f})")
    L.append(f"- method: A/B/A/B — each repetition runs `stet bench` (invariant, then adaptive) then `llama-bench` (then "
             f"the batched pair) as separate processes, one rep each, both at nice "
             f"{h['nice']} (own session and autogroup); medians over {h['reps']} reps "
             f"({h['big_reps']} for the 0.5B/1B cases). pp = prompt of N random tokens in one batch, logits for the last; "
             f"tg128 = 128 single-token steps from an empty cache (llama-bench's tg128). "
             f"Load average during the run: {h['loadavg_start'][0]:.1f} at start, "
             f"{h['loadavg_end'][0]:.1f} at end (a shared 2-core VM: expect noise).")
    L.append(f"- total runtime: {h['runtime_min']:.1f} min"
             + (f" (merged from {', '.join(h['merged_from'])}: the same binaries, run one "
                f"after the other)" if h.get("merged_from") else "") + "\n")

    L.append("## Prefill and decode (tokens/s, median)\n")
    mode = h.get("numerics", "invariant")
    L.append(("stet runs in its default invariant mode" if mode == "invariant" else
              f"stet runs with `--numerics {mode}` (not the default invariant mode)")
             + "; *adaptive* is the same binary with "
             "`--numerics adaptive` (batch-variant split-K below 64 rows, rule R8), so the last "
             "column is the price of invariance: ≥ 1.00 means none.\n")
    isa = h.get("stet_isa")
    L.append("| case | ISA | test | stet | llama.cpp | stet / llama.cpp | stet adaptive | "
             f"{mode} / adaptive |")
    L.append("|---|---|---|---:|---:|---:|---:|---:|")
    for c in res["cases"]:
        if "error" in c:
            L.append(f"| {c['label']} | error: {c['error'][:80]} | | | |")
            continue
        for t in [f"pp{p}" for p in h["pp"]] + [f"tg{n}" for n in h["tg"]]:
            s, l = c["stet_median"].get(t), c["llama_median"].get(t)
            a = c.get("stet_adaptive_median", {}).get(t)
            rt, ra = ratio(s, l), ratio(s, a)
            L.append(f"| {c['label']} | {isa} | {t} | {fmt(s)} | {fmt(l)} | "
                     f"{'—' if rt is None else f'{rt:.2f}'} | {fmt(a)} | "
                     f"{'—' if ra is None else f'{ra:.2f}'} |")
    L.append("")
    L.append("## Decode against the memory-bandwidth roofline\n")
    L.append("Roofline = bandwidth / weight bytes read per decoded token (every layer matrix "
             "plus the output matrix, `Model::weight_bytes()`; KV reads are ignored).\n")
    L.append("| case | ISA | weights read / token | roofline tok/s | stet tg | % of roofline | "
             "llama.cpp tg | % of roofline |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|")
    tg = f"tg{h['tg'][0]}"
    for c in res["cases"]:
        if "error" in c:
            continue
        wb = c["stet_info"]["weight_bytes"]
        roof = bw["gbps_best"] * 1e9 / wb
        s, l = c["stet_median"].get(tg), c["llama_median"].get(tg)
        L.append(f"| {c['label']} | {isa} | {wb / 2**20:.1f} MiB | {roof:.1f} | {fmt(s)} | "
                 f"{fmt(None if s is None else 100 * s / roof, 0)}% | {fmt(l)} | "
                 f"{fmt(None if l is None else 100 * l / roof, 0)}% |")
    L.append("")
    bcases = [c for c in res["cases"] if c.get("stet_batched_median")]
    if bcases:
        L.append(f"## Batched decode (aggregate tokens/s, B sequences x {h['batched_n']} "
                 f"tokens after a {h['batched_prompt']}-token prompt each)\n")
        L.append("| case | ISA | B | stet | llama.cpp (llama-batched-bench S_TG) | "
                 "stet / llama.cpp | stet adaptive | invariant / adaptive |")
        L.append("|---|---|---:|---:|---:|---:|---:|---:|")
        for c in bcases:
            for b in h["batch"]:
                s = c["stet_batched_median"].get(str(b))
                l = c["llama_batched_median"].get(str(b))
                a = c.get("stet_adaptive_batched_median", {}).get(str(b))
                rt, ra = ratio(s, l), ratio(s, a)
                L.append(f"| {c['label']} | {isa} | {b} | {fmt(s)} | {fmt(l)} | "
                         f"{'—' if rt is None else f'{rt:.2f}'} | {fmt(a)} | "
                         f"{'—' if ra is None else f'{ra:.2f}'} |")
        L.append("")
    for c in res["cases"]:
        for key in ("depths_error", "contended_error"):
            if c.get(key):
                L.append(f"- {c['label']}: {key.split('_')[0]} failed: {c[key][:200]}")
    dcases = [c for c in res["cases"] if c.get("depths")]
    if dcases:
        L.append(f"## Long context (tokens/s after D untimed context tokens; stet `-d`, "
                 f"llama-bench `-d`)\n")
        L.append("Attention per decoded token = time per token at depth D minus at depth 0 "
                 "(the same binary, the same run).\n")
        L.append("| case | ISA | test | stet | llama.cpp | stet / llama.cpp | "
                 "stet attention ms/token | llama.cpp attention ms/token |")
        L.append("|---|---|---|---:|---:|---:|---:|---:|")
        tg0 = f"tg{h['depth_tg']}"
        for c in dcases:
            base_s = c["stet_median"].get(tg0)
            base_l = c["llama_median"].get(tg0)
            present = sorted({int(k.split("@d")[1]) for side in c["depths"].values() for k in side})
            for dep in present:
                for kind in (f"pp{h['depth_pp']}", f"tg{h['depth_tg']}"):
                    t = f"{kind}@d{dep}"
                    s_, l_ = c["depths"]["stet"].get(t), c["depths"]["llama"].get(t)
                    att_s = att_l = None
                    if kind.startswith("tg"):
                        if s_ and base_s:
                            att_s = 1e3 / s_ - 1e3 / base_s
                        if l_ and base_l:
                            att_l = 1e3 / l_ - 1e3 / base_l
                    rt = ratio(s_, l_)
                    L.append(f"| {c['label']} | {isa} | {t} | {fmt(s_)} | {fmt(l_)} | "
                             f"{'—' if rt is None else f'{rt:.2f}'} | {fmt(att_s, 2)} | "
                             f"{fmt(att_l, 2)} |")
        L.append("")
    ccases = [c for c in res["cases"] if c.get("contended")]
    if ccases:
        L.append("## A busy machine (one `yes > /dev/null` beside the engine, all at nice 0 in "
                 "one session)\n")
        L.append("Contended `-t 2` against uncontended `-t 1` of the same engine (target ≥ 0.9).\n")
        L.append("| case | ISA | test | stet -t 1 | stet -t 2 + busy | ratio | llama.cpp -t 1 | "
                 "llama.cpp -t 2 + busy | ratio |")
        L.append("|---|---|---|---:|---:|---:|---:|---:|---:|")
        for c in ccases:
            x = c["contended"]
            for t in ("pp128", "tg64"):
                a1, a2 = x.get("stet_t1", {}).get(t), x.get("stet_t2_busy", {}).get(t)
                b1, b2 = x.get("llama_t1", {}).get(t), x.get("llama_t2_busy", {}).get(t)
                ra, rb = ratio(a2, a1), ratio(b2, b1)
                L.append(f"| {c['label']} | {isa} | {t} | {fmt(a1)} | {fmt(a2)} | "
                         f"{'—' if ra is None else f'{ra:.2f}'} | {fmt(b1)} | {fmt(b2)} | "
                         f"{'—' if rb is None else f'{rb:.2f}'} |")
        L.append("")
    notes = [c for c in res["cases"] if c.get("note")]
    if notes:
        L.append("## Notes on the cases\n")
        for c in notes:
            L.append(f"- {c['label']}: {c['note']}")
        L.append("")
    L.append("Raw per-rep values: the .json file of the same name.")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def merge(args):
    runs = []
    for path in args.merge:
        with open(path) as f:
            runs.append(json.load(f))
    res = dict(header=dict(runs[0]["header"]), cases=[])
    by_id = {}
    for run_ in runs:
        for c in run_["cases"]:
            by_id[c["id"]] = c
    order = [c["id"] for c in CASES]
    res["cases"] = [by_id[i] for i in order if i in by_id]
    res["header"]["merged_from"] = [os.path.basename(p) for p in args.merge]
    res["header"]["runtime_min"] = sum(r["header"]["runtime_min"] for r in runs)
    stem = os.path.splitext(args.merge[0])[0] + "-merged"
    with open(stem + ".json", "w") as f:
        json.dump(res, f, indent=1)
    write_markdown(res, stem + ".md")
    log(f"wrote {stem}.json and {stem}.md")
    with open(stem + ".md") as f:
        print(f.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stet", help="stet binary (default: build-bench/bin/stet, build/bin/stet)")
    ap.add_argument("--llamacpp", help="dir from bench/build_llamacpp.sh "
                                       "(default: newest ~/.cache/stet/llama.cpp-*)")
    ap.add_argument("--stet-commit", help="the commit the stet binary was built from "
                                          "(default: this checkout's HEAD)")
    ap.add_argument("--no-peer", action="store_true", help="measure stet only")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--isa", default="auto", choices=["auto", "scalar", "avx2", "avx512"],
                    help="stet's kernel path; avx2 also picks the AVX2-only llama.cpp build "
                         "(bench/build_llamacpp.sh --avx2)")
    ap.add_argument("--numerics", default="invariant", choices=["invariant", "fast", "precise"],
                    help="stet's numerics mode (docs/numerics.md; numerics v1 tables = fast)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--big-reps", type=int, default=3, help="reps for the 0.5B and 1B cases")
    ap.add_argument("--cases", default="all", help="comma list of: " +
                    ", ".join(c["id"] for c in CASES))
    ap.add_argument("--pp", default="128,512")
    ap.add_argument("--tg", default="128")
    ap.add_argument("--batch", default="1,4,16,32")
    ap.add_argument("--batched-n", type=int, default=32, help="decode steps per batched test")
    ap.add_argument("--batched-prompt", type=int, default=16, help="untimed prompt per sequence")
    ap.add_argument("--batched-cases", default="real-q4_1,0.5b-q4_1",
                    help="cases that get batched decode")
    ap.add_argument("--no-batched", dest="batched", action="store_false")
    ap.add_argument("--depths", default="2048,4096,7680",
                    help="context depths for the long-context tests ('' for none); 7680 + "
                         "the 512-token test is SmolLM2's whole 8192-position context")
    ap.add_argument("--depth-pp", type=int, default=512)
    ap.add_argument("--depth-tg", type=int, default=128)
    ap.add_argument("--depth-cases", default="real-q4_1,0.5b-q4_1",
                    help="cases that get the long-context tests")
    ap.add_argument("--no-contended", dest="contended", action="store_false",
                    help="skip the busy-machine case")
    ap.add_argument("--contended-cases", default="real-q4_1")
    ap.add_argument("--no-adaptive", dest="adaptive", action="store_false",
                    help="skip the --numerics adaptive runs (the invariant/adaptive column)")
    ap.add_argument("--nice", type=int, default=0,
                    help="niceness of the measured processes, each in its own session and "
                         "autogroup (negative needs root; keeps a shared machine's other load "
                         "from dominating)")
    ap.add_argument("--models-dir", default=os.path.join(CACHE, "bench-models"))
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="no measuring: merge the cases of earlier runs' JSON files (later "
                         "files replace a case of the same id) and write one table")
    args = ap.parse_args()
    args.pp = [int(x) for x in args.pp.split(",") if x]
    args.tg = [int(x) for x in args.tg.split(",") if x]
    args.batch = [int(x) for x in args.batch.split(",") if x]
    args.batched_cases = args.batched_cases.split(",")
    args.depths = [int(x) for x in args.depths.split(",") if x]
    args.depth_cases = args.depth_cases.split(",")
    args.contended_cases = args.contended_cases.split(",")
    if args.depths and args.depth_tg not in args.tg:
        args.tg.append(args.depth_tg)  # depth 0 of the attention-cost column
    want = ([c["id"] for c in CASES if not c.get("optin")] if args.cases == "all"
            else args.cases.split(","))
    unknown = set(want) - {c["id"] for c in CASES}
    if unknown:
        sys.exit(f"run.py: unknown case(s) {sorted(unknown)}")

    if args.merge:
        return merge(args)
    t_start = time.time()
    stet = find_stet(args.stet)
    peer = None if args.no_peer else find_llamacpp(args.llamacpp, args.isa)
    if not args.no_peer and not peer:
        log("llama.cpp not found: measuring stet only (build it with bench/build_llamacpp.sh)")
    commit = args.stet_commit or git("rev-parse", "HEAD")
    env = dict(os.environ, STET_GIT_COMMIT=commit or "")
    now = datetime.datetime.now()
    host = socket.gethostname()
    header = dict(date=now.strftime("%Y-%m-%d %H:%M"), host=host, cpu=cpu_model(),
                  nproc=os.cpu_count(), threads=args.threads, reps=args.reps,
                  big_reps=args.big_reps, pp=args.pp, tg=args.tg, batch=args.batch,
                  batched_n=args.batched_n, batched_prompt=args.batched_prompt, nice=args.nice,
                  depths=args.depths, depth_pp=args.depth_pp, depth_tg=args.depth_tg,
                  stet_commit=commit, stet_binary=os.path.relpath(stet, REPO),
                  llama_cpp=peer, python=platform.python_version(),
                  loadavg_start=os.getloadavg())
    log("measuring memory bandwidth")
    bw = [membw(args.threads, args.nice)]
    cases = []
    for case in CASES:
        if case["id"] not in want:
            continue
        model = ensure_model(stet, case, args.models_dir, args.threads)
        if not model:
            log(f"{case['id']}: model file missing, skipped")
            continue
        t0 = time.time()
        try:
            r = run_case(case, model, stet, peer, args, env)
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError) as e:
            r = dict(id=case["id"], label=case["label"], error=str(e))
            log(f"{case['id']}: {e}")
        r["seconds"] = time.time() - t0
        log(f"{case['id']}: {r['seconds']:.0f} s")
        cases.append(r)
    bw.append(membw(args.threads, args.nice))
    best = max(bw, key=lambda b: b["gbps_best"])
    header.update(membw=best, membw_runs=bw, loadavg_end=os.getloadavg(),
                  runtime_min=(time.time() - t_start) / 60)
    for c in cases:
        if "stet_info" in c:
            header.setdefault("stet_isa", c["stet_info"]["isa"])
            header.setdefault("numerics", c["stet_info"]["numerics"])
        if "llama_info" in c:
            header.setdefault("llama_build", f"{c['llama_info']['build_commit']} "
                                             f"({c['llama_info']['build_number']})")
            header.setdefault("llama_flash_attn", c["llama_info"]["flash_attn"])
    res = dict(header=header, cases=cases)
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"{now.strftime('%Y-%m-%d')}-{re.sub(r'[^A-Za-z0-9_.-]', '_', host)}"
                        + ("" if args.isa == "auto" else f"-{args.isa}"))
    with open(stem + ".json", "w") as f:
        json.dump(res, f, indent=1)
    write_markdown(res, stem + ".md")
    log(f"wrote {stem}.json and {stem}.md ({header['runtime_min']:.1f} min)")
    with open(stem + ".md") as f:
        print(f.read())


if __name__ == "__main__":
    main()

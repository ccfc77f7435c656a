#!/usr/bin/env python3
"""How close are stet's (and llama.cpp's) log-probabilities to the truth?

For each model, teacher-forced over fixed token paths (prompt + a greedy
continuation recorded in tests/golden/), it compares three forward passes of the
same weights: a float64 one over the exactly dequantized weights (oracle.py, the
truth), stet's (bench/fidelity/score.cc) and llama.cpp's
(scripts/golden/llamacpp_run.cc `score`, f16 KV, no flash attention). Per
generated step: |logprob(path token) - float64's| and the KL divergence
KL(p_f64 || p_engine) of the full next-token distribution. Prints one table
(mean, p95, max of each) and writes the raw numbers as JSON.

Models: SmolLM2-135M-Instruct Q4_1 and Gemma 3 270M Q4_K_M as people download
them, and SmolLM2 requantized by `stet quantize` into every other weight type
stet runs (a trained model in each type: every matrix the type can hold is in
it). llama.cpp comes from bench/build_llamacpp.sh (native build).

  python3 bench/fidelity/run.py                       # every model, both engines
  python3 bench/fidelity/run.py --types q8_0,q4_k     # a subset (real files: smollm2, gemma3)
  python3 bench/fidelity/run.py --no-llamacpp --json out.json
  python3 bench/fidelity/run.py --modes invariant     # stet's modes (default: invariant,fast,precise)
Env: STET_BUILD (default build/), STET_LLAMACPP_DIR (default ~/.cache/stet/llama.cpp-0.3.36).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import oracle  # noqa: E402

MODELS = os.path.expanduser(os.environ.get("STET_MODEL_CACHE", "~/.cache/stet/models"))
SMOL = os.path.join(MODELS, "SmolLM2-135M-Instruct.Q4_1.gguf")
GEMMA = os.path.join(MODELS, "gemma-3-270m-q4_k_m.gguf")
GOLDEN = {SMOL: "tests/golden/smollm2/llamacpp_greedy.json",
          GEMMA: "tests/golden/gemma3/gemma-3-270m.json"}
REQUANT = ["f16", "bf16", "q8_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q2_k", "q3_k", "q4_k",
           "q5_k", "q6_k", "iq4_xs"]


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def paths_of(golden):
    g = json.load(open(os.path.join(ROOT, golden)))
    return [(c["prompt_ids"], [s["id"] for s in c["steps"]]) for c in g["cases"]]


def build_llamacpp_driver(llama_dir, tmp):
    vendor = os.path.join(llama_dir, "src", "vendor", "llama.cpp")
    build = os.path.join(llama_dir, "build")
    libs = [os.path.join(build, p) for p in ("src/libllama.a", "ggml/src/libggml.a",
                                             "ggml/src/libggml-cpu.a", "ggml/src/libggml-base.a")]
    if not all(os.path.exists(l) for l in libs):
        sys.exit(f"fidelity: no llama.cpp build in {llama_dir} (run bench/build_llamacpp.sh, "
                 "or pass --no-llamacpp)")
    exe = os.path.join(tmp, "llamacpp_run")
    subprocess.run(["g++", "-O2", "-std=c++17", "-I" + os.path.join(vendor, "include"),
                    "-I" + os.path.join(vendor, "ggml", "include"),
                    os.path.join(ROOT, "scripts/golden/llamacpp_run.cc"), "-o", exe] + libs +
                   ["-fopenmp", "-lpthread", "-ldl"], check=True)
    return exe


def engine_logits(cmd, seqs, n_vocab, tmp):
    """Runs a scorer (stdin/IDS file of sequences -> float32 logits of every position)."""
    ids = os.path.join(tmp, "ids.txt")
    out = os.path.join(tmp, "logits.f32")
    with open(ids, "w") as f:
        for s in seqs:
            f.write(" ".join(map(str, s)) + "\n")
    cmd = [c.replace("{IDS}", ids).replace("{OUT}", out) for c in cmd]
    with open(ids) as stdin:
        subprocess.run(cmd, stdin=stdin, check=True, stdout=subprocess.DEVNULL)
    flat = np.fromfile(out, dtype=np.float32)
    rows, at = [], 0
    for s in seqs:
        rows.append(flat[at:at + len(s) * n_vocab].reshape(len(s), n_vocab).astype(np.float64))
        at += len(s) * n_vocab
    if at != flat.size:
        sys.exit(f"fidelity: {cmd[0]} wrote {flat.size} floats, expected {at}")
    return rows


def log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - (np.log(np.exp(x - m).sum(-1, keepdims=True)) + m)


def measure(model_path, paths, engines, n_threads):
    """Per engine: per-step |Δ logprob| of the path token and KL(f64 || engine)."""
    o = oracle.Oracle(model_path)
    n_vocab = o.out.shape[0]
    seqs = [p + g for p, g in paths]
    got = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in engines.items():
            got[name] = engine_logits(cmd(model_path), seqs, n_vocab, tmp)
    res = {name: {"dlp": [], "kl": []} for name in engines}
    for i, (p, g) in enumerate(paths):
        rows = np.arange(len(p) - 1, len(p) + len(g) - 1)
        truth = o.forward(seqs[i], rows)
        pt = np.exp(truth)
        for name in engines:
            lp = log_softmax(got[name][i][rows])
            tok = np.array(g)
            res[name]["dlp"] += list(np.abs(lp[np.arange(len(g)), tok] - truth[np.arange(len(g)), tok]))
            res[name]["kl"] += list((pt * (truth - lp)).sum(-1))
    return res


def stats(v):
    v = np.array(v)
    return {"mean": float(v.mean()), "p95": float(np.percentile(v, 95)), "max": float(v.max())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--types", default="smollm2,gemma3," + ",".join(REQUANT),
                    help="comma list: smollm2 (Q4_1 file), gemma3 (Q4_K_M file), and types "
                         "to requantize SmolLM2 into")
    ap.add_argument("--no-llamacpp", action="store_true", help="stet only")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--modes", default="invariant,fast,precise",
                    help="stet numerics modes, one column each (precise runs with f32 KV)")
    ap.add_argument("--stet-args", default="", help="extra stet_fidelity_score options")
    ap.add_argument("--json", default="", help="write the per-step numbers here")
    a = ap.parse_args()
    build = os.environ.get("STET_BUILD", os.path.join(ROOT, "build"))
    stet_bin = os.path.join(build, "bin")
    llama_dir = os.path.expanduser(os.environ.get("STET_LLAMACPP_DIR",
                                                  "~/.cache/stet/llama.cpp-0.3.36"))
    tmp_root = tempfile.mkdtemp(prefix="stet-fidelity-")
    engines = {}
    for mode in [m for m in a.modes.split(",") if m]:
        kv = ["--kv", "f32"] if mode == "precise" else []
        engines[f"stet {mode}"] = (
            lambda m, mode=mode, kv=kv: [os.path.join(stet_bin, "stet_fidelity_score"), m, "{IDS}",
                                         "{OUT}", "--threads", str(a.threads), "--numerics", mode]
            + kv + a.stet_args.split())
    if not a.no_llamacpp:
        exe = build_llamacpp_driver(llama_dir, tmp_root)
        engines["llama.cpp"] = lambda m: [exe, "score", m, "512", str(a.threads), "{OUT}"]
    results = []
    print(f"CPU: {cpu_name()}; stet ISA: {os.environ.get('STET_ISA', 'best')}; "
          f"threads {a.threads}", flush=True)
    for t in [t for t in a.types.split(",") if t]:
        t0 = time.time()
        if t == "smollm2":
            name, path, golden = "SmolLM2-135M Q4_1 (file)", SMOL, GOLDEN[SMOL]
        elif t == "gemma3":
            name, path, golden = "Gemma 3 270M Q4_K_M (file)", GEMMA, GOLDEN[GEMMA]
        else:
            name, golden = f"SmolLM2-135M → {t}", GOLDEN[SMOL]
            path = os.path.join(tmp_root, f"smollm2-{t}.gguf")
            subprocess.run([os.path.join(stet_bin, "stet"), "quantize", "-m", SMOL, "-o", path,
                            "--type", t], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if not os.path.exists(path):
            sys.exit(f"fidelity: {path} is missing (scripts/setup --model ...)")
        r = measure(path, paths_of(golden), engines, a.threads)
        row = {"model": name, "type": t, "steps": len(next(iter(r.values()))["dlp"]),
               "seconds": round(time.time() - t0, 1)}
        for eng, v in r.items():
            row[eng] = {"dlogprob": stats(v["dlp"]), "kl": stats(v["kl"]), "raw": v}
        results.append(row)
        print_row(row, list(engines), flush=True)
    print_table(results, list(engines))
    if a.json:
        json.dump({"cpu": cpu_name(), "command": " ".join(sys.argv), "results": results},
                  open(a.json, "w"), indent=1)


def print_row(row, engines, flush=False):
    cells = [f"{row['model']} ({row['steps']} steps, {row['seconds']} s)"]
    for e in engines:
        d, k = row[e]["dlogprob"], row[e]["kl"]
        cells.append(f"{e}: |Δlp| mean {d['mean']:.4f} p95 {d['p95']:.4f} max {d['max']:.4f}, "
                     f"KL mean {k['mean']:.2e} max {k['max']:.2e}")
    print("  " + " | ".join(cells), flush=flush)


def print_table(results, engines):
    print("\n| model | engine | mean | p95 | max | KL mean | KL max |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        for e in engines:
            d, k = r[e]["dlogprob"], r[e]["kl"]
            print(f"| {r['model']} | {e} | {d['mean']:.4f} | {d['p95']:.4f} | {d['max']:.4f} | "
                  f"{k['mean']:.1e} | {k['max']:.1e} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Tensor parallelism (issue 30) measured on this machine and projected on paper.

1. `stet bench` on the Llama-3.2-1B shape (random q4_k weights, `stet gguf-random`):
   `-np 1 -t 2` against `mpirun -np 2 -t 1` through shared memory and through TCP
   (`--mca btl tcp,self`): prefill and decode tokens/s (medians), the bytes the ranks
   sent each other per token (payloads, counted by stet's collectives), peak RSS per rank.
2. The bytes per decoded token on paper, from the split itself (every gathered width
   once per layer, the embedding row, the logits row, the step frame), checked against
   the measurement above.
3. Decode tokens/s on paper for the Llama-3.1-8B and Llama-3.1-70B shapes on 2/4/8
   machines at 1/10/25 Gbit/s, from those bytes, next to distributed-llama's published
   Raspberry Pi figures.

Timings on a shared 2-core machine are noise while others compile: the table says so.
Python 3 standard library only. Usage: bench/tp/run.py [--reps 3] [--stet PATH]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from benchutil import REPO, cpu_model, git, log  # noqa: E402
import llamacpp_rpc  # noqa: E402

CACHE = os.path.expanduser("~/.cache/stet")
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

# Shapes: layers, n_embd, query width, n_ff, vocabulary, weight bytes (q4_k-class, ~4.5 bits).
SHAPES = {
    "llama-3.2-1b": dict(layers=16, embd=2048, q=2048, ff=8192, vocab=128256, heads=32),
    "llama-3.1-8b": dict(layers=32, embd=4096, q=4096, ff=14336, vocab=128256, heads=32,
                         weight_gb=4.9),
    "llama-3.1-70b": dict(layers=80, embd=8192, q=8192, ff=28672, vocab=128256, heads=64,
                          weight_gb=42.5),
}
FRAME_BYTES = 1024  # src/dist/wire.cc: one step frame from rank 0 to each other rank
PI5_GBS = 11.4  # Raspberry Pi 5 sustained DRAM bandwidth (hellomatik.com, 2026, 4x Pi 5 study)

# distributed-llama's README (2024 versions; Q40 weights, Q80 activations on the wire,
# Gigabit Ethernet), github.com/b4rtaz/distributed-llama. ms per token.
DLLAMA = [
    ("Llama 3 8B, Raspberry Pi 5 8GB (v0.3.1)", {1: 564.31, 2: 444.27, 4: 331.47}),
    ("Llama 2 7B, Raspberry Pi 4B 8GB (v0.1.0)", {1: 1312.50, 2: 793.69, 4: 494.00, 8: 588.19}),
    ("Llama 2 70B, Raspberry Pi 4B 8GB (v0.1.0)", {8: 4842.81}),
]
DLLAMA_KB_8B = {"f32": {2: 2048, 4: 6144, 8: 14336}, "q80": {2: 544, 4: 1632, 8: 3808}}


def wire_bytes_per_token(shape, n):
    """Bytes all ranks send per decoded token (one row) with the model split n ways.

    An all-gather of width w floats: each rank sends its w/n share to the n - 1 others,
    so the group sends w * 4 * (n - 1) bytes. Per layer: the attention heads' output
    (q), wo's rows (embd), the FFN activation (ff), w_down's rows (embd). Plus the
    embedding row (its owner sends it), the logits row (to rank 0 only: (n-1)/n of it)
    and the step frame rank 0 broadcasts.
    """
    s = SHAPES[shape]
    per_layer = (s["q"] + s["embd"] + s["ff"] + s["embd"]) * 4 * (n - 1)
    return (s["layers"] * per_layer + s["embd"] * 4 * (n - 1) + s["vocab"] * 4 * (n - 1) / n
            + FRAME_BYTES * (n - 1))


def root_traffic_per_token(shape, n):
    """Bytes rank 0 sends plus receives per decoded token: (n-1)/n of every gathered
    width each way, the logits row in, the frame out (distributed-llama's metric)."""
    s = SHAPES[shape]
    per_layer = (s["q"] + s["embd"] + s["ff"] + s["embd"]) * 4 * (n - 1) / n
    return (2 * s["layers"] * per_layer + 2 * s["embd"] * 4 * (n - 1) / n
            + s["vocab"] * 4 * (n - 1) / n + FRAME_BYTES * (n - 1))


def per_rank_seconds(shape, n, gbit, latency_us):
    """Network time per token on one rank's link: its share of the bytes at the link
    rate (ring all-gather: each rank sends and receives (n-1)/n of every width) plus
    n - 1 latencies per collective (4 per layer, embedding, logits, frame)."""
    s = SHAPES[shape]
    sent = wire_bytes_per_token(shape, n) / n
    collectives = 4 * s["layers"] + 3
    return sent * 8 / (gbit * 1e9) + collectives * (n - 1) * latency_us * 1e-6


def ensure_model(stet, threads):
    path = os.path.join(CACHE, "bench-models", "llama-3.2-1b.q4_k.seed1.gguf")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        log(f"writing {path} (stet gguf-random, a few minutes)")
        subprocess.run([stet, "gguf-random", "--shape", "llama-3.2-1b", "--type", "q4_k",
                        "--seed", "1", "-t", str(threads), "-o", path + ".tmp"], check=True)
        os.replace(path + ".tmp", path)
    return path


def bench(cmd, env):
    log(" ".join(cmd))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env={**os.environ, **env}).stdout
    return json.loads(out)


def measure(args, stet, model):
    common = ["bench", "-m", model, "-p", str(args.prompt), "-n", str(args.gen), "-r",
              str(args.reps), "--json"]
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("bench/tp: mpirun not found (scripts/setup installs openmpi-bin)")
    runs = [
        ("-np 1 -t 2", [stet, *common, "-t", "2"]),
        ("-np 2 -t 1, shared memory", [mpirun, "--oversubscribe", "-np", "2", stet, *common,
                                       "-t", "1"]),
        ("-np 2 -t 1, TCP (btl tcp,self)", [mpirun, "--oversubscribe", "--mca", "btl",
                                            "tcp,self", "-np", "2", stet, *common, "-t", "1"]),
    ]
    rows = []
    for name, cmd in runs:
        j = bench(cmd, ROOT_ENV)
        pp = next(t for t in j["tests"] if t["kind"] == "pp")
        tg = next(t for t in j["tests"] if t["kind"] == "tg")
        rows.append(dict(name=name, pp=pp["median_tok_s"], tg=tg["median_tok_s"],
                         wire_pp=pp.get("wire_bytes_per_token", 0),
                         wire_tg=tg.get("wire_bytes_per_token", 0),
                         rss=[b / 2**20 for b in j.get("peak_rss_bytes", [])]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stet", default=None, help="the stet binary (default: build*/bin/stet)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--prompt", type=int, default=64, help="ppN")
    ap.add_argument("--gen", type=int, default=32, help="tgN")
    ap.add_argument("--mem-gbs", type=float, default=40.0,
                    help="per-machine memory bandwidth for the on-paper decode (GB/s)")
    ap.add_argument("--paper-only", action="store_true", help="skip the measurement")
    ap.add_argument("--rpc-layers", type=int, default=8,
                    help="layers llama.cpp's RPC peer puts in its second process (of 16)")
    args = ap.parse_args()
    stet = args.stet or next((p for p in (os.path.join(REPO, d, "bin", "stet") for d in
                                          ("build-bench", "build")) if os.path.exists(p)), None)
    if not stet and not args.paper_only:
        sys.exit("bench/tp: no stet binary (build it, or pass --stet)")

    print(f"# Tensor parallelism — stet {git('rev-parse', '--short', 'HEAD') or '?'}, "
          f"{cpu_model()}, {os.cpu_count()} cores\n")
    measured_tg = None
    if not args.paper_only:
        rows = measure(args, stet, ensure_model(stet, 2))
        base = rows[0]
        print("Llama-3.2-1B shape, random q4_k weights. Preliminary: a shared machine; others "
              "compiling make every number noise.\n")
        print("| run | pp%d t/s | ratio | tg%d t/s | ratio | bytes between ranks per token "
              "(decode / prefill) | peak RSS per rank |" % (args.prompt, args.gen))
        print("|---|---:|---:|---:|---:|---:|---|")
        for r in rows:
            rss = ", ".join(f"{m:.0f} MiB" for m in r["rss"])
            wire = (f"{r['wire_tg'] / 1024:.0f} KiB / {r['wire_pp'] / 1024:.0f} KiB"
                    if r["wire_tg"] else "—")
            print(f"| {r['name']} | {r['pp']:.1f} | {r['pp'] / base['pp']:.2f} | {r['tg']:.2f} "
                  f"| {r['tg'] / base['tg']:.2f} | {wire} | {rss} |")
        measured_tg = rows[-1]["wire_tg"]
        print()
        peer = llamacpp_rpc.measure(args, ensure_model(stet, 2))
        if peer is None:
            print("llama.cpp's RPC peer: not built (bench/build_llamacpp.sh --rpc); not measured.\n")
        else:
            print("llama.cpp's RPC backend on the same file (splits by layers; the same "
                  "caveat on timings):\n")
            print("| run | pp%d t/s | ratio | tg%d t/s | ratio | greedy text = 1 process |"
                  % (args.prompt, args.gen))
            print("|---|---:|---:|---:|---:|---|")
            for r in peer:
                same = "—" if "same_text" not in r else ("yes" if r["same_text"] else "**no**")
                print(f"| {r['name']} | {r['pp']:.1f} | {r['pp'] / peer[0]['pp']:.2f} | "
                      f"{r['tg']:.2f} | {r['tg'] / peer[0]['tg']:.2f} | {same} |")
            print()

    model = wire_bytes_per_token("llama-3.2-1b", 2)
    print(f"Bytes per decoded token on paper, Llama-3.2-1B, 2 ranks: {model / 1024:.0f} KiB"
          + (f" (measured over TCP: {measured_tg / 1024:.0f} KiB, "
             f"{100 * (measured_tg - model) / model:+.1f}%)" if measured_tg else "") + "\n")

    print(f"Decode tok/s on paper: weights read at {args.mem_gbs:.0f} GB/s per machine "
          "(q4_k-class weights), one rank per machine, ring all-gathers; latency per "
          "collective step 50 µs at 1 Gbit/s, 20 µs at 10, 10 µs at 25. In brackets: the "
          "network alone (the ceiling if compute were free).\n")
    print("| shape | machines | KiB per token (all ranks) | 1 Gbit/s | 10 Gbit/s | 25 Gbit/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for shape in ("llama-3.1-8b", "llama-3.1-70b"):
        s = SHAPES[shape]
        for n in (2, 4, 8):
            compute = s["weight_gb"] * 1e9 / n / (args.mem_gbs * 1e9)
            cells = []
            for gbit, lat in ((1, 50), (10, 20), (25, 10)):
                net = per_rank_seconds(shape, n, gbit, lat)
                cells.append(f"{1 / (compute + net):.1f} ({1 / net:.0f})")
            print(f"| {shape} | {n} | {wire_bytes_per_token(shape, n) / 1024:.0f} | "
                  + " | ".join(cells) + " |")
    print()
    print("distributed-llama's published figures (Gigabit Ethernet, Q40 weights, Q80 "
          "activations on the wire, so its numbers are not one process's), and stet on paper "
          f"for a Raspberry-Pi-5-class machine ({PI5_GBS} GB/s sustained, the figure "
          "hellomatik measured on a Pi 5; 1 Gbit/s, 50 µs). stet's rows are a roofline (weights "
          "read at full bandwidth, the network model above): an upper bound, not a measurement."
          "\n")
    print("| model, device | 1 | 2 | 4 | 8 |")
    print("|---|---:|---:|---:|---:|")
    for name, ms in DLLAMA:
        cells = [f"{1000 / ms[n]:.2f} tok/s" if n in ms else "—" for n in (1, 2, 4, 8)]
        print(f"| {name} | " + " | ".join(cells) + " |")
    for shape in ("llama-3.1-8b", "llama-3.1-70b"):
        s = SHAPES[shape]
        cells = []
        for n in (1, 2, 4, 8):
            compute = s["weight_gb"] * 1e9 / n / (PI5_GBS * 1e9)
            net = per_rank_seconds(shape, n, 1, 50) if n > 1 else 0.0
            cells.append(f"{1 / (compute + net):.2f} tok/s (paper)")
        print(f"| stet {shape}, Pi-5-class | " + " | ".join(cells) + " |")
    kb = DLLAMA_KB_8B
    stet_kb = "/".join(f"{root_traffic_per_token('llama-3.1-8b', n) / 1024:.0f}"
                       for n in (2, 4, 8))
    print(f"\nBytes per token through the root's link, Llama 3 8B on 2/4/8 machines "
          f"(sent + received): distributed-llama Q80 {kb['q80'][2]}/{kb['q80'][4]}/"
          f"{kb['q80'][8]} KiB, F32 {kb['f32'][2]}/{kb['f32'][4]}/{kb['f32'][8]} KiB; stet "
          f"{stet_kb} KiB. stet gathers finished f32 rows (the attention output and the FFN "
          "activation too) instead of summing partial products, so no sum depends on the "
          "split: the price of bits equal to one process's is about 1.7x distributed-llama's "
          "f32 traffic at 2 machines, less at 8.")


if __name__ == "__main__":
    main()

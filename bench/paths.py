#!/usr/bin/env python3
"""`--isa auto` against every single kernel path of this CPU, on the same models.

stet's kernel paths give the same bits, so `auto` may choose among them per weight type and
row class by measuring at model load (kernels/matmul_tune.h). This script checks that the
choice pays: for each model it runs `stet bench` (prefill ppN and decode tgN) with
`--isa auto,avx2,avx512` (avx512 where the CPU has it): one process per round whose
repetitions take turns among the paths (auto, avx2, avx512, auto, ... each a few seconds
apart), the order rotating between rounds, so that drifts in machine load and in a shared
host's memory bandwidth hit every path alike; it reports the medians over all repetitions
and auto / best single path. The kernel plans are
measured afresh first (a private plan cache under the output folder), once per model, as a
user's first run would.

    bench/paths.py                                  # default models, 5 rounds of 3 reps
    bench/paths.py --cases real-q4_1,1b-q4_k --rounds 3 --numerics fast

Standard library only; models as bench/run.py names them (random ones are written with
`stet gguf-random` when missing).
"""

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import REPO, cpu_model, git, log  # noqa: E402
import run as benchrun  # noqa: E402  (bench/run.py: the case list and model writer)

DEFAULT_CASES = "real-q4_1,real-gemma3,135m-f16,135m-q8_0,1b-q4_k,1b-q4_k_m"


def stet_isas(stet, model, env):
    """The forced paths to compare: AVX2, and AVX-512 where stet itself would use it (its own
    CPU check, `best_isa` in `stet bench --json`: F/DQ/BW/VL and VNNI, saved by the OS)."""
    out = subprocess.run([stet, "bench", "-m", model, "-p", "1", "-n", "0", "-r", "1", "--json"],
                         capture_output=True, text=True, env=env, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"paths: stet bench failed:\n{out.stderr[-2000:]}")
    best = json.loads(out.stdout)["best_isa"]
    return {"avx512": ["avx2", "avx512"], "avx2": ["avx2"]}.get(best, [])


def one_round(stet, model, paths, args, env):
    """One process measuring every path, its reps taking turns: {path: (pp reps, tg reps,
    plan)}."""
    cmd = [stet, "bench", "-m", model, "-p", str(args.pp), "-n", str(args.tg),
           "-r", str(args.reps), "-t", str(args.threads), "--isa", ",".join(paths),
           "--numerics", args.numerics, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"paths: {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    res = {}
    for j in json.loads(out.stdout):
        by = {t["kind"]: t["tok_s"] for t in j["tests"]}
        res[j["isa"]] = (by.get("pp", []), by.get("tg", []), j.get("kernel_plan", ""))
    return res


def measure_case(case, model, stet, isas, args, env):
    paths = ["auto"] + isas
    res = {p: {"pp": [], "tg": []} for p in paths}
    plan = ""
    for rnd in range(args.rounds):
        order = paths[rnd % len(paths):] + paths[:rnd % len(paths)]
        got = one_round(stet, model, order, args, env)
        for p in paths:
            pp, tg, p_plan = got[p]
            res[p]["pp"] += pp
            res[p]["tg"] += tg
            plan = plan or p_plan
        log(f"{case['id']} round {rnd + 1}/{args.rounds}: " + ", ".join(
            f"{p} pp {statistics.median(got[p][0]):.1f} tg {statistics.median(got[p][1]):.1f}"
            for p in paths))
    med = {p: {k: statistics.median(v) for k, v in res[p].items()} for p in paths}
    return {"case": case["id"], "label": case["label"], "plan": plan, "runs": res, "median": med}


def write_markdown(results, isas, args, path):
    lines = [f"# `--isa auto` vs each kernel path — {cpu_model()}", "",
             f"- date: {datetime.date.today()}, stet commit {git('rev-parse', '--short', 'HEAD')}",
             f"- ISAs here: {', '.join(isas)}; threads {args.threads}; numerics {args.numerics}; "
             f"pp{args.pp} and tg{args.tg}; medians over {args.rounds} rounds x {args.reps} "
             "reps, each round one process whose reps take turns among the paths",
             "- command: `python3 bench/paths.py " + " ".join(sys.argv[1:]) + "`"] + (
                 [f"- STET_MAX_ISA={args.max_isa}: stet saw this CPU as one whose best path is "
                  f"{args.max_isa} (its kernel table, plans and `auto`); the timings are this "
                  "CPU's"] if args.max_isa else []) + [
             "",
             "| model | test | auto t/s | " + " | ".join(f"{i} t/s" for i in isas) +
             " | best single path | auto / best |",
             "|---|---|---:|" + "---:|" * len(isas) + "---|---:|"]
    worst = None
    for r in results:
        for test in ("pp", "tg"):
            name = f"{test}{args.pp if test == 'pp' else args.tg}"
            auto = r["median"]["auto"][test]
            singles = {i: r["median"][i][test] for i in isas}
            best = max(singles, key=singles.get)
            ratio = auto / singles[best]
            worst = ratio if worst is None else min(worst, ratio)
            lines.append(f"| {r['label']} | {name} | {auto:.1f} | " +
                         " | ".join(f"{singles[i]:.1f}" for i in isas) +
                         f" | {best} | {ratio:.3f} |")
    lines += ["", f"Lowest auto / best: {worst:.3f} (target >= 0.97).", "",
              "Plans `auto` chose (per weight type and row class):", ""]
    for r in results:
        plan = ", ".join(x for x in r["plan"].split("\n") if x)
        lines.append(f"- {r['label']}: {plan or '(one candidate per class)'}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stet", help="stet binary (default: build-bench/bin/stet, build/bin/stet)")
    ap.add_argument("--cases", default=DEFAULT_CASES,
                    help="comma list of bench/run.py case ids (default: %(default)s)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--numerics", default="invariant", choices=["invariant", "fast", "precise"])
    ap.add_argument("--pp", type=int, default=128)
    ap.add_argument("--tg", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5,
                    help="processes per model, the path order rotating (default: %(default)s)")
    ap.add_argument("--reps", type=int, default=3,
                    help="reps per path in each round, taking turns (default: %(default)s)")
    ap.add_argument("--models-dir", default=os.path.join(benchrun.CACHE, "bench-models"))
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--max-isa", choices=["avx2", "avx512"],
                    help="run stet as a CPU whose best path is this one would (STET_MAX_ISA): "
                         "avx2 = the choices of an x86 CPU without AVX-512, timed on this one")
    args = ap.parse_args()
    stet = benchrun.find_stet(args.stet)
    by_id = {c["id"]: c for c in benchrun.CASES}
    unknown = [c for c in args.cases.split(",") if c not in by_id]
    if unknown:
        raise SystemExit(f"paths: unknown case(s) {unknown}; known: {', '.join(by_id)}")
    plan_dir = tempfile.mkdtemp(prefix="stet-plans-")
    env = dict(os.environ, STET_KERNEL_CACHE=plan_dir)
    env.pop("STET_KERNEL_PLAN", None)
    env.pop("STET_MAX_ISA", None)
    if args.max_isa:
        env["STET_MAX_ISA"] = args.max_isa
    results, isas = [], None
    try:
        for cid in args.cases.split(","):
            case = by_id[cid]
            model = benchrun.ensure_model(stet, case, args.models_dir, args.threads)
            if model is None or not os.path.exists(model):
                raise SystemExit(f"paths: no model for {cid} (scripts/setup fetches the real ones)")
            if isas is None:
                isas = stet_isas(stet, model, env)
                if not isas:
                    raise SystemExit("paths: stet runs one x86 path here (no AVX2): "
                                     "nothing for auto to choose")
            results.append(measure_case(case, model, stet, isas, args, env))
    finally:
        shutil.rmtree(plan_dir, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    stem = f"{datetime.date.today()}-paths-{cpu_model().split()[-1].lower()}-{args.numerics}"
    if args.max_isa:
        stem += f"-max-{args.max_isa}"
    with open(os.path.join(args.out, stem + ".json"), "w") as f:
        json.dump({"cpu": cpu_model(), "isas": isas, "args": vars(args), "results": results}, f,
                  indent=1)
    write_markdown(results, isas, args, os.path.join(args.out, stem + ".md"))


if __name__ == "__main__":
    main()

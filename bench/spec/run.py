#!/usr/bin/env python3
"""Speculative decoding on stet: decode tok/s with speculation off / prompt lookup / a draft
model, on a copy-heavy task (rewrite a paragraph or code block with one small change) and free
generation, greedy, and free generation with seeded temperature 0.7, at 1 and 4 concurrent
sequences; the acceptance
rate; and whether every request's tokens and logprobs equal the run without speculation.

Targets: SmolLM2-135M-Instruct re-encoded from the cached Q4_1 file by `stet quantize`
(q8_0, f16) into ~/.cache/stet/bench-models/, with the Q4_1 file itself as the draft; and
`gemma3`, the real Gemma 3 270M Q4_K_M file (scripts/setup --model gemma3-270m), lookup only
(there is no smaller Gemma 3 to draft with). Copy answers end where the model ends them (at
most 2n tokens), free generation runs n tokens; at one sequence the four prompts of a task
run one after another. Runs
build-dir/bin/stet_spec_bench (bench/spec/spec_bench.cc), which keeps one engine per mode,
runs the modes interleaved and reports medians over --reps. Writes bench/results/DATE-spec-HOST.{json,md}.

    bench/spec/run.py --build build --reps 3
    bench/spec/run.py --targets q8_0 --reps 1 -n 64        # quick
"""

import argparse
import datetime
import json
import os
import re
import socket
import statistics
import tempfile
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchutil import REPO, cpu_model, git, log  # noqa: E402

CACHE = os.path.join(os.path.expanduser("~"), ".cache", "stet")
DRAFT = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
GEMMA3 = os.path.join(CACHE, "models", "gemma-3-270m-q4_k_m.gguf")


def isa_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    fl = set(line.split(":", 1)[1].split())
                    return [x for x in ("avx2", "fma", "f16c", "avx512f", "avx512_vnni",
                                        "avx512_bf16") if x in fl]
    except OSError:
        pass
    return []


def target_name(name):
    return "Gemma 3 270M Q4_K_M" if name == "gemma3" else f"SmolLM2-135M {name}"


def draft_of(name):
    """The draft model of a target, None where there is none."""
    return None if name == "gemma3" else DRAFT


def target(build, dtype):
    if dtype == "gemma3":
        if not os.path.exists(GEMMA3):
            sys.exit(f"missing {GEMMA3}: run scripts/setup --model gemma3-270m")
        return GEMMA3
    path = os.path.join(CACHE, "bench-models", f"SmolLM2-135M-Instruct.{dtype}-from-q4_1.gguf")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        log(f"stet quantize -> {path}")
        subprocess.run([os.path.join(build, "bin", "stet"), "quantize", "-m", DRAFT, "-o", path,
                        "--type", dtype], check=True)
    return path


def bench(build, model, draft, args):
    cmd = [os.path.join(build, "bin", "stet_spec_bench"), "-m", model,
           "--threads", str(args.threads), "--reps", str(args.reps), "-n", str(args.n),
           "--k", str(args.k), "--conc", args.conc, "--tasks", args.tasks]
    cmd += ["--draft", draft, "--modes", "off,lookup,draft"] if draft else ["--modes", "off,lookup"]
    log(" ".join(cmd))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


LLAMA_SPEC = """llama.cpp's own speculation, one sequence (its examples run one stream), greedy,
the same prompts (all four of each task, one after another; copy answers end at the model's
end marker, at most 2n tokens; free generation n tokens with --ignore-eos), files and threads:
`llama-completion` (off), `llama-speculative-simple --spec-type ngram-simple` (lookup) and
`llama-speculative-simple --spec-type draft-simple -md DRAFT` (draft), --spec-draft-n-max = k,
all with --no-repack (ggml's AMX matmul segfaulted on a Sapphire Rapids VM; on x86 repacking
covers none of these weight types, so --no-repack only turns AMX off). Built by
bench/build_llamacpp.sh (pinned sources; the -noamx build where the native one's AMX crashes).
tok/s = decoded tokens / decode seconds as each prints them, summed over the four prompts
(the draft's prompt excluded), median over reps; accept = the mean of what it prints; `same` =
every generated text equals llama-completion's over their common length (the speculative
example may overshoot -n by a few accepted tokens)."""


def default_peer():
    for variant in ("-noamx", ""):
        d = os.path.join(CACHE, "llama.cpp-0.3.36" + variant, "bin")
        if os.path.exists(os.path.join(d, "llama-speculative-simple")):
            return d
    return os.path.join(CACHE, "llama.cpp-0.3.36", "bin")


def llama_once(cmd, mode):
    """One llama.cpp run: (decoded tokens, seconds, accept %, stdout), None on failure."""
    log(" ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        log(f"llama.cpp {mode} failed: {p.stderr[-800:]}")
        return None
    err = p.stderr
    if mode == "off":
        m = re.search(r"eval time =\s*([\d.]+) ms /\s*(\d+) runs", err)
        tokens, secs = (int(m.group(2)), float(m.group(1)) / 1e3) if m else (None, None)
    else:
        m = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds", err)
        tokens, secs = (int(m.group(1)), float(m.group(2))) if m else (None, None)
    if tokens is None:
        log(f"llama.cpp {mode}: no timing line in its output")
        return None
    a = re.search(r"accept\s+=\s+([\d.]+)%", err)
    return tokens, secs, (float(a.group(1)) if a else None), p.stdout


def llama_runs(peer, model, draft, prompts, args):
    """llama.cpp off / lookup / draft over the same prompts as stet at one sequence (copy: the
    answer ends at the model's end marker, at most 2n tokens; free: n tokens, --ignore-eos):
    median over reps of decoded tokens / decode seconds summed over the prompts, the acceptance,
    and whether each text equals the non-speculative run's."""
    rows = []
    for task in ("copy", "free"):
        n = 2 * args.n if task == "copy" else args.n
        texts, runs = {}, {}
        for pi, prompt in enumerate(prompts[task]):
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
                f.write(prompt)
                pfile = f.name
            common = ["-m", model, "-f", pfile, "-n", str(n), "-t", str(args.threads),
                      "--temp", "0", "-c", "2048", "--no-repack"]
            if task != "copy":
                common.append("--ignore-eos")
            cmds = {
                "off": [os.path.join(peer, "llama-completion"), *common, "-no-cnv",
                        "--no-display-prompt"],
                "lookup": [os.path.join(peer, "llama-speculative-simple"), *common,
                           "--spec-type", "ngram-simple", "--spec-draft-n-max", str(args.k)],
            }
            if draft:
                cmds["draft"] = [os.path.join(peer, "llama-speculative-simple"), *common,
                                 "--spec-type", "draft-simple", "-md", draft, "-td",
                                 str(args.threads), "--spec-draft-n-max", str(args.k)]
            tail = prompt.rstrip("\n").rsplit("\n", 1)[-1]  # e.g. <|im_start|>assistant
            for mode, cmd in cmds.items():
                for rep in range(args.reps):
                    r = llama_once(cmd, mode)
                    if r is None:
                        continue
                    tokens, secs, acc, text = r
                    runs.setdefault(mode, {}).setdefault(rep, []).append((tokens, secs, acc))
                    if mode != "off":  # it echoes the prompt first
                        text = text.split(tail, 1)[-1]
                    texts.setdefault(mode, {})[pi] = text
            os.unlink(pfile)
        for mode in runs:
            speeds = [sum(t for t, _, _ in v) / max(1e-9, sum(x for _, x, _ in v))
                      for v in runs[mode].values() if len(v) == len(prompts[task])]
            accs = [a for v in runs[mode].values() for _, _, a in v if a is not None]
            same = None
            if mode != "off" and texts.get("off") and texts.get(mode):
                # It may overshoot -n by a few accepted tokens: compare the common length.
                same = True
                for pi, a in texts["off"].items():
                    b = texts[mode].get(pi)
                    a, b = a.strip(), (b or "").strip()
                    k = min(len(a), len(b))
                    same = same and k > 0 and a[:k] == b[:k]
            rows.append(dict(engine="llama.cpp", task=task, conc=1, mode=mode,
                             decode_tok_s=statistics.median(speeds) if speeds else None,
                             runs=speeds, accept_pct=statistics.mean(accs) if accs else None,
                             same_as_off=same))
    return rows


def write_markdown(res, path):
    rows = res["rows"]
    lines = [f"# Speculative decoding — {res['date']}", "",
             f"CPU: {res['cpu']} ({res['nproc']} cores; ISA flags {', '.join(res['isa'])}); "
             f"stet {res['commit']}; {res['threads']} threads; n = {res['tokens']}; "
             f"k = {res['k']} (adaptive below); median of {res['reps']} "
             "runs, the modes interleaved (off, lookup, draft, off, ...) so the machine's "
             "drifts hit them alike. SmolLM2 targets: the cached SmolLM2-135M-Instruct Q4_1 "
             "re-encoded by `stet quantize`, drafted by that Q4_1 file; Gemma 3 270M Q4_K_M: "
             "the real file, lookup only (no smaller Gemma 3 exists to draft with). copy = "
             "rewrite a paragraph / code block / list / email with one small change, the answer "
             "ending where the model ends it (at most 2n tokens; every mode gives the same "
             "tokens, so the same count); free = open prompts, n tokens past any end marker; "
             "both greedy; free-t0.7 = the open prompts with seeded temperature 0.7 (the draft "
             "still drafts greedily). At one sequence the four prompts of a task run one after "
             "another; at 4, together. Decode tok/s = tokens after each request's first / "
             "(last finish - last first token), summed over the batches (the draft model "
             "prefills the prompt beside the target's prefill, before the first token, as "
             "llama.cpp's example does). "
             "`same` = every request's tokens and logprobs bitwise equal to speculation off.",
             "", res.get("note", ""), "",
             "| target | task | conc | off tok/s | lookup tok/s | ×off | lookup accept | "
             "draft tok/s | ×off | draft accept | same (lookup/draft) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    keys = sorted({(r["target"], r["task"], r["conc"]) for r in rows},
                  key=lambda t: (t[0], ["copy", "free", "free-t0.7"].index(t[1]), t[2]))
    for tgt, task, conc in keys:
        by = {r["mode"]: r for r in rows if (r["target"], r["task"], r["conc"]) == (tgt, task, conc)}
        off = by.get("off", {}).get("decode_tok_s")

        def cell(m):
            r = by.get(m)
            if not r:
                return "—", "—", "—"
            acc = f"{100 * r['accepted'] / r['drafted']:.0f}%" if r["drafted"] else "—"
            x = f"{r['decode_tok_s'] / off:.2f}" if off else "—"
            return f"{r['decode_tok_s']:.1f}", x, acc

        lt, lx, la = cell("lookup")
        dt, dx, da = cell("draft")
        same = "/".join("—" if m not in by else ("yes" if by[m].get("same_as_off") else "NO")
                        for m in ("lookup", "draft"))
        lines.append(f"| {tgt} | {task} | {conc} | {off:.1f} | {lt} | {lx} | {la} | {dt} | {dx} "
                     f"| {da} | {same} |")
    if res.get("llama"):
        lines += ["", "## llama.cpp, same files", "", LLAMA_SPEC, "",
                  "| target | task | off tok/s | lookup tok/s | lookup accept | same | "
                  "draft tok/s | draft accept | same |", "|---|---|---:|---:|---:|---|---:|---:|---|"]
        for tgt in sorted({r["target"] for r in res["llama"]}):
            for task in ("copy", "free"):
                by = {r["mode"]: r for r in res["llama"] if (r["target"], r["task"]) == (tgt, task)}

                def f(m, key, fmtx="{:.1f}"):
                    v = by.get(m, {}).get(key)
                    return "—" if v is None else fmtx.format(v)

                def sm(m):
                    v = by.get(m, {}).get("same_as_off")
                    return "—" if v is None else ("yes" if v else "no")
                lines.append(f"| {tgt} | {task} | {f('off', 'decode_tok_s')} | "
                             f"{f('lookup', 'decode_tok_s')} | {f('lookup', 'accept_pct', '{:.0f}%')} "
                             f"| {sm('lookup')} | {f('draft', 'decode_tok_s')} | "
                             f"{f('draft', 'accept_pct', '{:.0f}%')} | {sm('draft')} |")
    elif res.get("llama_note"):
        lines += ["", "llama.cpp: " + res["llama_note"]]
    lines += ["", "Runs per row (tok/s):", ""]
    for r in rows:
        lines.append(f"- {r['target']} {r['task']} conc {r['conc']} {r['mode']}: "
                     + ", ".join(f"{x:.1f}" for x in r["runs"]))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--targets", default="q8_0,f16,gemma3",
                    help="q8_0 / f16 (SmolLM2 re-encoded, Q4_1 draft), gemma3 (lookup only)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--conc", default="1,4")
    ap.add_argument("--tasks", default="copy,free,free-t0.7")
    ap.add_argument("--out", default=None, help="results path without extension")
    ap.add_argument("--llamacpp", default=default_peer(),
                    help="folder with llama-completion and llama-speculative-simple (none: skip; "
                         "default: bin/ of bench/build_llamacpp.sh's -noamx build, else its native one)")
    args = ap.parse_args()
    if not os.path.exists(DRAFT):
        sys.exit(f"missing {DRAFT}: run scripts/setup")
    res = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               cpu=cpu_model(), nproc=os.cpu_count(), isa=isa_flags(),
               commit=git("rev-parse", "--short", "HEAD"), threads=args.threads,
               reps=args.reps, tokens=args.n, k=args.k, rows=[])
    for name in args.targets.split(","):
        for r in bench(args.build, target(args.build, name), draft_of(name), args):
            r["target"] = target_name(name)
            res["rows"].append(r)
            log(json.dumps(r))
    peer = args.llamacpp
    if peer != "none" and all(os.path.exists(os.path.join(peer, b))
                              for b in ("llama-completion", "llama-speculative-simple")):
        res["llama"] = []
        for name in args.targets.split(","):
            model = target(args.build, name)
            prompts = json.loads(subprocess.run(
                [os.path.join(args.build, "bin", "stet_spec_bench"), "-m", model,
                 "--dump-prompts"], check=True, capture_output=True, text=True).stdout)
            for r in llama_runs(peer, model, draft_of(name), prompts, args):
                r["target"] = target_name(name)
                res["llama"].append(r)
                log(json.dumps(r))
    else:
        res["llama_note"] = f"not run: no llama-completion / llama-speculative-simple in {peer}"
    out = args.out or os.path.join(
        REPO, "bench", "results",
        f"{datetime.date.today().isoformat()}-spec-{socket.gethostname()}")
    with open(out + ".json", "w") as f:
        json.dump(res, f, indent=1)
    write_markdown(res, out + ".md")
    log(f"wrote {out}.md")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Does Python cost anything? The same batch — P prompts x N greedy tokens
(ignore_eos, prefix cache off) — through

  1. the engine from C++ (stet_engine_batch: every prompt submitted at once),
  2. stet.LLM.generate (every prompt submitted at once, from Python),
  3. llama-cpp-python's Llama.create_completion looped over the prompts (its
     API has no batch), same file and threads,

interleaved, --reps runs each, medians. Checks that (1) and (2) generated the
very same token ids (one hash of all of them). Prints a Markdown table.

Run it with the Python that has stet installed (scripts/python-install:
build-python/venv/bin/python); llama-cpp-python is looked for in
~/.cache/stet/venv-llamacpp (pip install llama-cpp-python there; it builds
llama.cpp from source).

  build-python/venv/bin/python bench/python/run.py --engine-bin build/bin/stet_engine_batch
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from benchutil import cpu_model, git, log  # noqa: E402

SUBJECTS = ["a robot", "a lighthouse keeper", "two rival bakers", "a lost dog", "a dragon",
            "an old clock", "a young astronaut", "a city of glass"]
PLACES = ["in the mountains", "under the sea", "on Mars", "in a small village", "at a train station",
          "in a library", "during a storm", "at the end of the world"]


def make_prompts(count):
    out = []
    for i in range(count):
        s, p = SUBJECTS[i % len(SUBJECTS)], PLACES[(i // len(SUBJECTS)) % len(PLACES)]
        out.append(f"Write a short story about {s} {p}. Story {i}:")
    return out


def ids_hash(per_prompt_ids):
    text = "".join("".join(f"{t}," for t in ids) + ";" for ids in per_prompt_ids)
    return hashlib.sha256(text.encode()).hexdigest()


def run_cpp(engine_bin, model, prompts_file, tokens, threads):
    r = subprocess.run([engine_bin, "-m", model, "--prompts", prompts_file, "-n", str(tokens),
                        "-t", str(threads), "--reps", "1"], capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_python(llm, prompts, tokens):
    from stet import SamplingParams
    sp = SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True)
    t0 = time.perf_counter()
    outs = llm.generate(prompts, sp, use_tqdm=False)
    s = time.perf_counter() - t0
    ids = [o.outputs[0].token_ids for o in outs]
    return {"seconds": s, "tokens": sum(len(x) for x in ids), "ids_sha256": ids_hash(ids)}


LLAMACPP_LOOP = r"""
import json, sys, time
from llama_cpp import Llama
model, prompts_file, tokens, threads, reps, eog = sys.argv[1:7]
prompts = [json.loads(l) for l in open(prompts_file) if l.strip()]
llm = Llama(model_path=model, n_threads=int(threads), n_threads_batch=int(threads), n_ctx=1024,
            verbose=False, seed=0)
for _ in range(int(reps)):
    t0 = time.perf_counter()
    n = 0
    for p in prompts:
        # No logit_bias against EOS: llama-cpp-python applies it in Python per token, which
        # would slow it down; a choice that ends early counts the tokens it made.
        r = llm.create_completion(p, max_tokens=int(tokens), temperature=0)
        n += r["usage"]["completion_tokens"]
    print(json.dumps({"seconds": time.perf_counter() - t0, "tokens": n}), flush=True)
"""


def run_llamacpp(python, model, prompts_file, tokens, threads, eog):
    r = subprocess.run([python, "-c", LLAMACPP_LOOP, model, prompts_file, str(tokens),
                        str(threads), "1", eog], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("-m", "--model",
                    default=os.path.expanduser("~/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("-p", "--prompts", type=int, default=64)
    ap.add_argument("-n", "--tokens", type=int, default=128)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-r", "--reps", type=int, default=3)
    ap.add_argument("--engine-bin", default=os.path.join(HERE, "..", "..", "build", "bin",
                                                         "stet_engine_batch"))
    ap.add_argument("--llamacpp-python",
                    default=os.path.expanduser("~/.cache/stet/venv-llamacpp/bin/python"))
    ap.add_argument("--no-llamacpp", action="store_true")
    ap.add_argument("--json", help="write the raw results here")
    a = ap.parse_args()

    import stet
    prompts = make_prompts(a.prompts)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("".join(json.dumps(p) + "\n" for p in prompts))
        prompts_file = f.name
    llm = stet.LLM(a.model, threads=a.threads, enable_prefix_caching=False)
    eog = ",".join(str(t) for t in llm.get_tokenizer().eog_token_ids)
    have_llamacpp = not a.no_llamacpp and os.path.exists(a.llamacpp_python)
    if not have_llamacpp:
        log(f"llama-cpp-python: not measured ({a.llamacpp_python} missing or --no-llamacpp)")
    runs = {"cpp": [], "python": [], "llamacpp": []}
    for rep in range(a.reps):  # interleaved, so drift on a shared machine hits every path
        log(f"rep {rep + 1}/{a.reps}: C++ engine")
        runs["cpp"].append(run_cpp(a.engine_bin, a.model, prompts_file, a.tokens, a.threads))
        log(f"rep {rep + 1}/{a.reps}: stet.LLM.generate")
        runs["python"].append(run_python(llm, prompts, a.tokens))
        if have_llamacpp:
            log(f"rep {rep + 1}/{a.reps}: llama-cpp-python create_completion loop")
            runs["llamacpp"].append(run_llamacpp(a.llamacpp_python, a.model, prompts_file,
                                                 a.tokens, a.threads, eog))
    os.unlink(prompts_file)
    same = {r["ids_sha256"] for r in runs["cpp"] + runs["python"]}
    if len(same) != 1:
        print(f"MISMATCH: the C++ engine and stet.LLM generated different tokens: {same}")
        return 1

    def med(name):
        return statistics.median(r["tokens"] / r["seconds"] for r in runs[name])

    cpp = med("cpp")
    print(f"# bench/python — {a.prompts} prompts x {a.tokens} tokens, greedy, {a.threads} threads")
    print(f"\nmodel `{os.path.basename(a.model)}`, CPU {cpu_model()}, stet ISA "
          f"{stet._core.best_isa()}, commit {git('rev-parse', '--short', 'HEAD')}, "
          f"medians of {a.reps} interleaved runs; fingerprint `{llm.fingerprint}`\n")
    print("| path | tokens | tokens/s (median) | seconds (median) | vs C++ engine |")
    print("|---|---:|---:|---:|---:|")
    for name, label in (("cpp", "stet engine from C++ (all prompts at once)"),
                        ("python", "stet.LLM.generate (all prompts at once)"),
                        ("llamacpp", "llama-cpp-python create_completion, looped")):
        if not runs[name]:
            continue
        secs = statistics.median(r["seconds"] for r in runs[name])
        print(f"| {label} | {runs[name][0]['tokens']} | {med(name):.1f} | {secs:.2f} | "
              f"{med(name) / cpp:.3f}x |")
    print(f"\nC++ and Python generated the same {runs['cpp'][0]['tokens']} token ids "
          f"(sha256 {runs['cpp'][0]['ids_sha256'][:16]}).")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

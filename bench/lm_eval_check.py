#!/usr/bin/env python3
"""lm-evaluation-harness against `stet serve`: the same scores and the same
per-sample answers at any concurrency.

Starts `stet serve` on a small model, runs `lm_eval --model local-completions`
(tokenizer_backend=remote: lm-eval tokenizes through stet's /tokenize and
/tokenizer_info, then sends token-id prompts with echo + logprobs) on two small
local tasks defined in bench/lm_eval/ over JSONL files in tests/data/lm_eval/
(stet_tiny_mc: loglikelihood / multiple choice; stet_tiny_gen: generate_until),
once with num_concurrent=1 and once with num_concurrent=4, and asserts that the
scores and every logged sample's responses are identical. Exit 0 identical,
1 different, 2 could not run.

lm-eval is not a CI dependency (it pulls datasets, pandas, scikit-learn, ...):
install it in a virtual environment of its own and point --lm-eval at it:
    python3 -m venv /tmp/lmeval && /tmp/lmeval/bin/pip install "lm-eval[api]==0.4.13"
    python3 bench/lm_eval_check.py --lm-eval /tmp/lmeval/bin/lm_eval
"""
import argparse
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = "stet_tiny_mc,stet_tiny_gen"


def cpu_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"Model name:\s*(.+)", out)
        if m:
            return m.group(1).strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


class Server:
    """`stet serve` on an OS-chosen loopback port."""

    def __init__(self, stet, model, threads):
        cmd = [stet, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0", "--threads", str(threads)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        self.port, self.ready, self.lines = None, threading.Event(), []
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(120):
            self.stop()
            raise RuntimeError("stet serve did not start:\n" + "\n".join(self.lines[-20:]))

    def _read(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            if m and self.port is None:
                self.port = int(m.group(1))
            if line.startswith("listening on "):
                self.ready.set()

    def model_id(self):
        import urllib.request
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v1/models", timeout=30) as r:
            return json.load(r)["data"][0]["id"]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def run_lm_eval(lm_eval, port, model_id, concurrent, out_dir, limit):
    args = (f"base_url=http://127.0.0.1:{port}/v1/completions,model={model_id},"
            f"num_concurrent={concurrent},tokenizer_backend=remote,tokenized_requests=True,"
            f"max_retries=1,timeout=600")
    cmd = [lm_eval, "run", "--model", "local-completions", "--model_args", args, "--tasks", TASKS,
           "--include_path", os.path.join(ROOT, "bench", "lm_eval"), "--batch_size", "1",
           "--output_path", out_dir, "--log_samples", "--seed", "1234"]
    if limit:
        cmd += ["--limit", str(limit)]
    env = dict(os.environ, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               OPENAI_API_KEY="none")
    t0 = time.time()
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0 and "invalid choice: 'run'" in p.stderr:  # older CLIs: no subcommand
        cmd.remove("run")
        t0 = time.time()
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.time() - t0
    if p.returncode != 0:
        raise RuntimeError(f"lm_eval exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}")
    if "Using remote tokenizer" not in p.stdout + p.stderr:  # token ids through stet's /tokenize
        raise RuntimeError("lm_eval did not use stet's remote tokenizer:\n" + p.stderr[-3000:])
    return wall


def load_run(out_dir):
    """(scores per task, responses per task and doc) from an --output_path directory."""
    results = sorted(glob.glob(os.path.join(out_dir, "**", "results_*.json"), recursive=True))
    if not results:
        raise RuntimeError("no results_*.json under " + out_dir)
    with open(results[-1]) as f:
        res = json.load(f)["results"]
    scores = {task: {k: v for k, v in m.items() if k != "alias"} for task, m in res.items()}
    samples = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "**", "samples_*.jsonl"), recursive=True)):
        task = re.sub(r"^samples_(.+)_[^_]+\.jsonl$", r"\1", os.path.basename(path))
        with open(path) as f:
            rows = [json.loads(line) for line in f]
        samples[task] = {r["doc_id"]: (r["resps"], r["filtered_resps"]) for r in rows}
        for r in rows:  # what is compared is real: a logprob per choice, or a generated string
            for resp in r["resps"]:
                ok = (isinstance(resp[0], str) if task.endswith("gen") else
                      float(resp[0][0]) < 0)  # lm-eval logs the float's repr: exact
                if not ok:
                    raise RuntimeError(f"{task} doc {r['doc_id']}: unexpected response {resp!r}")
    return scores, samples


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stet", default=os.path.join(ROOT, "build", "bin", "stet"))
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--lm-eval", default="lm_eval", help="the lm_eval executable")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="documents per task (0: all)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--keep", help="copy lm_eval's output directories here")
    a = ap.parse_args()
    for what, path in (("stet", a.stet), ("model", a.model)):
        if not os.path.exists(path):
            print(f"lm_eval_check: no {what} at {path}", file=sys.stderr)
            return 2
    srv = Server(a.stet, a.model, a.threads)
    runs = {}
    try:
        model_id = srv.model_id()
        with tempfile.TemporaryDirectory(prefix="stet-lmeval-") as tmp:
            for conc in (1, 4):
                out = os.path.join(tmp, f"c{conc}")
                wall = run_lm_eval(a.lm_eval, srv.port, model_id, conc, out, a.limit)
                scores, samples = load_run(out)
                runs[conc] = {"wall_s": round(wall, 2), "scores": scores, "samples": samples}
                print(f"num_concurrent={conc}: {wall:.1f} s  {json.dumps(scores, sort_keys=True)}")
                if a.keep:
                    shutil.copytree(out, os.path.join(a.keep, f"c{conc}"), dirs_exist_ok=True)
    except RuntimeError as e:
        print(f"lm_eval_check: {e}", file=sys.stderr)
        return 2
    finally:
        srv.stop()
    same_scores = runs[1]["scores"] == runs[4]["scores"]
    same_samples = runs[1]["samples"] == runs[4]["samples"]
    n_samples = sum(len(v) for v in runs[1]["samples"].values())
    identical = same_scores and same_samples and n_samples > 0
    print(f"samples compared: {n_samples}; scores identical: {same_scores}; "
          f"every sample's responses identical: {same_samples}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu_name(), "model": os.path.basename(a.model), "tasks": TASKS,
                       "threads": a.threads, "samples": n_samples, "identical": identical,
                       "runs": {str(c): {"wall_s": r["wall_s"], "scores": r["scores"]} for c, r in runs.items()}},
                      f, indent=1, sort_keys=True)
    print("IDENTICAL" if identical else "DIFFERENT")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())

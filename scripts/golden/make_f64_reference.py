#!/usr/bin/env python3
"""Float64 reference log-probabilities along a golden's token paths, for any model
bench/fidelity/oracle.py covers (llama/SmolLM2, qwen2/3, gemma2/3): every weight
exactly dequantized by the `gguf` package, the forward pass in numpy float64.
Per generated step of each case: the float64 log-softmax of the path token and
the top 5. The tests hold stet's default and precise modes to it.

    python3 scripts/golden/make_f64_reference.py \
        --model ~/.cache/stet/models/gemma-3-270m-q4_k_m.gguf \
        --golden tests/golden/gemma3/gemma-3-270m.json \
        --out tests/golden/gemma3/f64_reference.json
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "fidelity"))
import oracle  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--golden", required=True, help="a golden with cases[prompt_ids, steps[id]]")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    o = oracle.Oracle(os.path.expanduser(a.model))
    golden = json.load(open(a.golden))
    cases = []
    for c in golden["cases"]:
        gen = [s["id"] for s in c["steps"]]
        ids = c["prompt_ids"] + gen
        n_p = len(c["prompt_ids"])
        lp = o.forward(ids, np.arange(n_p - 1, len(ids) - 1))
        steps = []
        for j, tok in enumerate(gen):
            top = np.argsort(-lp[j], kind="stable")[:5]
            steps.append({"id": tok, "logprob": float(lp[j][tok]),
                          "top5": [[int(t), float(lp[j][t])] for t in top]})
        cases.append({"prompt": c["prompt"], "prompt_ids": c["prompt_ids"], "steps": steps})
    sha = hashlib.sha256(open(os.path.expanduser(a.model), "rb").read()).hexdigest()
    json.dump({"source": "numpy float64 forward pass over exactly dequantized weights (gguf-py), "
                         "bench/fidelity/oracle.py, teacher-forced on the paths of " +
                         os.path.relpath(a.golden, ROOT) + "; command: python3 "
                         "scripts/golden/make_f64_reference.py --model " +
                         os.path.basename(a.model) + " --golden " +
                         os.path.relpath(a.golden, ROOT) + " --out " +
                         os.path.relpath(a.out, ROOT),
               "model_sha256": sha, "cases": cases}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()

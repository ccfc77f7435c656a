#!/usr/bin/env python3
"""Float64 reference for SmolLM2-135M-Instruct Q4_1: an independent oracle.

Dequantizes every weight exactly (the `gguf` package's dequantize), then runs
the Llama forward pass in numpy float64 with exact exp/sin/cos, no activation
quantization and float32-free KV, teacher-forced over each case of
tests/golden/smollm2/llamacpp_greedy.json (prompt + llama.cpp's greedy ids).
It records, per generated step, the float64 log-softmax of llama.cpp's chosen
token. This separates "stet differs from llama.cpp" from "stet is wrong": both
engines quantize activations to int8, and on this model that alone moves
log-probabilities by up to ~0.1.

Run from the repository root (needs `pip install gguf numpy`):
    python3 scripts/golden/make_smollm2_f64.py \
        --model ~/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        --out tests/golden/smollm2/f64_reference.json
"""
import argparse
import hashlib
import json
import os

import gguf
import numpy as np
from gguf.quants import dequantize


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.expanduser(
        "~/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--golden", default="tests/golden/smollm2/llamacpp_greedy.json")
    ap.add_argument("--out", default="tests/golden/smollm2/f64_reference.json")
    a = ap.parse_args()

    r = gguf.GGUFReader(a.model)
    tensors = {t.name: t for t in r.tensors}

    def field(key):
        return r.fields[key].contents()

    n_layer = field("llama.block_count")
    d = field("llama.embedding_length")
    n_head = field("llama.attention.head_count")
    n_kv = field("llama.attention.head_count_kv")
    hd = d // n_head
    eps = field("llama.attention.layer_norm_rms_epsilon")
    base = field("llama.rope.freq_base")

    def w(name, rows=None):
        t = tensors[name]
        x = dequantize(t.data, t.tensor_type).astype(np.float64)
        return x.reshape(rows, -1) if rows else x.reshape(-1)

    emb = w("token_embd.weight", int(t_rows(tensors["token_embd.weight"])))
    layers = []
    for i in range(n_layer):
        p = f"blk.{i}."
        layers.append({k: w(p + k + ".weight", rows) for k, rows in [
            ("attn_norm", None), ("attn_q", n_head * hd), ("attn_k", n_kv * hd),
            ("attn_v", n_kv * hd), ("attn_output", d), ("ffn_norm", None),
            ("ffn_gate", field("llama.feed_forward_length")),
            ("ffn_up", field("llama.feed_forward_length")), ("ffn_down", d)]})
    out_norm = w("output_norm.weight")

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g

    inv = base ** (-np.arange(0, hd, 2) / hd)

    def forward(ids):
        n = len(ids)
        ang = np.arange(n)[:, None] * inv[None, :]
        cos, sin = np.cos(ang), np.sin(ang)

        def rope(v):  # GGUF llama: rotate adjacent pairs
            v = v.copy()
            a0, a1 = v[..., 0::2].copy(), v[..., 1::2].copy()
            v[..., 0::2] = a0 * cos[:, None, :] - a1 * sin[:, None, :]
            v[..., 1::2] = a0 * sin[:, None, :] + a1 * cos[:, None, :]
            return v

        mask = np.triu(np.full((n, n), -np.inf), 1)
        x = emb[ids]
        for L in layers:
            xn = rms(x, L["attn_norm"])
            q = rope((xn @ L["attn_q"].T).reshape(n, n_head, hd))
            k = rope((xn @ L["attn_k"].T).reshape(n, n_kv, hd))
            v = (xn @ L["attn_v"].T).reshape(n, n_kv, hd)
            o = np.zeros((n, n_head, hd))
            for h in range(n_head):
                kv = h // (n_head // n_kv)
                s = q[:, h, :] @ k[:, kv, :].T / np.sqrt(hd) + mask
                s = np.exp(s - s.max(-1, keepdims=True))
                s /= s.sum(-1, keepdims=True)
                o[:, h, :] = s @ v[:, kv, :]
            x = x + o.reshape(n, -1) @ L["attn_output"].T
            xn = rms(x, L["ffn_norm"])
            g, u = xn @ L["ffn_gate"].T, xn @ L["ffn_up"].T
            x = x + (g / (1 + np.exp(-g)) * u) @ L["ffn_down"].T
        logits = rms(x, out_norm) @ emb.T if "output.weight" not in tensors else None
        m = logits.max(-1, keepdims=True)
        return logits - (np.log(np.exp(logits - m).sum(-1, keepdims=True)) + m)

    golden = json.load(open(a.golden))
    cases = []
    for c in golden["cases"]:
        gen = [s["id"] for s in c["steps"]]
        ids = c["prompt_ids"] + gen
        lp = forward(ids)
        n_p = len(c["prompt_ids"])
        steps = []
        for j, tok in enumerate(gen):
            row = lp[n_p - 1 + j]
            top = np.argsort(-row, kind="stable")[:5]
            steps.append({"id": tok, "logprob": float(row[tok]),
                          "top5": [[int(t), float(row[t])] for t in top]})
        cases.append({"prompt": c["prompt"], "prompt_ids": c["prompt_ids"], "steps": steps})
    sha = hashlib.sha256(open(a.model, "rb").read()).hexdigest()
    json.dump({"source": "numpy float64 forward pass over exactly dequantized weights "
                         "(gguf " + getattr(gguf, "__version__", "?") + "), teacher-forced on "
                         "llama.cpp's greedy ids; command: python3 scripts/golden/make_smollm2_f64.py",
               "model_sha256": sha, "cases": cases}, open(a.out, "w"), indent=1)


def t_rows(t):
    return int(t.shape[-1])


if __name__ == "__main__":
    main()

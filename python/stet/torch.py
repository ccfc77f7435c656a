"""stet.torch: a torch.nn.Module whose forward pass is stet's (pip install
<checkout>[torch]; docs/rl.md).

Policy.from_gguf(path) holds the model's float weights as torch parameters and
computes logits with the engine's own Forward and KV store, reading the
parameters' memory in place (no second copy of the weights): the logits, and
the log-probabilities from Policy.logprobs, are bit for bit what LLM.generate
and prompt_logprobs compute for the same weights and tokens, whatever the
batch shape and the padding. The backward pass recomputes the forward with
plain torch operations (reference_forward: RMSNorm, RoPE, GQA, SwiGLU, tied
output) and returns its gradients: close to torch's own, not bit-exact.

The sampler (an LLM) keeps its own weights: after an optimizer step call
llm.load_weights(policy.gguf_state()) before sampling again.
"""
import math
import weakref
from typing import Dict, Iterator, List, Optional, Tuple

import numpy as np
import torch

from . import _core
from .weights import _array

__all__ = ["Policy", "reference_forward"]

_FLOAT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
_KV = {"fp16": "f16", "float16": "f16", "fp32": "f32", "float32": "f32"}


def _key(gguf_name: str) -> str:
    """A parameter name torch accepts (no dots) for a GGUF tensor name."""
    return gguf_name.replace(".", "_")


def _real_positions(ids: torch.Tensor, mask: Optional[torch.Tensor]):
    """(mask as bool [B, T], positions [B, T]) with each row's real tokens one
    contiguous run (right or left padding) numbered from 0; ValueError else."""
    if ids.dim() == 1:
        raise ValueError("ids must be [batch, tokens]; give ids[None] for one sequence")
    if ids.dim() != 2:
        raise ValueError(f"ids must be [batch, tokens], not {tuple(ids.shape)}")
    if mask is None:
        m = torch.ones(ids.shape, dtype=torch.bool)
    else:
        if tuple(mask.shape) != tuple(ids.shape):
            raise ValueError(f"attention_mask {tuple(mask.shape)} must have ids' shape "
                             f"{tuple(ids.shape)}")
        m = mask.detach().to("cpu") != 0
    pos = m.to(torch.int64).cumsum(1) - 1
    # One run per row: after the run ends no real token follows.
    starts = (m[:, 1:] & ~m[:, :-1]).sum(1) + m[:, 0].to(torch.int64)
    if bool((starts > 1).any()):
        raise ValueError("each row's attention_mask must be one contiguous run of ones "
                         "(right or left padding)")
    return m, pos.clamp(min=0)


class _StetForward(torch.autograd.Function):
    """logits = stet's Forward of the policy's current parameters; the backward
    pass differentiates reference_forward (plain torch) at the same parameters."""

    @staticmethod
    def forward(ctx, policy, ids, mask, *params):
        ctx.policy = weakref.ref(policy)  # the graph must not keep the engine's model alive
        ctx.save_for_backward(ids, mask, *params)
        return policy._stet_logits(ids, mask)

    @staticmethod
    def backward(ctx, grad):
        ids, mask, *params = ctx.saved_tensors
        policy = ctx.policy()
        if policy is None:
            raise RuntimeError("stet.torch: the Policy was freed before backward()")
        leaves = [p.detach().requires_grad_(p.requires_grad) for p in params]
        wanted = [p for p in leaves if p.requires_grad]
        with torch.enable_grad():
            logits = policy._reference(dict(zip(policy._names, leaves)), ids, mask)
            grads = iter(torch.autograd.grad(logits, wanted, grad, allow_unused=True))
        return (None, None, None) + tuple(next(grads) if p.requires_grad else None
                                          for p in leaves)


class _StetLogSoftmaxAt(torch.autograd.Function):
    """The sampler's log-softmax (LogSoftmaxAt) of rows at ids; the backward
    pass is log-softmax's own: g * (onehot - softmax)."""

    @staticmethod
    def forward(ctx, policy, rows, ids):
        out = torch.empty(rows.shape[0], dtype=torch.float32)
        if rows.shape[0]:
            policy._core.log_softmax_at(rows.detach().contiguous().numpy(),
                                        ids.to(torch.int64).contiguous().numpy(), out.numpy())
        ctx.save_for_backward(rows, ids)
        return out

    @staticmethod
    def backward(ctx, grad):
        rows, ids = ctx.saved_tensors
        g = -torch.softmax(rows.detach(), dim=-1) * grad[:, None]
        g[torch.arange(rows.shape[0]), ids] += grad
        return None, g, None


class Policy(torch.nn.Module):
    """The model's float weights as parameters; forward() is stet's."""

    def __init__(self, core, names: List[str], params: Dict[str, torch.Tensor], kv_dtype: str):
        super().__init__()
        self._core = core
        self.hparams = dict(core.hparams)
        self._names = list(names)
        self.weights = torch.nn.ParameterDict(
            {_key(n): torch.nn.Parameter(params[n]) for n in names})
        self._kv_dtype = kv_dtype
        self._borrowed: list = []
        self._rope = None

    @classmethod
    def from_gguf(cls, path: str, threads: int = 0, max_model_len: int = 4096,
                  kv_cache_dtype: str = "auto", numerics: str = "invariant",
                  isa: str = "auto") -> "Policy":
        """Opens a GGUF file (or a pulled model name) whose weights are float
        (f32, f16, bf16); the options are LLM's, and must equal the sampler's
        (kv_cache_dtype and numerics decide bits). Quantized files are refused:
        their weights are not trainable (convert: stet quantize --type f32)."""
        o = _core.PolicyOptions()
        o.model, o.threads, o.max_model_len = str(path), threads, max_model_len
        o.kv_cache_dtype = _KV.get(kv_cache_dtype, kv_cache_dtype)
        o.numerics, o.isa = numerics, isa
        core = _core.Policy.open(o)
        names, params = [], {}
        for name, dtype, shape in core.tensors():
            if name == "rope_freqs.weight":
                continue  # the positions' rotation, not a trained weight
            if dtype not in _FLOAT:
                raise ValueError(f"tensor '{name}' is {dtype}: a quantized model is not "
                                 "trainable; convert it to f32 (stet quantize --type f32)")
            t = torch.empty(tuple(shape), dtype=_FLOAT[dtype])
            core.read_file_tensor(name, t.view(torch.uint8).numpy() if dtype == "bf16"
                                  else t.numpy())
            names.append(name)
            params[name] = t
        return cls(core, names, params, core.kv_cache_dtype)

    # -- the weights ---------------------------------------------------------
    def gguf_state(self) -> Dict[str, torch.Tensor]:
        """GGUF name -> parameter: what LLM.load_weights takes to sync the sampler."""
        return {n: self.weights[_key(n)] for n in self._names}

    def gguf_parameters(self) -> Iterator[Tuple[str, torch.nn.Parameter]]:
        for n in self._names:
            yield n, self.weights[_key(n)]

    def _borrow(self) -> None:
        """Points the engine's model at the parameters' current memory (and
        refreshes its copies of the norms): called before every stet forward."""
        items = []
        for n in self._names:
            a, hint = _array(n, self.weights[_key(n)])
            items.append((n, a, hint))
        self._core.borrow(items)
        self._borrowed = items  # kept alive while the engine may read them

    # -- forward passes ------------------------------------------------------
    def forward(self, ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None):
        """Logits [B, T, n_vocab] (float32) of every real token; padded
        positions are 0. Differentiable (the backward pass is plain torch)."""
        ids = torch.as_tensor(ids)
        mask, _ = _real_positions(ids, attention_mask)
        params = [self.weights[_key(n)] for n in self._names]
        return _StetForward.apply(self, ids, mask, *params)

    def logprobs(self, ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                 logits: Optional[torch.Tensor] = None) -> torch.Tensor:
        """[B, T]: out[b, t] = log p(ids[b, t] | the row's earlier tokens), the
        sampler's log-softmax of stet's logits (bit for bit LLM.generate's
        logprobs and prompt_logprobs); 0 where t is padding or the row's first
        token. Differentiable. `logits`: this policy's forward() of the same
        ids, when the caller has it already."""
        ids = torch.as_tensor(ids)
        mask, _ = _real_positions(ids, attention_mask)
        if logits is None:
            logits = self.forward(ids, mask)
        scored = mask.clone()
        scored[:, 0] = False
        scored[:, 1:] &= mask[:, :-1]  # the previous token is real
        b, t = scored.nonzero(as_tuple=True)
        vals = _StetLogSoftmaxAt.apply(self, logits[b, t - 1], ids[b, t])
        out = torch.zeros(ids.shape, dtype=torch.float32)
        return out.index_put((b, t), vals)

    def torch_forward(self, ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None):
        """The same logits from plain torch operations (reference_forward):
        what a trainer without stet computes. Differentiable."""
        ids = torch.as_tensor(ids)
        mask, _ = _real_positions(ids, attention_mask)
        return self._reference(self.gguf_state(), ids, mask)

    def torch_logprobs(self, ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None):
        """logprobs() computed by torch from torch_forward()."""
        ids = torch.as_tensor(ids)
        mask, _ = _real_positions(ids, attention_mask)
        lp = torch.log_softmax(self.torch_forward(ids, mask), dim=-1)
        out = torch.zeros(ids.shape, dtype=lp.dtype)
        picked = lp[:, :-1].gather(-1, ids[:, 1:, None].to(torch.int64))[..., 0]
        out[:, 1:] = picked * (mask[:, 1:] & mask[:, :-1])
        return out

    def _stet_logits(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        B, T = ids.shape
        V = self.hparams["n_vocab"]
        mask, pos = _real_positions(ids, mask)
        b, t = mask.nonzero(as_tuple=True)
        out = torch.zeros((B, T, V), dtype=torch.float32)
        if b.numel():
            self._borrow()
            self._core.run(ids[b, t].to(torch.int32).numpy(), b.to(torch.int32).numpy(),
                           pos[b, t].to(torch.int32).numpy(), (b * T + t).numpy(),
                           out.view(B * T, V).numpy())
        return out

    def _reference(self, W: Dict[str, torch.Tensor], ids, mask) -> torch.Tensor:
        T = ids.shape[1]
        if self._rope is None or self._rope[0].shape[0] < T:
            c, s = self._core.rope_tables(min(max(T, 64), self._core.max_model_len))
            self._rope = (torch.from_numpy(c), torch.from_numpy(s))
        return reference_forward(self.hparams, W, ids, mask, self._rope,
                                 kv_dtype=self._kv_dtype)


def _rms_norm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def _rope(x, cos, sin, neox: bool):
    """x [B, T, H, D] rotated by cos/sin [B, T, D/2] (stet's pairs: adjacent for
    llama's GGUF layout, halves for neox)."""
    c, s = cos[:, :, None, :].to(x.dtype), sin[:, :, None, :].to(x.dtype)
    if neox:
        x0, x1 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).flatten(-2)


def reference_forward(hp: dict, W: Dict[str, torch.Tensor], ids: torch.Tensor,
                      mask: torch.Tensor, rope: Tuple[torch.Tensor, torch.Tensor],
                      kv_dtype: str = "f16") -> torch.Tensor:
    """The llama forward in plain torch (the backward pass of Policy, and the
    'other stack' of examples/rl_on_policy.py): logits [B, T, V] of W (GGUF
    names, Hugging Face shapes) in W's dtype; K/V rounded to the KV cache's type
    as stet stores them; padded positions 0. llama-family layouts only."""
    unsupported = [k for k in ("qkv_bias", "qk_norm", "post_norms", "scale_embd", "moe", "gelu")
                   if hp.get(k)] + [k for k in ("n_swa", "attn_softcap", "final_softcap")
                                    if hp.get(k)]
    if unsupported:
        raise NotImplementedError(f"reference_forward covers llama-family models; this "
                                  f"{hp['arch']} model has {', '.join(unsupported)}")
    B, T = ids.shape
    nh, nkv, hd = hp["n_head"], hp["n_head_kv"], hp["head_dim"]
    eps = hp["rms_eps"]
    mask = mask.to(torch.bool)
    pos = (mask.to(torch.int64).cumsum(1) - 1).clamp(min=0)
    cos, sin = rope[0][pos], rope[1][pos]
    emb = W["token_embd.weight"]
    x = emb[ids.to(torch.int64)]
    dt = x.dtype
    # Query i sees key j when j <= i and j is real; a padded query sees itself
    # (its row is discarded) so no softmax is over nothing.
    eye = torch.eye(T, dtype=torch.bool)
    allowed = (torch.tril(torch.ones(T, T, dtype=torch.bool)) & mask[:, None, :]) | eye
    scale = hp["attn_scale"] or 1.0 / math.sqrt(hd)
    kv_t = {"f16": torch.float16, "f32": None}[kv_dtype]
    for l in range(hp["n_layer"]):
        p = f"blk.{l}."
        h = _rms_norm(x, W[p + "attn_norm.weight"], eps)
        q = (h @ W[p + "attn_q.weight"].T).view(B, T, nh, hd)
        k = (h @ W[p + "attn_k.weight"].T).view(B, T, nkv, hd)
        v = (h @ W[p + "attn_v.weight"].T).view(B, T, nkv, hd)
        q, k = _rope(q, cos, sin, hp["rope_neox"]), _rope(k, cos, sin, hp["rope_neox"])
        if kv_t is not None:
            k, v = k.to(kv_t).to(dt), v.to(kv_t).to(dt)
        k = k.repeat_interleave(nh // nkv, dim=2)
        v = v.repeat_interleave(nh // nkv, dim=2)
        s = torch.einsum("bihd,bjhd->bhij", q, k) * scale
        s = s.masked_fill(~allowed[:, None], float("-inf"))
        a = torch.einsum("bhij,bjhd->bihd", torch.softmax(s, dim=-1), v).reshape(B, T, nh * hd)
        x = x + a @ W[p + "attn_output.weight"].T
        h = _rms_norm(x, W[p + "ffn_norm.weight"], eps)
        g = torch.nn.functional.silu(h @ W[p + "ffn_gate.weight"].T) * (h @ W[p + "ffn_up.weight"].T)
        x = x + g @ W[p + "ffn_down.weight"].T
    x = _rms_norm(x, W["output_norm.weight"], eps)
    out = W.get("output.weight", emb) if not hp["tied_output"] else emb
    return (x @ out.T) * mask[..., None].to(dt)

"""LLM.load_weights: new float weights into the running engine, by GGUF tensor
name or by the architecture's Hugging Face name, from numpy arrays or torch
tensors — no file written, no reload, no restart.

Hugging Face checkpoints of llama-family models store q_proj/k_proj with the
rotary halves split (the "neox" order); GGUF files (llama.cpp's converter)
interleave them. A q/k weight given by its Hugging Face name is permuted back
here, exactly as convert_hf_to_gguf.py permutes it, so a state dict loads
unchanged. Values are never rounded: a bf16/f16 tensor takes values of its own
type, or float32 values it holds exactly.
"""
import re
from typing import Any, Dict, Iterable, List, Tuple

# Hugging Face name (with {i} for the layer) -> GGUF name, for the architectures
# whose files use the llama layout (llama, qwen2, qwen3: their converters name
# tensors alike; only llama permutes q/k).
_LAYER = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
_GLOBAL = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
_LAYER_RE = re.compile(r"^model\.layers\.(\d+)\.(.+)$")
_PERMUTED = {"llama": ("attn_q.weight", "attn_k.weight")}


def gguf_name(name: str, arch: str, tied: bool) -> Tuple[str, bool]:
    """(GGUF name, whether a llama q/k permutation applies) for a GGUF or
    Hugging Face tensor name; KeyError for a Hugging Face name stet cannot place."""
    if name in _GLOBAL:
        g = _GLOBAL[name]
        return ("token_embd.weight" if g == "output.weight" and tied else g), False
    m = _LAYER_RE.match(name)
    if m is None:
        return name, False  # a GGUF name (checked against the file by the engine)
    suffix = _LAYER.get(m.group(2))
    if suffix is None:
        raise KeyError(f"'{name}': no GGUF tensor of a {arch} model corresponds to it")
    return f"blk.{m.group(1)}.{suffix}", suffix in _PERMUTED.get(arch, ())


def _array(name, tensor):
    """(C-contiguous CPU numpy array, hint for raw 16-bit values) of a numpy
    array or a torch tensor, without a copy where the tensor already is one."""
    import numpy as np
    if type(tensor).__module__.split(".")[0] == "torch":
        import torch
        t = tensor.detach()
        if t.device.type != "cpu":
            t = t.to("cpu")
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16), "bf16"
        if t.dtype not in (torch.float32, torch.float16):
            raise TypeError(f"weights for '{name}' are {t.dtype}: give float32, float16 or "
                            "bfloat16")
        return t.numpy(), ""
    a = np.ascontiguousarray(tensor)
    if a.dtype not in (np.float32, np.float16):
        raise TypeError(f"weights for '{name}' are {a.dtype}: give float32 or float16 (or "
                        "uint16 bf16 bits through a torch bfloat16 tensor)")
    return a, ""


def _permute(a, n_head: int):
    """llama.cpp's LlamaModel.permute: split rotary halves -> interleaved pairs."""
    return (a.reshape(n_head, 2, a.shape[0] // n_head // 2, *a.shape[1:])
            .swapaxes(1, 2).reshape(a.shape))


def prepare(engine, weights: Any) -> List[Tuple[str, Any, str]]:
    """The (GGUF name, array, hint) triples for _core's load_weights."""
    items: Iterable = weights.items() if hasattr(weights, "items") else weights
    shapes: Dict[str, Tuple[int, ...]] = {n: tuple(s) for n, _, s in engine.tensors()}
    arch, tied = engine.arch, engine.tied_output
    out, seen = [], {}
    for name, tensor in items:
        g, permute = gguf_name(name, arch, tied)
        a, hint = _array(name, tensor)
        if g in seen:
            if name == "lm_head.weight" or seen[g] == "lm_head.weight":
                continue  # a tied model's state dict lists the embedding twice
            raise ValueError(f"'{name}' and '{seen[g]}' are the same tensor '{g}'")
        seen[g] = name
        want = shapes.get(g)
        if want is None:
            raise KeyError(f"the model has no tensor '{g}'" + (f" (from '{name}')" if g != name
                                                               else ""))
        if tuple(a.shape) != want:
            raise ValueError(f"'{name}' has shape {tuple(a.shape)}; tensor '{g}' has {want}")
        if permute:
            heads = engine.n_head if g.endswith("attn_q.weight") else engine.n_head_kv
            a = _permute(a, heads)
        out.append((g, a, hint))
    return out

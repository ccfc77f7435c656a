"""LLM.load_weights (issue 29): float weights replaced in the running engine
by GGUF name or by Hugging Face name (the names checked against gguf-py's
own TensorNameMap, the q/k permutation inverted independently here), from
numpy arrays; the outputs follow the new weights, the fingerprint names them
and returns to the file's when the file's values come back."""
import numpy as np
import pytest
from conftest import smollm2_path, stories_path

import stet
from stet import SamplingParams

gguf = pytest.importorskip("gguf")

GREEDY = SamplingParams(temperature=0, max_tokens=24, logprobs=2)
PROMPTS = ["Once upon a time", "The little dog", "Lily"]


def file_tensors(path):
    """name -> float32 array in the Hugging Face shape (outermost first)."""
    r = gguf.GGUFReader(path)
    out = {}
    for t in r.tensors:
        assert t.tensor_type == gguf.GGMLQuantizationType.F32, t.name
        out[t.name] = np.array(t.data, dtype=np.float32).reshape(
            [int(d) for d in reversed(t.shape)])
    return out


def outputs(llm, prompts=PROMPTS, sp=GREEDY):
    return [(o.outputs[0].token_ids,
             [[(t, lp.logprob) for t, lp in d.items()] for d in o.outputs[0].logprobs])
            for o in llm.generate(prompts, sp, use_tqdm=False)]


def unpermute(w, n_head):
    """Hugging Face's q/k layout from GGUF's: interleaved rotary pairs -> halves."""
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def hf_state_dict(tensors, n_layer, n_head, n_head_kv):
    """The checkpoint transformers would hold for this llama model."""
    sd = {"model.embed_tokens.weight": tensors["token_embd.weight"],
          "model.norm.weight": tensors["output_norm.weight"],
          "lm_head.weight": tensors["output.weight"]}
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(n_layer):
        for hf, g in names.items():
            w = tensors[f"blk.{i}.{g}.weight"]
            if g == "attn_q":
                w = unpermute(w, n_head)
            elif g == "attn_k":
                w = unpermute(w, n_head_kv)
            sd[f"model.layers.{i}.{hf}.weight"] = w
    return sd


@pytest.fixture(scope="module")
def fresh():
    """A stories260K LLM of this module's own (the tests change its weights)."""
    return stet.LLM(stories_path(), threads=2)


def test_the_file_values_change_nothing(fresh):
    fp, base = fresh.fingerprint, outputs(fresh)
    tensors = file_tensors(stories_path())
    fresh.load_weights({n: v for n, v in tensors.items() if n != "rope_freqs.weight"})
    assert fresh.fingerprint == fp
    assert outputs(fresh) == base


def test_hugging_face_names_and_layout(fresh):
    tensors = file_tensors(stories_path())
    n_layer = sum(1 for n in tensors if n.endswith(".attn_q.weight"))
    sd = hf_state_dict(tensors, n_layer, fresh._engine.n_head, fresh._engine.n_head_kv)
    # The names are gguf-py's (the reference converter's table), not only stet's.
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, n_layer)
    from stet.weights import gguf_name
    for hf in sd:
        assert tmap.get_name(hf, try_suffixes=(".weight", ".bias")) == \
            gguf_name(hf, "llama", False)[0], hf
    fp, base = fresh.fingerprint, outputs(fresh)
    fresh.load_weights(sd)  # the same values, in Hugging Face's names and layout
    assert fresh.fingerprint == fp
    assert outputs(fresh) == base
    # New values by Hugging Face name equal the same values by GGUF name.
    rng = np.random.default_rng(1)
    sd2 = {k: (v * (1 + 0.05 * rng.standard_normal(v.shape))).astype(np.float32)
           for k, v in sd.items()}
    fresh.load_weights(sd2)
    changed, fp2 = outputs(fresh), fresh.fingerprint
    assert fp2 != fp and changed != base
    other = stet.LLM(stories_path(), threads=1)
    by_gguf = {}
    for k, v in sd2.items():
        g, permute = gguf_name(k, "llama", False)
        if permute:  # this file's own permutation, not the package's
            heads = other._engine.n_head if g.endswith("attn_q.weight") else \
                other._engine.n_head_kv
            v = _permute(v, heads)
        by_gguf[g] = v
    other.load_weights(by_gguf)
    assert other.fingerprint == fp2
    assert outputs(other) == changed
    # And back: the file's bits and fingerprint.
    fresh.load_weights(sd)
    assert fresh.fingerprint == fp and outputs(fresh) == base


def _permute(w, n_head):  # GGUF's layout from Hugging Face's (the converter's permute)
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def test_steps_keep_the_contract(fresh):
    """After each update: a batch equals each prompt alone, seeded sampling replays."""
    tensors = file_tensors(stories_path())
    sp = SamplingParams(temperature=0.9, seed=3, max_tokens=20, logprobs=1)
    for step in range(3):
        w = tensors["blk.2.ffn_up.weight"] * np.float32(1 + 0.1 * (step + 1))
        fresh.load_weights([("blk.2.ffn_up.weight", w)])
        together = outputs(fresh, PROMPTS, sp)
        assert together == [outputs(fresh, [p], sp)[0] for p in PROMPTS]
    fresh.load_weights([("blk.2.ffn_up.weight", tensors["blk.2.ffn_up.weight"])])


def test_refusals(fresh, smollm2):
    fp = fresh.fingerprint
    q = np.zeros((64, 64), np.float32)
    with pytest.raises(KeyError):
        fresh.load_weights({"model.layers.0.mlp.experts.0.weight": q})
    with pytest.raises(KeyError):
        fresh.load_weights({"blk.99.attn_q.weight": q})
    with pytest.raises(ValueError, match="shape"):
        fresh.load_weights({"blk.0.attn_q.weight": np.zeros((64, 63), np.float32)})
    with pytest.raises(TypeError):
        fresh.load_weights({"blk.0.attn_q.weight": np.zeros((64, 64), np.int32)})
    assert fresh.fingerprint == fp
    name = "blk.0.attn_q.weight"
    shape = dict((n, s) for n, _, s in smollm2._engine.tensors())[name]
    with pytest.raises(ValueError, match="re-quantize"):
        smollm2.load_weights({name: np.zeros(shape, np.float32)})

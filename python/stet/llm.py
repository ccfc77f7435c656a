"""stet.LLM: the offline API, named as vLLM's (LLM.generate, LLM.chat,
LLM.get_tokenizer), over the same engine `stet serve` runs.

Every prompt of a call goes into the engine at once — continuous batching —
and what each one gets is bitwise what it gets alone, from `stet run` or from
the server (same tokens, same text, same logprob bits): the kernels are
batch-invariant and sampling is keyed by (seed, choice, position). The
interpreter's lock is released while the engine works; Ctrl-C cancels what is
running and raises KeyboardInterrupt.
"""
import itertools
import json as _json
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import _core
from ._progress import Progress
from .errors import RequestError
from .outputs import CompletionOutput, Logprob, RequestOutput, StreamDelta
from .sampling_params import SamplingParams
from .tokenizer import Tokenizer, render_chat

_core._set_request_error(RequestError)

PromptType = Union[str, Dict[str, Any]]

# vLLM constructor arguments that mean nothing on a CPU engine, accepted at these values.
_IGNORED = {"trust_remote_code": None, "dtype": "auto", "tensor_parallel_size": 1,
            "pipeline_parallel_size": 1, "gpu_memory_utilization": None, "enforce_eager": None,
            "download_dir": None, "tokenizer_mode": None, "max_logprobs": None,
            "disable_log_stats": None, "swap_space": None, "revision": None}

_WAIT_S = 0.1  # how often a waiting call comes back for Ctrl-C and the progress bar


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


class LLM:
    """A model loaded into stet's engine.

    ``model``: a GGUF file or a pulled model's name (``stet list``, ``stet pull``).
    ``threads`` (default: every core), ``max_model_len`` (context positions,
    default 4096, clamped to the model's), ``kv_cache_dtype`` ("auto": f32 under
    numerics="precise", else f16; or "f16", "f32"), ``numerics`` ("invariant", the
    default; "fast": one int8 activation pass, as llama.cpp; "precise": float
    activations, within 1e-3 nats of a float64 forward; "adaptive": batch-variant,
    as other engines — each in the fingerprint; docs/numerics.md "Modes"), ``speculative`` ("lookup", "draft" with
    ``draft_model``, or vLLM's ``speculative_config`` dict) — threads, ISA,
    batching and speculation never change a bit. ``seed``: the seed of
    requests whose SamplingParams name none (else each draws its own, reported
    in RequestOutput.seed). ``chat_template``: a template text or file
    replacing the model's; ``chat_template_kwargs``: template variables every
    chat gets (as `stet serve --chat-template-kwargs`).
    """

    def __init__(self, model: str, *, threads: Optional[int] = None,
                 max_model_len: Optional[int] = None, kv_cache_dtype: str = "auto",
                 numerics: str = "invariant", speculative: Optional[str] = None,
                 speculative_config: Optional[Dict[str, Any]] = None,
                 draft_model: Optional[str] = None, num_speculative_tokens: int = 4,
                 isa: str = "auto", max_num_seqs: int = 64, max_num_batched_tokens: int = 512,
                 enable_prefix_caching: bool = True, chat_template: Optional[str] = None,
                 chat_template_kwargs: Optional[Dict[str, Any]] = None,
                 tokenizer: Optional[str] = None, seed: Optional[int] = None,
                 progress: bool = False, **kwargs):
        for k, v in kwargs.items():
            if k not in _IGNORED:
                raise TypeError(f"LLM() got an unexpected keyword argument '{k}'")
            if _IGNORED[k] is not None and v != _IGNORED[k]:
                raise ValueError(f"{k}={v!r} is not supported by stet (only {_IGNORED[k]!r})")
        if tokenizer is not None and tokenizer != model:
            raise ValueError("stet reads the tokenizer from the model file; tokenizer= must be "
                             "None or the model")
        o = _core.LlmOptions()
        o.model = os.fspath(model)
        o.threads = 0 if threads is None else int(threads)
        o.max_model_len = 4096 if max_model_len is None else int(max_model_len)
        o.kv_cache_dtype = kv_cache_dtype
        o.numerics = numerics
        o.isa = isa
        mode, k, draft = _speculation(speculative, speculative_config, draft_model,
                                      num_speculative_tokens)
        o.speculative, o.num_speculative_tokens, o.draft_model = mode, k, draft
        o.max_num_seqs = int(max_num_seqs)
        o.max_num_batched_tokens = int(max_num_batched_tokens)
        o.chunk_size = min(256, o.max_num_batched_tokens)
        o.enable_prefix_caching = bool(enable_prefix_caching)
        if chat_template is not None:
            if os.path.isfile(chat_template):
                with open(chat_template, encoding="utf-8") as f:
                    chat_template = f.read()
            o.chat_template = chat_template
        if chat_template_kwargs:
            o.chat_template_kwargs = _json.dumps(chat_template_kwargs, ensure_ascii=False)
        o.progress = bool(progress)
        self._engine = _core.Engine.open(o)
        self._seed = None if seed is None else int(seed)
        self._counter = itertools.count()
        self._tokenizer = Tokenizer(self._engine)
        self._pieces: Dict[int, str] = {}

    # --- what the engine is ---
    @property
    def fingerprint(self) -> str:
        """The server's system_fingerprint: model SHA-256, numerics version, KV
        type and mode. Same fingerprint + same request (seed included) => same bytes."""
        return self._engine.fingerprint

    @property
    def model_id(self) -> str:
        return self._engine.model_id

    @property
    def max_model_len(self) -> int:
        return self._engine.n_ctx

    def get_tokenizer(self) -> Tokenizer:
        return self._tokenizer

    # --- weights that change (RL: the sampler follows the trainer) ---
    def load_weights(self, weights) -> None:
        """Replaces float weights in place, between engine steps: ``weights`` is
        a dict or an iterable of (name, tensor) pairs — GGUF names
        ("blk.0.attn_q.weight") or the architecture's Hugging Face names
        ("model.layers.0.self_attn.q_proj.weight", permuted as llama.cpp's
        converter does) — with numpy arrays or torch tensors (float32, float16,
        bfloat16; any device) in the Hugging Face shape. All or none; no file,
        no reload. Requests already submitted finish with the weights they
        started with. Afterwards ``fingerprint`` names the current weights
        (the file's again when they equal it). Only f32/f16/bf16 tensors can
        change (quantized ones are refused: stet does not re-quantize), and
        values are never rounded."""
        from .weights import prepare
        self._engine.load_weights(prepare(self._engine, weights))

    def weight_names(self) -> List[str]:
        """The GGUF names of the model's tensors (what load_weights takes)."""
        return [name for name, _, _ in self._engine.tensors()]

    # --- generation ---
    def generate(self, prompts: Union[PromptType, Sequence[PromptType], None] = None,
                 sampling_params: Union[SamplingParams, Sequence[SamplingParams], None] = None,
                 use_tqdm: bool = True, lora_request: None = None,
                 prompt_token_ids: Optional[List[List[int]]] = None) -> List[RequestOutput]:
        """One RequestOutput per prompt, in order. Prompts are strings,
        {"prompt": text} or {"prompt_token_ids": [ids]}; ``sampling_params`` one
        SamplingParams for all, or one per prompt (default: SamplingParams())."""
        if lora_request is not None:
            raise ValueError("LoRA adapters are not supported by stet")
        if prompt_token_ids is not None:  # vLLM's older keyword
            if prompts is not None:
                raise ValueError("give prompts or prompt_token_ids, not both")
            prompts = [{"prompt_token_ids": ids} for ids in prompt_token_ids]
        items = self._prompts(prompts)
        params = _per_prompt(sampling_params, len(items))
        prepared = [self._prepare(ids, sp, field) for (_, ids, field), sp in zip(items, params)]
        items = [(text, ids) for text, ids, _ in items]
        return self._run(items, params, prepared, use_tqdm)

    def chat(self, messages, sampling_params=None, use_tqdm: bool = True,
             chat_template: Optional[str] = None, add_generation_prompt: bool = True,
             continue_final_message: bool = False, tools: Optional[List[Dict[str, Any]]] = None,
             chat_template_kwargs: Optional[Dict[str, Any]] = None,
             lora_request: None = None, clock: Optional[int] = None) -> List[RequestOutput]:
        """Chat completions: a conversation (a list of {"role", "content"}
        messages) or a list of conversations, each rendered by the model's
        chat template exactly as `stet serve`'s /v1/chat/completions renders it
        (``clock``: the Unix time the template's strftime_now/date_string see,
        as the server's metadata.stet_clock; None: now)."""
        if lora_request is not None:
            raise ValueError("LoRA adapters are not supported by stet")
        if chat_template is not None:
            raise ValueError("a per-call chat_template is not supported; give "
                             "LLM(chat_template=...)")
        if not isinstance(messages, (list, tuple)) or not messages:
            raise RequestError("messages must be a non-empty list of messages or of "
                               "conversations", "messages")
        conversations = [messages] if isinstance(messages[0], dict) else list(messages)
        params = _per_prompt(sampling_params, len(conversations))
        items, prepared = [], []
        for conv, sp in zip(conversations, params):
            text = render_chat(self._engine, conv, tools, add_generation_prompt,
                               continue_final_message, chat_template_kwargs, clock)
            ids = self._engine.chat_tokenize(text)
            items.append((text, ids))
            prepared.append(self._prepare(ids, sp, "messages", self._engine.chat_extra_stops))
        return self._run(items, params, prepared, use_tqdm)

    def stream(self, prompt: PromptType,
               sampling_params: Optional[SamplingParams] = None) -> Iterator[StreamDelta]:
        """The output of one prompt as it is generated: StreamDelta per token
        (text released so far, token ids, logprobs), the last one of each choice
        with its finish_reason. Closing the iterator (or Ctrl-C) cancels the request."""
        items = self._prompts(prompt)
        if len(items) != 1:
            raise RequestError("stream takes one prompt", "prompt")
        (_, ids, field), = items
        sp = sampling_params or SamplingParams()
        run = self._engine.stream(self._prepare(ids, sp, field))
        return self._stream_events(run, sp)

    # --- internals ---
    def _prompts(self, prompts):
        if isinstance(prompts, (str, dict)):
            prompts = [prompts]
        if not isinstance(prompts, (list, tuple)):
            raise RequestError("prompts must be a string, a dict or a list of them", "prompt")
        if not prompts:
            raise RequestError("prompts must not be empty", "prompt")
        out = []
        for i, p in enumerate(prompts):
            if isinstance(p, str):
                out.append((p, self._engine.encode(p, True, True), "prompt"))
            elif isinstance(p, dict):
                unknown = set(p) - {"prompt", "prompt_token_ids"}
                if unknown:
                    raise RequestError(f"prompt {i}: unsupported keys {sorted(unknown)}", "prompt")
                if "prompt_token_ids" in p:
                    ids = p["prompt_token_ids"]
                    if (not isinstance(ids, (list, tuple))
                            or not all(isinstance(t, int) and not isinstance(t, bool)
                                       for t in ids)):
                        raise RequestError(f"prompt {i}: prompt_token_ids must be a list of "
                                           "ints", "prompt_token_ids")
                    if any(not -2**31 <= t < 2**31 for t in ids):
                        raise RequestError(f"prompt {i}: prompt_token_ids must be 32-bit ints",
                                           "prompt_token_ids")
                    out.append((p.get("prompt"), list(ids), "prompt_token_ids"))
                elif isinstance(p.get("prompt"), str):
                    out.append((p["prompt"], self._engine.encode(p["prompt"], True, True),
                                "prompt"))
                else:
                    raise RequestError(f"prompt {i}: give 'prompt' (a string) or "
                                       "'prompt_token_ids'", "prompt")
            else:
                raise RequestError(f"prompt {i}: a string or a dict, not {type(p).__name__}",
                                   "prompt")
        return out

    def _prepare(self, ids, sp: SamplingParams, prompt_field: str, extra_stops=()):
        """The engine's validated request; a refusal of the prompt names how it
        was given ("prompt", "prompt_token_ids" or "messages"), as the server's does."""
        if not isinstance(sp, SamplingParams):
            raise TypeError("sampling_params must be SamplingParams")
        spec = sp._spec(ids, extra_stops)
        if spec.seed is None and self._seed is not None:
            spec.seed = self._seed
        try:
            return self._engine.prepare(spec)
        except RequestError as e:
            if e.param == "prompt" and prompt_field != "prompt":
                raise RequestError(prompt_field + str(e)[len("prompt"):], prompt_field) from None
            raise

    def _run(self, items, params, prepared, use_tqdm) -> List[RequestOutput]:
        batch = self._engine.run_batch(prepared)
        progress = Progress(len(prepared), use_tqdm)
        try:
            while batch.wait(_WAIT_S) < batch.size:
                progress.update(batch.finished, batch.generated_tokens)
            progress.update(batch.finished, batch.generated_tokens)
        except BaseException:
            # Ctrl-C (or anything else): nothing of this call keeps running.
            batch.cancel()
            while batch.wait(1.0) < batch.size:
                pass
            raise
        return [self._output(batch.result(i), text, ids, sp)
                for i, ((text, ids), sp) in enumerate(zip(items, params))]

    def _piece(self, token_id: int) -> str:
        piece = self._pieces.get(token_id)
        if piece is None:
            piece = self._pieces[token_id] = _text(self._engine.piece(token_id))
        return piece

    def _logprobs(self, token_id, logprob, top, k) -> Dict[int, Logprob]:
        """vLLM's per-position dict: the token first, then the top-k alternatives.
        Ranks count the strictly more likely tokens (all of which are in `top`,
        best first); a token outside `top` has rank None."""
        rank = None
        if any(t == token_id for t, _ in top):
            rank = 1 + sum(1 for _, lp in top if lp > logprob)
        d = {token_id: Logprob(logprob, rank, self._piece(token_id))}
        for t, lp in top[:k]:
            if t not in d:
                d[t] = Logprob(lp, 1 + sum(1 for _, x in top if x > lp), self._piece(t))
        return d

    def _output(self, result, text, ids, sp: SamplingParams) -> RequestOutput:
        seed, cached, (p_ids, p_lps, p_tops), choices = result
        prompt_logprobs = None
        if sp.prompt_logprobs is not None and p_ids:
            prompt_logprobs = [None] + [self._logprobs(t, lp, top, sp.prompt_logprobs)
                                        for t, lp, top in zip(p_ids[1:], p_lps[1:], p_tops[1:])]
        outs = [self._choice(i, c, sp) for i, c in enumerate(choices)]
        if sp.truncate_prompt_tokens is not None:
            ids = ids[-sp.truncate_prompt_tokens:]
        return RequestOutput(request_id=str(next(self._counter)), prompt=text,
                             prompt_token_ids=list(p_ids) if p_ids else list(ids),
                             prompt_logprobs=prompt_logprobs, outputs=outs,
                             num_cached_tokens=cached, seed=seed)

    def _choice(self, index, c, sp: SamplingParams) -> CompletionOutput:
        tok_ids, lps, tops, text_b, finish, end_marker, error, hashes = c
        if finish == "error":
            raise RuntimeError(f"stet: choice {index} failed: {error}")
        text = _text(text_b)
        stop_reason = None
        if finish == "stop":
            stop_reason = self._stop_reason(tok_ids, end_marker, text_b, sp)
            if sp.include_stop_str_in_output and isinstance(stop_reason, str):
                text += stop_reason
        logprobs = None
        cumulative = None
        if sp.logprobs is not None:
            logprobs = [self._logprobs(t, lp, top, sp.logprobs)
                        for t, lp, top in zip(tok_ids, lps, tops)]
            cumulative = float(sum(lps))
        return CompletionOutput(index=index, text=text, token_ids=list(tok_ids),
                                cumulative_logprob=cumulative, logprobs=logprobs,
                                finish_reason=finish, stop_reason=stop_reason,
                                logits_hashes=list(hashes) if sp.logits_hash else None)

    def _stop_reason(self, tok_ids, end_marker, text_b: bytes, sp: SamplingParams):
        """What ended a "stop" choice: the stop token id, None for end of
        generation, or the stop string (the one that begins where the text ends)."""
        if end_marker:
            last = tok_ids[-1]
            return last if last in sp.stop_token_ids else None
        full = b"".join(self._engine.piece(t) for t in tok_ids)
        rest = full[len(text_b):] if full.startswith(text_b) else full
        stops = sp.stop + [s for s in self._engine.chat_extra_stops if s not in sp.stop]
        for s in stops:
            if rest.startswith(s.encode()):
                return s
        return next((s for s in stops if s.encode() in rest), None)

    def _stream_events(self, run, sp: SamplingParams) -> Iterator[StreamDelta]:
        tokens: Dict[int, List[int]] = {}
        texts: Dict[int, bytes] = {}
        ended: Dict[int, bool] = {}  # the last token ended the choice (EOS or a stop id)
        try:
            while not run.done:
                for ev in run.take(_WAIT_S):
                    kind, choice = ev[0], ev[1]
                    if kind == "token":
                        _, _, t, lp, top, text_b, end_marker = ev
                        tokens.setdefault(choice, []).append(t)
                        texts[choice] = texts.get(choice, b"") + text_b
                        ended[choice] = end_marker
                        lps = ([self._logprobs(t, lp, top, sp.logprobs)]
                               if sp.logprobs is not None else None)
                        yield StreamDelta(index=choice, text=_text(text_b), token_ids=[t],
                                          logprobs=lps)
                    elif kind == "finished":
                        _, _, text_b, finish, error, _cached = ev
                        if finish == "error":
                            raise RuntimeError(f"stet: choice {choice} failed: {error}")
                        texts[choice] = texts.get(choice, b"") + text_b
                        stop_reason = None
                        if finish == "stop":
                            stop_reason = self._stop_reason(tokens.get(choice, []),
                                                            ended.get(choice, False),
                                                            texts[choice], sp)
                        yield StreamDelta(index=choice, text=_text(text_b), finish_reason=finish,
                                          stop_reason=stop_reason)
        finally:
            run.cancel()


def _per_prompt(sampling_params, count) -> List[SamplingParams]:
    if sampling_params is None:
        return [SamplingParams()] * count
    if isinstance(sampling_params, SamplingParams):
        return [sampling_params] * count
    params = list(sampling_params)
    if len(params) != count:
        raise ValueError(f"{len(params)} SamplingParams for {count} prompts: give one, or one "
                         "per prompt")
    return params


def _speculation(speculative, config, draft_model, k):
    """(mode, k, draft model) from stet's speculative= or vLLM's speculative_config."""
    if config is not None:
        if speculative is not None:
            raise ValueError("give speculative or speculative_config, not both")
        method = config.get("method")
        k = int(config.get("num_speculative_tokens", k))
        draft_model = config.get("model", draft_model)
        if method in ("ngram", "lookup"):
            speculative = "lookup"
        elif method in (None, "draft_model") and draft_model:
            speculative = "draft"
        else:
            raise ValueError(f"speculative_config method {method!r} is not supported "
                             "(ngram, draft_model)")
    if speculative in (None, False):
        mode = "draft" if draft_model else "off"
    elif speculative is True:
        mode = "lookup"
    else:
        mode = str(speculative)
    return mode, int(k), draft_model or ""

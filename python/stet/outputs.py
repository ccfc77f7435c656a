"""What LLM.generate, LLM.chat and LLM.stream return, shaped as vLLM's
(vllm.outputs.RequestOutput / CompletionOutput, vllm.sequence.Logprob) so code
that reads vLLM's outputs reads these unchanged. Token ids and logprobs are the
engine's own values: the float32 logprob of each token widened to a Python
float, never recomputed.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union


@dataclass
class Logprob:
    """One token's log-probability (the model's raw log-softmax over the whole
    vocabulary, before temperature, penalties or truncation); ``rank`` is 1 for
    the most likely token (tokens with a strictly greater logprob, plus one),
    None where it lies beyond the alternatives asked for; ``decoded_token`` the
    token's text."""

    logprob: float
    rank: Optional[int] = None
    decoded_token: Optional[str] = None


# Per position: token id -> Logprob (the chosen token first, then the alternatives).
SampleLogprobs = List[Dict[int, Logprob]]
PromptLogprobs = List[Optional[Dict[int, Logprob]]]


@dataclass
class CompletionOutput:
    """One choice of a request (``index`` in 0..n-1)."""

    index: int
    text: str
    token_ids: List[int]
    cumulative_logprob: Optional[float]
    logprobs: Optional[SampleLogprobs]
    finish_reason: Optional[str] = None  # "stop", "length", "cancelled" or "error"
    stop_reason: Union[int, str, None] = None  # the stop string or stop token id; None for EOS
    lora_request: None = None
    # stet: with SamplingParams(logits_hash=True), each token's FNV-1a-64 of the step's raw logits.
    logits_hashes: Optional[List[int]] = None

    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class RequestOutput:
    """One prompt's result. ``seed`` (stet's addition) is the seed its sampling
    used — the one given, or the one the engine drew — so the same request
    with it replays the same bytes under the same LLM.fingerprint."""

    request_id: str
    prompt: Optional[str]
    prompt_token_ids: List[int]
    prompt_logprobs: Optional[PromptLogprobs]
    outputs: List[CompletionOutput]
    finished: bool = True
    num_cached_tokens: int = 0
    seed: Optional[int] = None
    metrics: None = None
    lora_request: None = None


@dataclass
class StreamDelta:
    """One piece of LLM.stream's output for choice ``index``: the text it
    releases (stop strings held back, UTF-8 completed; may be empty), the
    token ids and (with logprobs) their Logprob dicts; the last delta of a
    choice carries its finish_reason and stop_reason."""

    index: int
    text: str = ""
    token_ids: List[int] = field(default_factory=list)
    logprobs: Optional[SampleLogprobs] = None
    finish_reason: Optional[str] = None
    stop_reason: Union[int, str, None] = None

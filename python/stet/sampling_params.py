"""SamplingParams and StructuredOutputsParams, named and defaulted as vLLM's.

Every range is checked by the engine's one ValidateRequest (the server's 400s
come from it too): when a SamplingParams is made (what needs no model) and
again when a prompt is submitted (token ids, context length). A refusal is a
stet.RequestError — a ValueError whose ``param`` names the field.
"""
import json as _json
from typing import Any, Dict, List, Optional, Union

from . import _core
from .errors import RequestError

_KINDS = ("json", "regex", "choice", "grammar", "json_object")
# The fields the engine's request takes as they are (RequestSpec's names).
_SPEC_FIELDS = ("max_tokens", "min_tokens", "n", "temperature", "top_p", "min_p",
                "presence_penalty", "frequency_penalty", "repetition_penalty", "logit_bias", "seed",
                "stop_token_ids", "ignore_eos", "logprobs", "prompt_logprobs", "speculative",
                "logits_hash")


class StructuredOutputsParams:
    """One constraint on the output (vLLM's StructuredOutputsParams): ``json``
    (a JSON Schema as a dict or JSON text, or a pydantic model class),
    ``regex`` (the whole output matches it), ``choice`` (one of these strings),
    ``grammar`` (GBNF, llama.cpp's dialect) or ``json_object=True`` (any JSON
    object). Compiled by the same code as the server's response_format and
    grammar; what stet cannot enforce is refused, never ignored."""

    def __init__(self, json: Union[str, Dict[str, Any], type, None] = None,
                 regex: Optional[str] = None, choice: Optional[List[str]] = None,
                 grammar: Optional[str] = None, json_object: Optional[bool] = None,
                 disable_any_whitespace: bool = False, disable_fallback: bool = False,
                 disable_additional_properties: bool = False,
                 whitespace_pattern: Optional[str] = None, structural_tag: Optional[str] = None,
                 backend: Optional[str] = None):
        self.json = json
        self.regex = regex
        self.choice = choice
        self.grammar = grammar
        self.json_object = json_object
        # stet has one backend and one whitespace rule (a bounded run of blanks between JSON
        # tokens); these vLLM knobs are accepted at their defaults only.
        if whitespace_pattern is not None:
            raise RequestError("structured_outputs.whitespace_pattern is not supported",
                               "structured_outputs.whitespace_pattern")
        if structural_tag is not None:
            raise RequestError("structured_outputs.structural_tag is not supported",
                               "structured_outputs.structural_tag")
        self.disable_any_whitespace = disable_any_whitespace
        self.disable_fallback = disable_fallback
        self.disable_additional_properties = disable_additional_properties
        self.backend = backend
        given = [k for k in _KINDS if getattr(self, k) not in (None, False)]
        if len(given) != 1:
            raise RequestError("structured_outputs: give exactly one of json, regex, choice, "
                               f"grammar or json_object (got {given or 'none'})",
                               "structured_outputs")
        self._compiled = None

    def _kind(self):
        kind = next(k for k in _KINDS if getattr(self, k) not in (None, False))
        value = getattr(self, kind)
        if kind == "json":
            if isinstance(value, type) and hasattr(value, "model_json_schema"):
                value = value.model_json_schema()  # a pydantic model class
            text = value if isinstance(value, str) else _json.dumps(value)
            return kind, text, []
        if kind == "choice":
            if isinstance(value, str) or not all(isinstance(c, str) for c in value):
                raise RequestError("structured_outputs.choice must be a list of strings",
                                   "structured_outputs.choice")
            return kind, "", list(value)
        if kind == "json_object":
            return kind, "", []
        if not isinstance(value, str):
            raise RequestError(f"structured_outputs.{kind} must be a string",
                               f"structured_outputs.{kind}")
        return kind, value, []

    def compiled(self):
        """The compiled grammar (made once, shared by every prompt)."""
        if self._compiled is None:
            self._compiled = _core.compile_structured(*self._kind())
        return self._compiled

    def __repr__(self):
        kind, text, choices = self._kind()
        return f"StructuredOutputsParams({kind}={choices or text!r})"


# vLLM's earlier name (SamplingParams(guided_decoding=GuidedDecodingParams(...))).
GuidedDecodingParams = StructuredOutputsParams


def _number(name, value, kind):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RequestError(f"{name} must be a number, not {type(value).__name__}", name)
    if kind is int:
        if isinstance(value, float) and not value.is_integer():
            raise RequestError(f"{name} must be an integer, not {value}", name)
        return int(value)
    return float(value)


def _optional_int(name, value):
    return None if value is None else _number(name, value, int)


class SamplingParams:
    """How each prompt is sampled (vLLM's SamplingParams: same names, same
    defaults — temperature 1, max_tokens 16).

    stet additions: ``speculative`` (True/False: speculative decoding for this
    request, never changing a byte; None: the LLM's default) and
    ``logits_hash`` (each token's FNV-1a-64 of the step's full logits, in
    ``CompletionOutput.logits_hashes``). Accepted at vLLM's defaults only:
    ``detokenize``, ``skip_special_tokens``, ``spaces_between_special_tokens``
    (stet's text never renders special tokens).
    """

    def __init__(self, n: int = 1, best_of: Optional[int] = None,
                 presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                 repetition_penalty: float = 1.0, temperature: float = 1.0, top_p: float = 1.0,
                 top_k: int = 0, min_p: float = 0.0, seed: Optional[int] = None,
                 stop: Union[str, List[str], None] = None,
                 stop_token_ids: Optional[List[int]] = None, ignore_eos: bool = False,
                 max_tokens: Optional[int] = 16, min_tokens: int = 0,
                 logprobs: Optional[int] = None, prompt_logprobs: Optional[int] = None,
                 detokenize: bool = True, skip_special_tokens: bool = True,
                 spaces_between_special_tokens: bool = True,
                 include_stop_str_in_output: bool = False,
                 logit_bias: Optional[Dict[int, float]] = None,
                 structured_outputs: Optional[StructuredOutputsParams] = None,
                 guided_decoding: Optional[StructuredOutputsParams] = None,
                 truncate_prompt_tokens: Optional[int] = None,
                 speculative: Optional[bool] = None, logits_hash: bool = False):
        self.n = _number("n", n, int)
        if best_of is not None and best_of != n:
            raise RequestError("best_of other than n is not supported", "best_of")
        self.best_of = best_of
        self.presence_penalty = _number("presence_penalty", presence_penalty, float)
        self.frequency_penalty = _number("frequency_penalty", frequency_penalty, float)
        self.repetition_penalty = _number("repetition_penalty", repetition_penalty, float)
        self.temperature = _number("temperature", temperature, float)
        self.top_p = _number("top_p", top_p, float)
        self.top_k = _number("top_k", top_k, int)
        self.min_p = _number("min_p", min_p, float)
        self.seed = _optional_int("seed", seed)
        if self.seed is not None and not 0 <= self.seed < 2**64:
            raise RequestError(f"seed must be in [0, 2^64), not {self.seed}", "seed")
        if isinstance(stop, str):
            stop = [stop]
        if stop is not None and not all(isinstance(s, str) for s in stop):
            raise RequestError("stop must be a string or a list of strings", "stop")
        self.stop = list(stop or [])
        self.stop_token_ids = [_number("stop_token_ids", t, int) for t in (stop_token_ids or [])]
        self.ignore_eos = bool(ignore_eos)
        self.max_tokens = _optional_int("max_tokens", max_tokens)
        self.min_tokens = _number("min_tokens", min_tokens, int)
        if self.max_tokens is not None and 0 <= self.max_tokens < self.min_tokens:
            raise RequestError(f"min_tokens must be at most max_tokens ({self.max_tokens}), "
                               f"not {self.min_tokens}", "min_tokens")
        self.logprobs = _optional_int("logprobs", logprobs)
        self.prompt_logprobs = _optional_int("prompt_logprobs", prompt_logprobs)
        for name, value in (("detokenize", detokenize), ("skip_special_tokens", skip_special_tokens),
                            ("spaces_between_special_tokens", spaces_between_special_tokens)):
            if value is not True:
                raise RequestError(f"{name}={value!r} is not supported (stet's text never "
                                   "renders special tokens)", name)
        self.detokenize = self.skip_special_tokens = self.spaces_between_special_tokens = True
        self.include_stop_str_in_output = bool(include_stop_str_in_output)
        self.logit_bias = {}
        for k, v in (logit_bias or {}).items():
            key = int(k) if isinstance(k, str) and k.isdigit() else k
            self.logit_bias[_number("logit_bias", key, int)] = _number("logit_bias", v, float)
        if structured_outputs is not None and guided_decoding is not None:
            raise RequestError("give structured_outputs or guided_decoding, not both",
                               "structured_outputs")
        so = structured_outputs if structured_outputs is not None else guided_decoding
        if so is not None and not isinstance(so, StructuredOutputsParams):
            raise RequestError("structured_outputs must be a StructuredOutputsParams",
                               "structured_outputs")
        self.structured_outputs = so
        self.truncate_prompt_tokens = _optional_int("truncate_prompt_tokens",
                                                    truncate_prompt_tokens)
        if self.truncate_prompt_tokens is not None and self.truncate_prompt_tokens < 1:
            raise RequestError("truncate_prompt_tokens must be at least 1",
                               "truncate_prompt_tokens")
        self.speculative = None if speculative is None else bool(speculative)
        self.logits_hash = bool(logits_hash)
        _core.check_spec(self._spec([]))
        if so is not None:
            so.compiled()

    @property
    def guided_decoding(self):
        return self.structured_outputs

    def _spec(self, prompt_ids, extra_stops=()) -> "_core.RequestSpec":
        """The engine's request for one prompt (validated by LLM at submit)."""
        s = _core.RequestSpec()
        if self.truncate_prompt_tokens is not None:
            prompt_ids = prompt_ids[-self.truncate_prompt_tokens:]
        s.prompt = prompt_ids
        for name in _SPEC_FIELDS:
            setattr(s, name, getattr(self, name))
        s.top_k = 0 if self.top_k == -1 else self.top_k  # vLLM's -1: off
        s.stop = self.stop + [x for x in extra_stops if x not in self.stop]
        if self.structured_outputs is not None:
            s.grammar = self.structured_outputs.compiled()
        return s

    def clone(self) -> "SamplingParams":
        import copy
        return copy.copy(self)

    def __repr__(self):
        fields = ("n", "temperature", "top_p", "top_k", "min_p", "seed", "max_tokens",
                  "min_tokens", "stop", "stop_token_ids", "ignore_eos", "logprobs",
                  "prompt_logprobs", "presence_penalty", "frequency_penalty",
                  "repetition_penalty", "logit_bias", "structured_outputs")
        return "SamplingParams(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in fields) + ")"

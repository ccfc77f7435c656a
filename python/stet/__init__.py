"""stet from Python: the batch-invariant engine in-process, named as vLLM's
offline API.

    from stet import LLM, SamplingParams
    llm = LLM("smollm2-135m")
    out = llm.generate(["Once upon a time"], SamplingParams(temperature=0, max_tokens=32))
    print(out[0].outputs[0].text, llm.fingerprint)

The same request gives the same bytes here, from `stet run` and from `stet
serve` (docs/python.md).
"""
from .errors import RequestError
from .llm import LLM
from .outputs import CompletionOutput, Logprob, RequestOutput, StreamDelta
from .sampling_params import GuidedDecodingParams, SamplingParams, StructuredOutputsParams

__version__ = "0.1.0"
__all__ = ["LLM", "SamplingParams", "StructuredOutputsParams", "GuidedDecodingParams",
           "RequestOutput", "CompletionOutput", "Logprob", "StreamDelta", "RequestError"]

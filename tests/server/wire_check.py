"""Every answer the server tests get, checked against the openai package's
own pydantic types with strict validation: a chat.completion,
text_completion or Responses object, each chat.completion.chunk and
text_completion chunk of a stream, and each Responses stream event. A field
the types require and the server leaves out (as Responses'
usage.input_tokens_details.cache_write_tokens was) fails the test that got
it. stet_server.py applies it to the openai client (a transport that checks
each body and each SSE event as it passes) and to its raw HTTP helper.

Two deliberate exemptions, where the package's types disagree with OpenAI's
own API (which streams "finish_reason": null before a choice's last
text_completion chunk, and gives the first echoed prompt token a null
logprob): a legacy completion's null finish_reason, and a null first entry of
its token_logprobs / top_logprobs, are read as if set. Nothing else is.
"""
import collections
import copy
import json

try:  # the openai package's HTTP client: httpx2 in openai 3.x, httpx before
    import httpx2 as httpx
except ImportError:
    import httpx
from pydantic import TypeAdapter
from openai.types import Completion
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent

GENERATION_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/responses")
COUNTS = collections.Counter()  # what was checked, by kind: tests can assert coverage
_EVENT = TypeAdapter(ResponseStreamEvent)


class WireError(AssertionError):
    pass


def _completion_as_typed(obj):
    """The two exemptions above, on a copy."""
    obj = copy.deepcopy(obj)
    for c in obj.get("choices") or []:
        if isinstance(c, dict) and c.get("finish_reason") is None:
            c["finish_reason"] = "stop"
        lp = c.get("logprobs") if isinstance(c, dict) else None
        if isinstance(lp, dict):
            for key, filler in (("token_logprobs", 0.0), ("top_logprobs", {})):
                seq = lp.get(key)
                if isinstance(seq, list) and seq and seq[0] is None:
                    seq[0] = filler
    return obj


def check_object(obj, where=""):
    """Validates one answer, chunk or event; raises WireError naming what failed."""
    try:
        if isinstance(obj, dict) and "type" in obj and "object" not in obj:
            _EVENT.validate_python(obj, strict=True)
            kind = "event " + str(obj["type"])
        elif isinstance(obj, dict) and obj.get("object") == "chat.completion":
            ChatCompletion.model_validate(obj, strict=True)
            kind = "chat.completion"
        elif isinstance(obj, dict) and obj.get("object") == "chat.completion.chunk":
            ChatCompletionChunk.model_validate(obj, strict=True)
            kind = "chat.completion.chunk"
        elif isinstance(obj, dict) and obj.get("object") == "text_completion":
            Completion.model_validate(_completion_as_typed(obj), strict=True)
            kind = "text_completion"
        elif isinstance(obj, dict) and obj.get("object") == "response":
            Response.model_validate(obj, strict=True)
            kind = "response"
        elif isinstance(obj, dict) and "error" in obj:
            return  # an error body (4xx/5xx, or mid-stream): OpenAI's shape, no typed model
        else:
            raise WireError(f"{where}: not an OpenAI object: {json.dumps(obj)[:300]}")
    except WireError:
        raise
    except Exception as e:  # pydantic's ValidationError
        raise WireError(f"{where}: {e}\n  in {json.dumps(obj)[:600]}") from None
    COUNTS[kind] += 1


class SseChecker:
    """Checks the events of an SSE stream as its bytes arrive."""

    def __init__(self, where):
        self.where = where
        self.buf = b""

    def feed(self, chunk):
        self.buf += chunk
        while True:
            cut = min((i for i in (self.buf.find(b"\n\n"), self.buf.find(b"\r\n\r\n")) if i >= 0),
                      default=-1)
            if cut < 0:
                return
            event, self.buf = self.buf[:cut], self.buf[cut:].lstrip(b"\r\n")
            data = [line[5:].lstrip() for line in event.decode("utf-8").splitlines()
                    if line.startswith("data:")]
            if not data or data == ["[DONE]"]:
                continue
            check_object(json.loads("\n".join(data)), self.where)


def check_body(path, status, content_type, body):
    """A whole answer of a generation path (raw HTTP)."""
    if status != 200 or not path.split("?")[0].endswith(GENERATION_PATHS):
        return
    if content_type and content_type.startswith("text/event-stream"):
        c = SseChecker(path)
        c.feed(body)
        c.feed(b"\n\n")
    else:
        check_object(json.loads(body), path)


def _decoder(encoding):
    """The client's own decoder for a Content-Encoding (gzip, deflate, br, ...)."""
    from importlib import import_module
    decoders = import_module(httpx.__name__ + "._decoders")
    cls = decoders.SUPPORTED_DECODERS.get((encoding or "identity").strip().lower())
    return cls() if cls else decoders.IdentityDecoder()


class _CheckedStream(httpx.SyncByteStream):
    """Passes the raw bytes on unchanged; checks what they decode to."""

    def __init__(self, inner, path, sse, encoding):
        self.inner, self.path, self.sse = inner, path, sse
        self.decoder = _decoder(encoding)
        self.sse_checker = SseChecker(path) if sse else None
        self.body = b""

    def _take(self, data):
        if not isinstance(data, bytes):  # httpx2's decoders yield pieces
            data = b"".join(data)
        if self.sse_checker:
            self.sse_checker.feed(data)
        else:
            self.body += data

    def __iter__(self):
        for chunk in self.inner:
            self._take(self.decoder.decode(chunk))
            yield chunk
        self._take(self.decoder.flush())
        if not self.sse:
            check_object(json.loads(self.body), self.path)

    def close(self):
        self.inner.close()


class CheckingTransport(httpx.HTTPTransport):
    """An httpx transport that checks every 200 answer of a generation path."""

    def handle_request(self, request):
        response = super().handle_request(request)
        path = request.url.path
        if response.status_code == 200 and path.endswith(GENERATION_PATHS):
            sse = response.headers.get("content-type", "").startswith("text/event-stream")
            response.stream = _CheckedStream(response.stream, path, sse,
                                             response.headers.get("content-encoding"))
        return response

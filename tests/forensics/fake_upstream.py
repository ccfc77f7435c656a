"""A small, independent OpenAI-compatible upstream for the proxy tests (the
standard library only): /v1/chat/completions, /v1/completions and
/v1/responses, non-streamed and streamed (SSE), tool calls, logprobs when
asked, system_fingerprint, x-request-id and rate-limit headers. The model name
selects misbehaviour:

  "slow-S"          waits S seconds before answering (headers included)
  "status-N"        answers HTTP N with an OpenAI error body (429 adds Retry-After)
  "drop"            streams two chunks, then closes the connection mid-stream
  "trickle"         streams one chunk every 0.05 s (20 chunks)
  "stall"           streams one chunk, then goes silent for 8 s
  "no-logprobs"     answers 400 to any request that asks for logprobs
  "tools"           answers with a tool call (streamed in fragments)

The answer text is a pure function of the request (its last message / prompt
and max_tokens), so replays are comparable. POST /admin/fingerprint {"fp": ...,
"model": ..., "shift": x} changes the fingerprint, the answered model and adds
x to every logprob (a simulated backend change for drift tests). Run as a
script: prints "listening on http://127.0.0.1:PORT" and serves until killed.
"""
import hashlib
import json
import math
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATE = {"fp": "fp_fake0001", "model": "fake-model-2024-01-01", "shift": 0.0, "noise": 0.0, "count": 0,
         "salt_from_messages": 0, "received": []}
LOCK = threading.Lock()
WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "slept", "all", "day", "long"]


def words_for(seed_text, n):
    h = hashlib.sha256(seed_text.encode()).digest()
    return [WORDS[h[i % len(h)] % len(WORDS)] for i in range(n)]


def token_logprobs(tokens, top, counter):
    out = []
    for i, t in enumerate(tokens):
        noise = 0.0
        if STATE["noise"] > 0:  # stationary noise: a deterministic function of the request count
            g = hashlib.sha256(f"{counter}:{i}".encode()).digest()
            noise = STATE["noise"] * ((g[0] / 255.0) - 0.5)
        lp = -0.1 - 0.05 * (i % 7) + STATE["shift"] + noise
        alts = [{"token": t, "logprob": lp, "bytes": list(t.encode())}]
        for k in range(1, top):
            alt = WORDS[(WORDS.index(t.strip()) + k) % len(WORDS)] if t.strip() in WORDS else "x"
            alts.append({"token": " " + alt, "logprob": lp - 1.0 * k, "bytes": list((" " + alt).encode())})
        out.append({"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": alts[:top]})
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in separate writes: no 40 ms delayed-ACK stalls

    def log_message(self, *args):
        pass

    def _send_json(self, status, obj, extra=None):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-request-id", "req_" + hashlib.sha1(body).hexdigest()[:12])
        self.send_header("x-ratelimit-remaining-requests", "99")
        self.send_header("x-ratelimit-limit-tokens", "100000")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/v1/models"):
            return self._send_json(200, {"object": "list", "data": [{"id": STATE["model"], "object": "model"}]})
        self._send_json(404, {"error": {"message": "no such path", "type": "invalid_request_error"}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        if self.path == "/admin/fingerprint":
            STATE.update(json.loads(raw))
            return self._send_json(200, STATE)
        if self.path == "/admin/echo":
            return self._send_json(200, {"headers": dict(self.headers.items()), "body": raw.decode()})
        try:
            req = json.loads(raw)
        except ValueError:
            return self._send_json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
        model = str(req.get("model", ""))
        with LOCK:
            STATE["received"].append((self.path, req))
            STATE["count"] += 1
            counter = STATE["count"]
        if model.startswith("slow-"):
            time.sleep(float(model[5:]))
        if model.startswith("status-"):
            code = int(model[7:])
            extra = {"Retry-After": "7"} if code == 429 else None
            return self._send_json(code, {"error": {"message": f"simulated {code}", "type": "upstream_test",
                                                    "param": None, "code": f"e{code}"}}, extra)
        asks = bool(req.get("logprobs")) or (self.path == "/v1/completions" and req.get("logprobs") is not None)
        if model == "no-logprobs" and asks:
            return self._send_json(400, {"error": {"message": "logprobs are not supported", "type": "invalid_request_error"}})
        if self.path == "/v1/responses":
            return self._responses(req)
        chat = self.path == "/v1/chat/completions"
        if not chat and self.path != "/v1/completions":
            return self._send_json(404, {"error": {"message": "unknown path " + self.path}})
        if chat:
            msgs = req.get("messages") or [{}]
            seed_text = json.dumps(msgs[-1], sort_keys=True) + str(len(msgs))
            if STATE["salt_from_messages"] and len(msgs) >= STATE["salt_from_messages"]:
                seed_text += "salt"
        else:
            seed_text = str(req.get("prompt"))
        count = int(req.get("max_tokens") or 8)
        toks = [(" " if i else "") + w for i, w in enumerate(words_for(seed_text, count))]
        top = 0
        if asks:
            top = int(req.get("top_logprobs") or 0) if chat else int(req.get("logprobs") or 0)
            top = max(top, 1)
        lps = token_logprobs(toks, top, counter) if asks else None
        cid = ("chatcmpl-" if chat else "cmpl-") + hashlib.sha1(f"{counter}".encode()).hexdigest()[:16]
        if req.get("stream"):
            return self._stream(req, chat, cid, toks, lps, model)
        if chat:
            msg = {"role": "assistant", "content": "".join(toks)}
            finish = "length"
            if model == "tools":
                msg = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}
                finish = "tool_calls"
            choice = {"index": 0, "message": msg, "logprobs": {"content": lps} if lps else None, "finish_reason": finish}
            obj = "chat.completion"
        else:
            lp = None
            if lps:
                lp = {"tokens": toks, "token_logprobs": [e["logprob"] for e in lps],
                      "top_logprobs": [{a["token"]: a["logprob"] for a in e["top_logprobs"]} for e in lps],
                      "text_offset": []}
            choice = {"index": 0, "text": "".join(toks), "logprobs": lp, "finish_reason": "length"}
            obj = "text_completion"
        self._send_json(200, {"id": cid, "object": obj, "created": 1700000000, "model": STATE["model"],
                              "system_fingerprint": STATE["fp"], "choices": [choice],
                              "usage": {"prompt_tokens": 5, "completion_tokens": len(toks), "total_tokens": 5 + len(toks)}})

    def _sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("x-request-id", "req_stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data):
        b = data.encode()
        self.wfile.write(f"{len(b):x}\r\n".encode() + b + b"\r\n")
        self.wfile.flush()

    def _stream(self, req, chat, cid, toks, lps, model):
        self._sse_start()
        base = {"id": cid, "object": "chat.completion.chunk" if chat else "text_completion", "created": 1700000000,
                "model": STATE["model"], "system_fingerprint": STATE["fp"]}
        if chat:
            self._chunk("data: " + json.dumps({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                                      "logprobs": None, "finish_reason": None}]}) + "\n\n")
        if chat and model == "tools":
            for frag in [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}},
                         {"index": 0, "function": {"arguments": "{\"city\": "}},
                         {"index": 0, "function": {"arguments": "\"Paris\"}"}}]:
                self._chunk("data: " + json.dumps({**base, "choices": [{"index": 0, "delta": {"tool_calls": [frag]},
                                                                          "logprobs": None, "finish_reason": None}]}) + "\n\n")
            finish = "tool_calls"
        else:
            for i, t in enumerate(toks):
                if model == "drop" and i == 2:
                    self.wfile.flush()
                    self.connection.shutdown(2)  # mid-stream, no terminating chunk
                    self.close_connection = True
                    return
                if model == "trickle":
                    time.sleep(0.05)
                if model == "stall" and i == 1:
                    time.sleep(8)
                if chat:
                    ch = {"index": 0, "delta": {"content": t},
                          "logprobs": {"content": [lps[i]]} if lps else None, "finish_reason": None}
                else:
                    lp = None
                    if lps:
                        lp = {"tokens": [t], "token_logprobs": [lps[i]["logprob"]],
                              "top_logprobs": [{a["token"]: a["logprob"] for a in lps[i]["top_logprobs"]}],
                              "text_offset": [0]}
                    ch = {"index": 0, "text": t, "logprobs": lp, "finish_reason": None}
                # Split each event across two writes: the proxy must not cut an event in two.
                ev = "data: " + json.dumps({**base, "choices": [ch]}) + "\n\n"
                self._chunk(ev[:17])
                self._chunk(ev[17:])
            finish = "length"
        last = {**base, "choices": [{"index": 0, "delta": {} if chat else None, "finish_reason": finish,
                                     **({} if chat else {"text": ""})}]}
        if not chat:
            del last["choices"][0]["delta"]
        self._chunk("data: " + json.dumps(last) + "\n\n")
        if (req.get("stream_options") or {}).get("include_usage"):
            self._chunk("data: " + json.dumps({**base, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": len(toks),
                                                                                "total_tokens": 5 + len(toks)}}) + "\n\n")
        self._chunk("data: [DONE]\n\n")
        self._chunk("")

    def _responses(self, req):
        text = " ".join(words_for(json.dumps(req.get("input"), sort_keys=True), int(req.get("max_output_tokens") or 6)))
        resp = {"id": "resp_1", "object": "response", "created_at": 1700000000, "model": STATE["model"],
                "status": "completed", "output": [{"type": "message", "role": "assistant",
                                                   "content": [{"type": "output_text", "text": text}]}],
                "usage": {"input_tokens": 5, "output_tokens": 6}}
        if not req.get("stream"):
            return self._send_json(200, resp)
        self._sse_start()
        self._chunk("event: response.created\ndata: " + json.dumps({"type": "response.created", "response": {**resp, "status": "in_progress", "output": []}}) + "\n\n")
        for w in text.split(" "):
            self._chunk("event: response.output_text.delta\ndata: " + json.dumps({"type": "response.output_text.delta", "delta": w}) + "\n\n")
        self._chunk("event: response.completed\ndata: " + json.dumps({"type": "response.completed", "response": resp}) + "\n\n")
        self._chunk("")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)  # a client that left early is no error here


def serve(port=0):
    srv = Server(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    return srv


if __name__ == "__main__":
    srv = serve(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print(f"listening on http://127.0.0.1:{srv.server_address[1]}", flush=True)
    srv.serve_forever()

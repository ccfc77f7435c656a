"""The wire check itself (wire_check.py), so that "validated" means something:
it refuses an answer that lacks a field the openai types require (Responses'
usage.input_tokens_details.cache_write_tokens, as before stet sent it), a
chunk of another shape, an event with a wrong type; its two documented
exemptions are exactly as narrow as written; and through the openai client
and raw HTTP it checks every shape a live server answers — each body, chunk
and Responses event of completions, chat and Responses, streamed or not."""
import copy
import unittest

import stet_server as S

S.require_openai()
import wire_check as W  # noqa: E402

STORIES = S.stories_path()


class Offline(unittest.TestCase):
    RESPONSE_USAGE = {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4,
                      "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}

    def response(self):
        return {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
                "model": "m", "output": [], "parallel_tool_calls": True, "tool_choice": "auto",
                "tools": [], "usage": copy.deepcopy(self.RESPONSE_USAGE)}

    def test_missing_required_fields_fail(self):
        W.check_object(self.response())
        r = self.response()
        del r["usage"]["input_tokens_details"]["cache_write_tokens"]
        with self.assertRaises(W.WireError) as cm:
            W.check_object(r)
        self.assertIn("cache_write_tokens", str(cm.exception))
        with self.assertRaises(W.WireError):
            W.check_object({"type": "response.output_text.delta", "delta": 5, "item_id": "m",
                            "output_index": 0, "content_index": 0, "sequence_number": 0,
                            "logprobs": []})
        with self.assertRaises(W.WireError):
            W.check_object({"object": "chat.completion.chunk", "id": "c", "created": 1,
                            "model": "m", "choices": [{"index": "0", "delta": {}}]})
        with self.assertRaises(W.WireError):
            W.check_object({"id": "x"})

    def test_exemptions_are_narrow(self):
        chunk = {"object": "text_completion", "id": "c", "created": 1, "model": "m",
                 "choices": [{"index": 0, "text": "a", "logprobs": None, "finish_reason": None}]}
        W.check_object(chunk)  # OpenAI streams null finish reasons
        bad = copy.deepcopy(chunk)
        bad["choices"][0]["finish_reason"] = "because"
        with self.assertRaises(W.WireError):
            W.check_object(bad)
        echoed = copy.deepcopy(chunk)
        echoed["choices"][0]["logprobs"] = {"tokens": ["a", "b"], "token_logprobs": [None, -1.0],
                                            "top_logprobs": [None, {"b": -1.0}],
                                            "text_offset": [0, 1]}
        W.check_object(echoed)  # the first echoed token has no logprob
        later = copy.deepcopy(echoed)
        later["choices"][0]["logprobs"]["token_logprobs"] = [-1.0, None]
        with self.assertRaises(W.WireError):
            W.check_object(later)


class Live(S.ClientTest):
    MODEL = STORIES

    def test_every_shape_is_checked(self):
        W.COUNTS.clear()
        ask = [{"role": "user", "content": "Hi"}]
        self.client.chat.completions.create(model=self.model, messages=ask, max_tokens=3)
        list(self.client.chat.completions.create(model=self.model, messages=ask, max_tokens=3,
                                                 stream=True))
        self.client.completions.create(model=self.model, prompt="Once", max_tokens=3, echo=True,
                                       logprobs=1)
        list(self.client.completions.create(model=self.model, prompt="Once", max_tokens=3,
                                            stream=True))
        self.client.responses.create(model=self.model, input="Hi", max_output_tokens=3)
        list(self.client.responses.create(model=self.model, input="Hi", max_output_tokens=3,
                                          stream=True))
        status, _ = self.srv.post("/v1/chat/completions",
                                  {"model": self.model, "messages": ask, "max_tokens": 2})
        self.assertEqual(status, 200)
        for kind in ("chat.completion", "chat.completion.chunk", "text_completion", "response",
                     "event response.created", "event response.output_text.delta",
                     "event response.incomplete"):
            self.assertGreater(W.COUNTS[kind], 0, (kind, W.COUNTS))
        self.assertGreaterEqual(W.COUNTS["chat.completion"], 2)  # the raw POST too


if __name__ == "__main__":
    unittest.main()

"""The tokenizer and template endpoints on stories260K (ChatML fallback
template): POST /tokenize and /detokenize in vLLM's shape and llama.cpp's,
GET /tokenizer_info, POST /apply-template. What they say is what generation
sees: /tokenize of a prompt equals the prompt_token_ids /v1/completions
reports, /tokenize of messages equals the chat endpoint's, /apply-template is
the exact ChatML text. They sit behind the same API key, body limit and
template budget as /v1/*."""
import unittest

import stet_server as S

S.require_openai()

STORIES = S.stories_path()
TEXT = "Once upon a time"
MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
CHATML = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"


class TokenizeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = S.StetServer(STORIES, "--threads", "2")
        cls.model = cls.srv.client().models.list().data[0]

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def ok(self, path, body):
        status, out = self.srv.post(path, body)
        self.assertEqual(status, 200, out)
        return out

    def error(self, path, body, status=400):
        got, out = self.srv.post(path, body)
        self.assertEqual(got, status, out)
        return out["error"]

    def completion_prompt_ids(self, prompt):
        r = self.ok("/v1/completions", {"model": self.model.id, "prompt": prompt, "max_tokens": 1,
                                        "temperature": 0, "return_token_ids": True})
        return r["choices"][0]["prompt_token_ids"]

    def test_vllm_prompt_is_what_completions_feeds_the_engine(self):
        r = self.ok("/tokenize", {"model": self.model.id, "prompt": TEXT})
        self.assertEqual(r["tokens"], self.completion_prompt_ids(TEXT))
        self.assertEqual(r["count"], len(r["tokens"]))
        self.assertEqual(r["max_model_len"], self.model.model_extra["max_model_len"])
        self.assertIsNone(r["token_strs"])
        self.assertEqual(r["tokens"][0], 1)  # BOS: the vocabulary asks for it
        bare = self.ok("/tokenize", {"prompt": TEXT, "add_special_tokens": False})
        self.assertEqual(bare["tokens"], r["tokens"][1:])
        strs = self.ok("/tokenize", {"prompt": TEXT, "return_token_strs": True})["token_strs"]
        self.assertEqual(strs[0], "<s>")
        self.assertEqual(len(strs), r["count"])
        self.assertTrue(all(isinstance(s, str) for s in strs))
        # Special-token text is parsed, as in completion prompts.
        sp = self.ok("/tokenize", {"prompt": "</s>", "add_special_tokens": False})
        self.assertEqual(sp["tokens"], [2])

    def test_llama_cpp_shape_with_pieces(self):
        plain = self.ok("/tokenize", {"content": TEXT})
        self.assertEqual(list(plain), ["tokens"])
        self.assertEqual(plain["tokens"], self.completion_prompt_ids(TEXT)[1:])  # add_special: false
        self.assertEqual(self.ok("/tokenize", {"content": TEXT, "add_special": True})["tokens"][0], 1)
        pieces = self.ok("/tokenize", {"content": TEXT, "with_pieces": True})["tokens"]
        self.assertEqual([p["id"] for p in pieces], plain["tokens"])
        self.assertEqual("".join(p["piece"] for p in pieces).lstrip(" "), TEXT)
        # A 512-token vocabulary spells "🦄" with byte tokens: no piece is UTF-8, so each is its bytes.
        euro = self.ok("/tokenize", {"content": "🦄", "with_pieces": True})["tokens"]
        raw = b""
        for p in euro:
            if isinstance(p["piece"], list):
                raw += bytes(p["piece"])
            else:
                raw += p["piece"].encode()
        self.assertTrue(any(isinstance(p["piece"], list) for p in euro), euro)
        self.assertEqual(raw.lstrip(b" "), "🦄".encode())
        # parse_special: false keeps special-token text as text.
        lit = self.ok("/tokenize", {"content": "</s>", "parse_special": False})["tokens"]
        self.assertNotIn(2, lit)
        self.assertEqual(self.ok("/tokenize", {"content": "</s>"})["tokens"], [2])

    def test_detokenize_round_trips(self):
        ids = self.ok("/tokenize", {"content": TEXT})["tokens"]
        r = self.ok("/detokenize", {"tokens": ids})
        self.assertEqual(r["prompt"], TEXT)
        self.assertEqual(r["content"], TEXT)
        with_bos = self.ok("/detokenize", {"model": self.model.id, "tokens": [1] + ids})["prompt"]
        self.assertTrue(with_bos.startswith("<s>"), with_bos)  # special tokens are written out
        self.assertEqual(self.ok("/detokenize", {"tokens": []})["prompt"], "")
        for bad in ([1, 512], [-1], [1.5], ["a"], [2**40]):
            self.assertEqual(self.error("/detokenize", {"tokens": bad})["param"], "tokens", bad)
        self.assertEqual(self.error("/detokenize", {"tokens": 5})["param"], "tokens")
        self.assertEqual(self.error("/detokenize", {})["param"], "tokens")

    def test_messages_are_what_chat_feeds_the_engine(self):
        chat = self.ok("/v1/chat/completions", {"model": self.model.id, "messages": MSGS, "max_tokens": 1,
                                                "return_token_ids": True})
        r = self.ok("/tokenize", {"model": self.model.id, "messages": MSGS})
        self.assertEqual(r["tokens"], chat["prompt_token_ids"])
        self.assertEqual(r["count"], chat["usage"]["prompt_tokens"])
        open_ = self.ok("/tokenize", {"messages": MSGS, "add_generation_prompt": False})
        self.assertLess(open_["count"], r["count"])

    def test_apply_template_is_the_exact_prompt_text(self):
        r = self.ok("/apply-template", {"messages": MSGS})
        self.assertEqual(list(r), ["prompt"])
        self.assertEqual(r["prompt"], CHATML + "<|im_start|>assistant\n")
        self.assertEqual(self.ok("/apply-template", {"messages": MSGS, "add_generation_prompt": False})["prompt"],
                         CHATML)
        # continue_final_message leaves the last message open (vLLM's prefill): no end of turn,
        # and no generation prompt unless asked for (which is refused).
        prefill = MSGS + [{"role": "assistant", "content": "Once upon"}]
        self.assertEqual(self.ok("/apply-template", {"messages": prefill, "continue_final_message": True})["prompt"],
                         CHATML + "<|im_start|>assistant\nOnce upon")
        self.assertEqual(self.ok("/tokenize", {"messages": prefill, "continue_final_message": True,
                                               "add_generation_prompt": False})["tokens"],
                         self.ok("/tokenize", {"prompt": CHATML + "<|im_start|>assistant\nOnce upon"})["tokens"])
        # Its text, tokenized as chat tokenizes it, is the chat prompt.
        ids = self.ok("/tokenize", {"prompt": r["prompt"]})["tokens"]
        self.assertEqual(ids, self.ok("/tokenize", {"messages": MSGS})["tokens"])
        # Content parts and the developer role are normalized as in chat.
        parts = [{"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
                 {"role": "user", "content": "hi"}]
        self.assertEqual(self.ok("/apply-template", {"messages": parts})["prompt"], r["prompt"])

    def test_tokenizer_info(self):
        status, _, data = self.srv.http("GET", "/tokenizer_info")
        self.assertEqual(status, 200)
        import json
        info = json.loads(data)
        self.assertEqual(info["vocab_size"], 512)
        self.assertEqual(info["tokenizer_model"], "llama")
        self.assertEqual(info["bos_token"], "<s>")
        self.assertEqual(info["eos_token"], "</s>")
        self.assertEqual(info["bos_token_id"], 1)
        self.assertEqual(info["eos_token_id"], 2)
        self.assertIn(2, info["eog_token_ids"])
        self.assertTrue(info["add_bos_token"])
        self.assertEqual(info["max_model_len"], self.model.model_extra["max_model_len"])
        self.assertTrue(info["chat_template_fallback"])
        self.assertEqual(info["chat_template_builtin"], "chatml")  # stories260K: no family recognised
        self.assertIn("<|im_start|>", info["chat_template"])
        self.assertEqual(len(info["chat_template_sha256"]), 64)

    def test_bad_requests(self):
        self.assertEqual(self.error("/tokenize", {"model": "gpt-4o", "prompt": "x"}, 404)["code"], "model_not_found")
        self.assertEqual(self.error("/tokenize", {})["param"], "prompt")
        self.assertEqual(self.error("/tokenize", {"prompt": "a", "content": "b"})["param"], "prompt")
        self.assertEqual(self.error("/tokenize", {"prompt": 5})["param"], "prompt")
        self.assertEqual(self.error("/tokenize", {"content": ["x"]})["param"], "content")
        self.assertEqual(self.error("/tokenize", {"prompt": "x", "add_special_tokens": "yes"})["param"],
                         "add_special_tokens")
        self.assertEqual(self.error("/tokenize", {"messages": []})["param"], "messages")
        self.assertEqual(self.error("/apply-template", {"messages": [{"role": "bot", "content": "x"}]})["param"],
                         "messages[0].role")
        self.assertEqual(self.error("/apply-template", {"messages": MSGS, "continue_final_message": True,
                                                        "add_generation_prompt": True})["param"],
                         "continue_final_message")
        empty_last = MSGS + [{"role": "assistant", "content": ""}]
        self.assertEqual(self.error("/apply-template", {"messages": empty_last, "continue_final_message": True})
                         ["param"], "continue_final_message")
        self.assertEqual(self.error("/apply-template", {"messages": MSGS, "chat_template_kwargs": [1]})["param"],
                         "chat_template_kwargs")
        reserved = self.error("/tokenize", {"messages": MSGS, "chat_template_kwargs": {"messages": []}})
        self.assertEqual(reserved["param"], "chat_template_kwargs")
        self.assertIn("'messages'", reserved["message"])
        self.assertEqual(self.error("/apply-template", {"messages": MSGS, "metadata": {"stet_clock": "now"}})["param"],
                         "metadata.stet_clock")
        status, hdrs, _ = self.srv.http("GET", "/tokenize")
        self.assertEqual(status, 405)
        self.assertEqual(hdrs["allow"], "POST")
        status, hdrs, _ = self.srv.http("POST", "/tokenizer_info", {})
        self.assertEqual(status, 405)
        status, _, _ = self.srv.http("POST", "/tokenize", "not json")
        self.assertEqual(status, 400)
        status, _, _ = self.srv.http("POST", "/tokenize", '{"prompt": "x"}', {"Content-Type": "text/plain"})
        self.assertEqual(status, 415)
        self.assertTrue(self.srv.healthy())


class TokenizeGateTest(unittest.TestCase):
    """Key, body limit and template budget, as on /v1/*."""

    def test_key_body_limit_and_template_budget(self):
        with S.StetServer(STORIES, "--api-key", "sekrit", "--max-body-bytes", "200000",
                          "--template-max-output", "65536") as srv:
            key = {"Authorization": "Bearer sekrit"}
            for method, path, body in (("POST", "/tokenize", {"prompt": "x"}),
                                       ("POST", "/detokenize", {"tokens": [1]}),
                                       ("POST", "/apply-template", {"messages": MSGS}),
                                       ("GET", "/tokenizer_info", None)):
                status, hdrs, _ = srv.http(method, path, body)
                self.assertEqual(status, 401, path)
                self.assertEqual(hdrs.get("www-authenticate"), "Bearer")
                status, _, _ = srv.http(method, path, body, key)
                self.assertEqual(status, 200, path)
            status, _, _ = srv.http("POST", "/tokenize", {"prompt": "x" * 300000}, key)
            self.assertEqual(status, 413)
            big = [{"role": "user", "content": "y" * 100000}]
            for path in ("/apply-template", "/tokenize"):
                status, _, data = srv.http("POST", path, {"messages": big}, key)
                self.assertEqual(status, 400, data)
                import json
                err = json.loads(data)["error"]
                self.assertEqual(err["code"], "template_limit_exceeded")
                self.assertEqual(err["param"], "messages")
            self.assertTrue(srv.healthy())


if __name__ == "__main__":
    unittest.main()

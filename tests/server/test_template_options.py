"""Chat template controls on a live server with the openai client, on
stories260K serving Qwen 3's real chat template (--chat-template-file):
`chat_template_kwargs` per request (enable_thinking: false writes the empty
think block Qwen 3's template writes) and as the server's default
(--chat-template-kwargs, which a request overrides key by key);
`add_generation_prompt` and `continue_final_message` on chat as vLLM has them
(a prefill: the last assistant message left open, and both flags at once
refused); /v1/chat/completions, /v1/responses, /tokenize and /apply-template
render the same prompt for the same options; bad options are 400s naming the
field, a bad --chat-template-kwargs stops the server at startup."""
import os
import subprocess
import unittest

import stet_server as S

S.require_openai()
import openai  # noqa: E402

STORIES = S.stories_path()
QWEN3 = os.path.join(os.path.dirname(os.path.dirname(STORIES)), "..", "chat-templates", "Qwen-Qwen3-0.6B.jinja")
MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
HEAD = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
NO_THINK = "<think>\n\n</think>\n\n"


class TemplateOptionsTest(S.ClientTest):
    MODEL = STORIES
    SERVE_ARGS = ("--threads", "2", "--chat-template-file", QWEN3)

    @classmethod
    def setUpClass(cls):
        S.require(os.path.exists(QWEN3), QWEN3)
        super().setUpClass()

    def prompt(self, **body):
        status, r = self.srv.post("/apply-template", {"messages": MSGS, **body})
        self.assertEqual(status, 200, r)
        return r["prompt"]

    def chat_prompt_ids(self, messages=MSGS, **extra):
        r = self.client.chat.completions.create(model=self.model, messages=messages, max_tokens=2, temperature=0,
                                                extra_body={"return_token_ids": True, **extra})
        return r.model_extra["prompt_token_ids"]

    def tokens(self, text):
        status, r = self.srv.post("/tokenize", {"prompt": text})
        self.assertEqual(status, 200, r)
        return r["tokens"]

    def test_enable_thinking_per_request(self):
        self.assertEqual(self.prompt(), HEAD)
        off = self.prompt(chat_template_kwargs={"enable_thinking": False})
        self.assertEqual(off, HEAD + NO_THINK)
        # What chat and the Responses API feed the engine is that text, tokenized.
        self.assertEqual(self.chat_prompt_ids(chat_template_kwargs={"enable_thinking": False}), self.tokens(off))
        self.assertEqual(self.chat_prompt_ids(), self.tokens(HEAD))
        r = self.client.responses.create(model=self.model, instructions="Be brief.", input="hi", max_output_tokens=2,
                                         temperature=0, extra_body={"return_token_ids": True,
                                                                    "chat_template_kwargs": {"enable_thinking": False}})
        self.assertEqual(r.model_extra["prompt_token_ids"], self.tokens(off))

    def test_continue_final_message(self):
        prefill = MSGS + [{"role": "assistant", "content": "Once upon"}]
        text = self.prompt(messages=prefill, continue_final_message=True)
        self.assertTrue(text.startswith(HEAD), text)
        self.assertTrue(text.endswith("Once upon"), text)  # no <|im_end|> after it
        self.assertEqual(self.chat_prompt_ids(prefill, continue_final_message=True), self.tokens(text))
        self.assertEqual(self.chat_prompt_ids(prefill, continue_final_message=True, add_generation_prompt=False),
                         self.tokens(text))
        with self.assertRaises(openai.BadRequestError) as e:
            self.chat_prompt_ids(prefill, continue_final_message=True, add_generation_prompt=True)
        self.assertEqual(e.exception.body["param"], "continue_final_message")
        # add_generation_prompt false without a prefill: the conversation as it stands.
        self.assertEqual(self.chat_prompt_ids(add_generation_prompt=False),
                         self.tokens(HEAD[: -len("<|im_start|>assistant\n")]))

    def test_bad_options_are_400s(self):
        for extra, param in [({"chat_template_kwargs": "enable_thinking"}, "chat_template_kwargs"),
                             ({"chat_template_kwargs": {"tools": []}}, "chat_template_kwargs"),
                             ({"add_generation_prompt": "no"}, "add_generation_prompt"),
                             ({"continue_final_message": 1}, "continue_final_message")]:
            with self.assertRaises(openai.BadRequestError) as e:
                self.chat_prompt_ids(**extra)
            self.assertEqual(e.exception.body["param"], param, extra)


class ServerDefaultKwargsTest(unittest.TestCase):
    def test_default_and_override(self):
        S.require(os.path.exists(QWEN3), QWEN3)
        with S.StetServer(STORIES, "--threads", "1", "--chat-template-file", QWEN3,
                          "--chat-template-kwargs", '{"enable_thinking": false}') as srv:
            status, r = srv.post("/apply-template", {"messages": MSGS})
            self.assertEqual(r["prompt"], HEAD + NO_THINK)
            status, r = srv.post("/apply-template", {"messages": MSGS, "chat_template_kwargs": {"enable_thinking": True}})
            self.assertEqual(r["prompt"], HEAD)

    def test_bad_default_stops_the_server(self):
        for value, code in [("[1]", 2), ("{not json", 2), ('{"messages": []}', 2)]:
            p = subprocess.run([S.stet_binary(), "serve", "-m", STORIES, "--port", "0", "--chat-template-kwargs", value],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, code, (value, p.stderr))
            self.assertIn("chat-template-kwargs", p.stderr)


if __name__ == "__main__":
    unittest.main()

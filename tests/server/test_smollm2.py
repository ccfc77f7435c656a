"""Chat on a real instruct model (SmolLM2-135M-Instruct, Q4_1) with the chat
template from its GGUF: the prompt the server builds is the one Python's
Jinja2 renders from the same template (as transformers would) tokenized with
special tokens — checked by sending that text to /v1/completions and getting
the same prompt length and the same answer — generation stops at <|im_end|>
without leaking it, streaming equals non-streaming, and chat logprobs carry
the exact bytes of byte-level BPE tokens; /apply-template gives that same
text and /tokenize the chat prompt's ids."""
import json
import struct
import unittest

import stet_server as S

S.require_openai()

SMOL = S.smollm2_path()


def gguf_string_metadata(path, wanted):
    """The string values of `wanted` keys of a GGUF v2/v3 file's metadata."""
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    out = {}
    with open(path, "rb") as f:
        magic, version = struct.unpack("<4sI", f.read(8))
        assert magic == b"GGUF" and version in (2, 3), (magic, version)
        _, n_kv = struct.unpack("<QQ", f.read(16))

        def read_str():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n)

        def skip(t):
            if t == 8:
                read_str()
            elif t == 9:
                et, n = struct.unpack("<IQ", f.read(12))
                if et == 8:
                    for _ in range(n):
                        read_str()
                else:
                    f.seek(sizes[et] * n, 1)
            else:
                f.seek(sizes[t], 1)

        for _ in range(n_kv):
            key = read_str().decode()
            (t,) = struct.unpack("<I", f.read(4))
            if t == 8 and key in wanted:
                out[key] = read_str().decode()
            else:
                skip(t)
    return out


def render_with_jinja2(template, messages):
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(messages=messages, add_generation_prompt=True, tools=None,
                                            documents=None, bos_token="<|im_start|>", eos_token="<|im_end|>")


class SmolLM2ChatTest(S.ClientTest):
    MODEL = SMOL
    SERVE_ARGS = ("--ctx", "2048", "--threads", "2")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.template = gguf_string_metadata(SMOL, {"tokenizer.chat_template"})["tokenizer.chat_template"]

    def test_chat_uses_the_models_template(self):
        self.assertFalse(any("ChatML fallback" in l for l in self.srv.lines()))
        msgs = [{"role": "system", "content": "You are a concise assistant."},
                {"role": "user", "content": "What is the capital of France?"}]
        chat = self.client.chat.completions.create(model=self.model, messages=msgs, max_tokens=40, temperature=0)
        text = render_with_jinja2(self.template, msgs)
        self.assertIn("<|im_start|>assistant\n", text)
        comp = self.client.completions.create(model=self.model, prompt=text, max_tokens=40, temperature=0,
                                              stop=["<|im_end|>"])
        self.assertEqual(chat.usage.prompt_tokens, comp.usage.prompt_tokens)
        self.assertEqual(chat.choices[0].message.content, comp.choices[0].text)
        self.assertIn("Paris", chat.choices[0].message.content)
        self.assertEqual(chat.choices[0].finish_reason, "stop")
        self.assertNotIn("<|im_end|>", chat.choices[0].message.content)

    def test_stream_logprobs_and_seed(self):
        msgs = [{"role": "user", "content": "Write one sentence about the sea."}]
        full = self.client.chat.completions.create(model=self.model, messages=msgs, max_tokens=24,
                                                   temperature=0.8, seed=77, logprobs=True, top_logprobs=3)
        again = self.client.chat.completions.create(model=self.model, messages=msgs, max_tokens=24,
                                                    temperature=0.8, seed=77, logprobs=True, top_logprobs=3)
        self.assertEqual(full.choices[0].message.content, again.choices[0].message.content)
        self.assertEqual([e.logprob for e in full.choices[0].logprobs.content],
                         [e.logprob for e in again.choices[0].logprobs.content])
        content = full.choices[0].logprobs.content
        self.assertEqual(bytes(b for e in content for b in e.bytes).decode(), full.choices[0].message.content)
        streamed = ""
        for chunk in self.client.chat.completions.create(model=self.model, messages=msgs, max_tokens=24,
                                                         temperature=0.8, seed=77, stream=True):
            for c in chunk.choices:
                streamed += c.delta.content or ""
        self.assertEqual(streamed, full.choices[0].message.content)

    def test_apply_template_and_tokenize_match_jinja2(self):
        msgs = [{"role": "user", "content": "Hi!"},
                {"role": "assistant", "content": "Hello! How can I help?"},
                {"role": "user", "content": "Say yes."}]
        status, r = self.srv.post("/apply-template", {"messages": msgs})
        self.assertEqual(status, 200, r)
        self.assertEqual(r["prompt"], render_with_jinja2(self.template, msgs))
        status, t = self.srv.post("/tokenize", {"model": self.model, "messages": msgs})
        self.assertEqual(status, 200, t)
        chat = self.client.chat.completions.create(model=self.model, messages=msgs, max_tokens=1, temperature=0,
                                                   extra_body={"return_token_ids": True})
        self.assertEqual(t["tokens"], chat.model_extra["prompt_token_ids"])
        # The byte-level BPE pieces are the prompt's exact bytes.
        status, p = self.srv.post("/tokenize", {"content": r["prompt"], "with_pieces": True})
        self.assertEqual(status, 200, p)
        self.assertEqual("".join(x["piece"] for x in p["tokens"]), r["prompt"])
        status, d = self.srv.post("/detokenize", {"tokens": t["tokens"]})
        self.assertEqual(d["prompt"], r["prompt"])

    def test_multi_turn(self):
        msgs = [{"role": "user", "content": "Hi!"},
                {"role": "assistant", "content": "Hello! How can I help?"},
                {"role": "user", "content": "Say yes."}]
        r = self.client.chat.completions.create(model=self.model, messages=msgs, max_tokens=10, temperature=0)
        self.assertTrue(r.choices[0].message.content)
        text = render_with_jinja2(self.template, msgs)
        comp = self.client.completions.create(model=self.model, prompt=text, max_tokens=1, temperature=0)
        self.assertEqual(r.usage.prompt_tokens, comp.usage.prompt_tokens)


if __name__ == "__main__":
    unittest.main()

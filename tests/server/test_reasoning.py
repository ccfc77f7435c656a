"""Reasoning blocks on a real model (SmolLM2-135M-Instruct, Q4_1) rendered
with Qwen 3's chat template (its <think> tags make --reasoning-format auto
split): an assistant prefill that opens <think> (continue_final_message)
makes the answer start inside the block deterministically, so it comes back
as reasoning_content, streamed as reasoning_content deltas that fold into it;
the same request under --reasoning-format none answers the same bytes as
content; Qwen 3's enable_thinking: false closes the block in the prompt, so
the answer is content. A template without the tags is never split."""
import os
import unittest

import stet_server as S

S.require_openai()

SMOL = S.smollm2_path()
QWEN3 = os.path.join(os.path.dirname(os.path.dirname(S.stories_path())), "..", "chat-templates",
                     "Qwen-Qwen3-0.6B.jinja")
S.require(os.path.exists(QWEN3), "Qwen 3's chat template in the shared directory")
PREFILL = [{"role": "user", "content": "What is 2+2?"},
           {"role": "assistant", "content": "<think>\nThe user asks"}]
CONTINUE = {"continue_final_message": True, "add_generation_prompt": False}


class ReasoningTest(S.ClientTest):
    MODEL = SMOL
    SERVE_ARGS = ("--threads", "2", "--chat-template-file", QWEN3)

    def ask(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("messages", PREFILL)
        kw.setdefault("max_tokens", 24)
        kw.setdefault("temperature", 0)
        kw.setdefault("extra_body", CONTINUE)
        return self.client.chat.completions.create(**kw)

    def test_prefilled_block_is_reasoning_content(self):
        m = self.ask().choices[0].message
        reasoning = m.model_extra.get("reasoning_content")
        self.assertTrue(reasoning, m)
        self.assertNotIn("<think>", reasoning)
        self.assertEqual(m.content, "")  # the block never closed: all of it is reasoning
        chunks = list(self.ask(stream=True))
        parts = [c.choices[0].delta.model_extra.get("reasoning_content") for c in chunks if c.choices]
        parts = [p for p in parts if p]
        self.assertGreater(len(parts), 3)  # streamed as it came
        self.assertEqual("".join(parts), reasoning)
        self.assertEqual("".join(c.choices[0].delta.content or "" for c in chunks if c.choices), "")
        # enable_thinking false: Qwen 3's template closes an empty block in the prompt.
        plain = self.ask(messages=PREFILL[:1], extra_body={"chat_template_kwargs": {"enable_thinking": False}})
        self.assertTrue(plain.choices[0].message.content)
        self.assertNotIn("reasoning_content", plain.choices[0].message.model_extra)


class ReasoningNoneTest(ReasoningTest):
    SERVE_ARGS = ("--threads", "2", "--chat-template-file", QWEN3, "--reasoning-format", "none")

    def test_prefilled_block_is_reasoning_content(self):
        # The same request as above answers the same text, inline.
        m = self.ask().choices[0].message
        self.assertNotIn("reasoning_content", m.model_extra)
        with S.StetServer(SMOL, "--threads", "2", "--chat-template-file", QWEN3) as split:
            other = split.client().chat.completions.create(
                model=self.model, messages=PREFILL, max_tokens=24, temperature=0, extra_body=CONTINUE)
        self.assertEqual(m.content, other.choices[0].message.model_extra["reasoning_content"])


class NoTagsTest(S.ClientTest):
    MODEL = SMOL  # its own template has no <think>: auto leaves answers whole

    def test_unsplit(self):
        r = self.client.chat.completions.create(model=self.model, messages=PREFILL, max_tokens=12,
                                                temperature=0, extra_body=CONTINUE)
        self.assertNotIn("reasoning_content", r.choices[0].message.model_extra)
        self.assertTrue(r.choices[0].message.content)


if __name__ == "__main__":
    unittest.main()

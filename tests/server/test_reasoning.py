"""Reasoning blocks on a real model (SmolLM2-135M-Instruct, Q4_1) rendered
with Qwen 3's chat template (its <think> tags make --reasoning-format auto
split): an assistant prefill that opens <think> (continue_final_message)
makes the answer start inside the block deterministically, so it comes back
as reasoning_content, streamed as reasoning_content deltas that fold into it;
the same request under --reasoning-format none answers the same bytes as
content; Qwen 3's enable_thinking: false closes the block in the prompt, so
the answer is content. A template without the tags is never split. Usage
counts the reasoning tokens (chat completion_tokens_details, Responses
output_tokens_details). Responses reasoning input items (as the openai SDK
sends an earlier output back) become the next assistant turn's
reasoning_content: rendered where the template has a thinking block, dropped
where it has none."""
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


class Ask:
    def ask(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("messages", PREFILL)
        kw.setdefault("max_tokens", 24)
        kw.setdefault("temperature", 0)
        kw.setdefault("extra_body", CONTINUE)
        return self.client.chat.completions.create(**kw)


class ReasoningTest(Ask, S.ClientTest):
    MODEL = SMOL
    SERVE_ARGS = ("--threads", "2", "--chat-template-file", QWEN3)

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


    def test_usage_counts_reasoning_tokens(self):
        # The block never closes within max_tokens: every token is reasoning,
        # counted over the choices, streamed or not; the openai types read it.
        r = self.ask(n=2, temperature=0.8, seed=4)
        self.assertTrue(all(c.message.model_extra.get("reasoning_content") for c in r.choices))
        self.assertEqual(r.usage.completion_tokens_details.reasoning_tokens, r.usage.completion_tokens)
        last = list(self.ask(n=2, temperature=0.8, seed=4, stream=True,
                             stream_options={"include_usage": True}))[-1]
        self.assertEqual(last.usage, r.usage)
        # Without a block nothing is reasoning, and usage is as it always was.
        plain = self.ask(messages=PREFILL[:1], extra_body={"chat_template_kwargs": {"enable_thinking": False}})
        self.assertIsNone(plain.usage.completion_tokens_details)
        resp = self.client.responses.create(model=self.model, input=PREFILL, max_output_tokens=24,
                                            temperature=0, extra_body=CONTINUE)
        self.assertEqual(resp.usage.output_tokens_details.reasoning_tokens, resp.usage.output_tokens)

    def test_responses_reasoning_items_go_back_as_input(self):
        # The SDK's follow-up turn: the earlier output (a reasoning item, a
        # message) back in the input, then a new question. Accepted; Qwen 3's
        # template leaves out the reasoning of turns before the last question.
        first = self.client.responses.create(model=self.model, input=PREFILL, max_output_tokens=24,
                                             temperature=0, extra_body=CONTINUE)
        self.assertEqual(first.output[0].type, "reasoning")
        follow = [PREFILL[0], *first.output, {"role": "user", "content": "And 3+3?"}]
        again = self.client.responses.create(model=self.model, input=follow, max_output_tokens=8, temperature=0)
        without = [PREFILL[0], *first.output[1:], {"role": "user", "content": "And 3+3?"}]
        plain = self.client.responses.create(model=self.model, input=without, max_output_tokens=8, temperature=0)
        self.assertEqual(again.usage.input_tokens, plain.usage.input_tokens)
        self.assertEqual(again.output_text, plain.output_text)
        # In the turn being continued the template renders it as the thinking
        # block: the same prompt as the chat request whose content holds it.
        thought = first.output[0].content[0].text
        tail = [PREFILL[0], first.output[0], {"role": "assistant", "content": "The answer is"}]
        r = self.client.responses.create(model=self.model, input=tail, max_output_tokens=8,
                                         temperature=0, extra_body=CONTINUE)
        chat = self.ask(max_tokens=8, messages=[PREFILL[0], {
            "role": "assistant", "content": "<think>\n" + thought.strip("\n") + "\n</think>\n\nThe answer is"}])
        self.assertEqual(r.usage.input_tokens, chat.usage.prompt_tokens)
        self.assertEqual(r.output_text, chat.choices[0].message.content)
        bare = self.client.responses.create(model=self.model, input=[PREFILL[0], tail[2]],
                                            max_output_tokens=8, temperature=0, extra_body=CONTINUE)
        self.assertGreater(r.usage.input_tokens, bare.usage.input_tokens)


class ReasoningNoneTest(Ask, S.ClientTest):
    MODEL = SMOL
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

    def test_reasoning_input_items_are_dropped(self):
        # A template without a thinking block has nowhere to put a reasoning
        # item: the prompt is the one without it.
        ask = [{"role": "user", "content": "What is 2+2?"}]
        item = {"type": "reasoning", "id": "rs_1", "summary": [],
                "content": [{"type": "reasoning_text", "text": "Two and two make four."}]}
        answer = {"role": "assistant", "content": "4."}
        follow = {"role": "user", "content": "And 3+3?"}
        a = self.client.responses.create(model=self.model, input=[*ask, item, answer, follow],
                                         max_output_tokens=8, temperature=0)
        b = self.client.responses.create(model=self.model, input=[*ask, answer, follow],
                                         max_output_tokens=8, temperature=0)
        self.assertEqual((a.usage.input_tokens, a.output_text), (b.usage.input_tokens, b.output_text))

    def test_unsplit(self):
        r = self.client.chat.completions.create(model=self.model, messages=PREFILL, max_tokens=12,
                                                temperature=0, extra_body=CONTINUE)
        self.assertNotIn("reasoning_content", r.choices[0].message.model_extra)
        self.assertTrue(r.choices[0].message.content)


if __name__ == "__main__":
    unittest.main()

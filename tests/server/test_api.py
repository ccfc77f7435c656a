"""The OpenAI API as the official `openai` client sees it, on stories260K:
completions and chat (ChatML fallback), streaming equal to non-streaming,
logprobs in both shapes, seeds, n and multiple prompts, stop, echo and
max_tokens 0 scoring (equal to the generating logprobs), token-id prompts,
penalties and logit_bias, the prefix cache, /v1/models, /metrics (strict
format check, and promtool when present) and the request log; and a server
with speculative decoding (--spec lookup, or --draft-model) answering byte for
byte what it answers with the per-request 'speculative' extension off."""
import json
import math
import subprocess
import sys
import unittest

import stet_server as S

S.require_openai()
import openai  # noqa: E402

STORIES = S.stories_path()
PROMPT = "Once upon a time"


def choices_json(raw_text):
    """The choices of a raw response body, as canonical JSON (ids and times vary)."""
    return json.dumps(json.loads(raw_text)["choices"], sort_keys=True)


class ApiTest(S.ClientTest):
    MODEL = STORIES

    def complete(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("prompt", PROMPT)
        return self.client.completions.create(**kw)

    def raw_complete(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("prompt", PROMPT)
        return self.client.completions.with_raw_response.create(**kw).http_response.text

    def chat(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("messages", [{"role": "user", "content": "Tell me a story."}])
        return self.client.chat.completions.create(**kw)

    # --- models -------------------------------------------------------------

    def test_models_and_aliases(self):
        models = self.client.models.list().data
        self.assertEqual(len(models), 1)
        self.assertEqual(models[0].owned_by, "stet")
        self.assertEqual(self.client.models.retrieve(self.model).id, self.model)
        for alias in (self.model, "stories260K", "stories260K.gguf"):
            r = self.complete(model=alias, max_tokens=2, temperature=0)
            self.assertEqual(r.model, self.model)
        with self.assertRaises(openai.NotFoundError) as cm:
            self.complete(model="gpt-4o", max_tokens=2)
        self.assertEqual(cm.exception.code, "model_not_found")
        with self.assertRaises(openai.NotFoundError):
            self.client.models.retrieve("gpt-4o")

    # --- completions ----------------------------------------------------------

    def test_completion_shape(self):
        r = self.complete(max_tokens=12, temperature=0)
        self.assertEqual(r.object, "text_completion")
        self.assertTrue(r.id.startswith("cmpl-"))
        self.assertTrue(r.system_fingerprint.startswith("fp_"))
        d = r.model_dump()
        self.assertIsInstance(d["seed"], int)
        self.assertEqual(len(r.choices), 1)
        c = r.choices[0]
        self.assertEqual(c.index, 0)
        self.assertTrue(c.text)
        self.assertIn(c.finish_reason, ("length", "stop"))
        self.assertEqual(r.usage.prompt_tokens, 5)  # BOS + 4 pieces
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)
        self.assertEqual(r.usage.completion_tokens, 12)
        self.assertIsNotNone(r.usage.prompt_tokens_details)

    def test_greedy_is_repeatable(self):
        a = self.raw_complete(max_tokens=30, temperature=0, logprobs=2)
        b = self.raw_complete(max_tokens=30, temperature=0, logprobs=2)
        self.assertEqual(choices_json(a), choices_json(b))

    def test_token_id_prompts(self):
        for prompt in ([1, 2, 3], [[1, 2, 3], [1, 5]]):
            status, body = self.srv.post("/v1/completions", {
                "model": self.model, "prompt": prompt, "max_tokens": 4, "temperature": 0})
            self.assertEqual(status, 200, body)
            self.assertEqual(len(body["choices"]), len(prompt) if isinstance(prompt[0], list) else 1)
        # Token ids and text give the same answer: [1] is BOS, so [1] alone == "" (BOS only).
        by_ids = self.srv.post("/v1/completions", {"model": self.model, "prompt": [1], "max_tokens": 12,
                                                   "temperature": 0})[1]
        by_text = self.srv.post("/v1/completions", {"model": self.model, "prompt": "", "max_tokens": 12,
                                                    "temperature": 0})[1]
        self.assertEqual(by_ids["choices"][0]["text"], by_text["choices"][0]["text"])
        status, body = self.srv.post("/v1/completions", {"model": self.model, "prompt": [1, 99999]})
        self.assertEqual(status, 400)
        self.assertEqual(body["error"]["param"], "prompt")

    def test_stream_equals_non_stream_completions(self):
        for kw in ({"temperature": 0}, {"temperature": 0.9, "seed": 7, "n": 3},
                   {"temperature": 0.9, "seed": 11, "logprobs": 2, "echo": True}):
            full = self.complete(max_tokens=40, **kw)
            texts = {}
            lps = {}
            usage = None
            fingerprints = set()
            seeds = set()
            finish = {}
            stream = self.complete(max_tokens=40, stream=True, stream_options={"include_usage": True}, **kw)
            for chunk in stream:
                fingerprints.add(chunk.system_fingerprint)
                seeds.add(chunk.model_dump()["seed"])
                if chunk.usage is not None:
                    usage = chunk.usage
                for c in chunk.choices:
                    texts[c.index] = texts.get(c.index, "") + c.text
                    if c.logprobs is not None:
                        lps.setdefault(c.index, []).extend(c.logprobs.token_logprobs)
                    if c.finish_reason:
                        finish[c.index] = c.finish_reason
            self.assertEqual(fingerprints, {full.system_fingerprint})
            self.assertEqual(len(seeds), 1)
            for c in full.choices:
                self.assertEqual(texts[c.index], c.text, kw)
                self.assertEqual(finish[c.index], c.finish_reason)
                if c.logprobs is not None:
                    self.assertEqual(lps[c.index], c.logprobs.token_logprobs)
            self.assertIsNotNone(usage)
            self.assertEqual(usage.completion_tokens, full.usage.completion_tokens)
            self.assertEqual(usage.prompt_tokens, full.usage.prompt_tokens)

    def test_logprobs_completions(self):
        r = self.complete(max_tokens=25, temperature=0, logprobs=3)
        lp = r.choices[0].logprobs
        n = len(lp.tokens)
        self.assertEqual(n, r.usage.completion_tokens)
        self.assertEqual(len(lp.token_logprobs), n)
        self.assertEqual(len(lp.top_logprobs), n)
        self.assertEqual(len(lp.text_offset), n)
        for tok, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
            self.assertLessEqual(logprob, 0.0)
            self.assertLessEqual(len(top), 3)
            self.assertGreaterEqual(len(top), 1)
            # Greedy: the chosen token is the most likely one.
            self.assertAlmostEqual(max(top.values()), logprob, places=6)
            self.assertIn(tok, top)
        self.assertEqual("".join(lp.tokens), r.choices[0].text)
        offsets = [sum(len(t.encode()) for t in lp.tokens[:i]) for i in range(n)]
        self.assertEqual(lp.text_offset, offsets)

    def test_logprobs_chat(self):
        r = self.chat(max_tokens=15, temperature=0, logprobs=True, top_logprobs=4)
        content = r.choices[0].logprobs.content
        self.assertEqual(len(content), r.usage.completion_tokens)
        text = b""
        for e in content:
            self.assertLessEqual(e.logprob, 0.0)
            self.assertEqual(len(e.top_logprobs), 4)
            self.assertEqual(e.top_logprobs[0].logprob, e.logprob)  # greedy takes the best
            text += bytes(e.bytes)
        self.assertEqual(text.decode("utf-8", "replace"), r.choices[0].message.content)
        plain = self.chat(max_tokens=15, temperature=0)
        self.assertIsNone(plain.choices[0].logprobs)
        self.assertEqual(plain.choices[0].message.content, r.choices[0].message.content)

    def test_seed(self):
        a = self.raw_complete(max_tokens=40, temperature=1.0, seed=1234, logprobs=1)
        b = self.raw_complete(max_tokens=40, temperature=1.0, seed=1234, logprobs=1)
        self.assertEqual(choices_json(a), choices_json(b))
        self.assertEqual(json.loads(a)["seed"], 1234)
        outs = {choices_json(self.raw_complete(max_tokens=40, temperature=1.0, seed=s)) for s in range(5)}
        self.assertGreater(len(outs), 1)  # the seed matters
        # Without a seed the server picks one and reports it; sending it back reproduces the answer.
        c = json.loads(self.raw_complete(max_tokens=40, temperature=1.0))
        again = self.raw_complete(max_tokens=40, temperature=1.0, seed=c["seed"])
        self.assertEqual(json.dumps(c["choices"], sort_keys=True), choices_json(again))
        # Chat too.
        x = self.client.chat.completions.with_raw_response.create(
            model=self.model, messages=[{"role": "user", "content": "hi"}], max_tokens=20, seed=5).http_response.text
        y = self.client.chat.completions.with_raw_response.create(
            model=self.model, messages=[{"role": "user", "content": "hi"}], max_tokens=20, seed=5).http_response.text
        self.assertEqual(choices_json(x), choices_json(y))

    def test_n_and_multiple_prompts(self):
        r = self.complete(max_tokens=20, temperature=1.0, seed=3, n=3)
        self.assertEqual([c.index for c in r.choices], [0, 1, 2])
        self.assertGreater(len({c.text for c in r.choices}), 1)
        prompts = ["Once upon a time", "The cat"]
        m = self.complete(prompt=prompts, max_tokens=15, temperature=1.0, seed=9, n=2)
        self.assertEqual([c.index for c in m.choices], [0, 1, 2, 3])
        for p, prompt in enumerate(prompts):
            alone = self.complete(prompt=prompt, max_tokens=15, temperature=1.0, seed=9, n=2)
            for c in range(2):
                self.assertEqual(m.choices[p * 2 + c].text, alone.choices[c].text)
        ch = self.chat(max_tokens=10, n=2, seed=4, temperature=1.0)
        self.assertEqual([c.index for c in ch.choices], [0, 1])

    def test_stop(self):
        full = self.complete(max_tokens=40, temperature=0).choices[0].text
        stop = full[12:16]
        cut = full[: full.index(stop)]
        r = self.complete(max_tokens=40, temperature=0, stop=[stop, "zzzz"])
        self.assertEqual(r.choices[0].text, cut)
        self.assertEqual(r.choices[0].finish_reason, "stop")
        streamed = "".join(c.choices[0].text for c in self.complete(max_tokens=40, temperature=0, stop=stop,
                                                                  stream=True) if c.choices)
        self.assertEqual(streamed, cut)
        with self.assertRaises(openai.BadRequestError):
            self.complete(max_tokens=4, stop=["a", "b", "c", "d", "e"])

    def test_echo_and_scoring_parity(self):
        gen = self.complete(max_tokens=20, temperature=0, logprobs=1)
        text = gen.choices[0].text
        gen_lp = gen.choices[0].logprobs
        scored = self.complete(prompt=PROMPT + text, echo=True, max_tokens=0, logprobs=1)
        c = scored.choices[0]
        self.assertEqual(c.text, PROMPT + text)
        self.assertEqual(scored.usage.completion_tokens, 0)
        lp = c.logprobs
        self.assertIsNone(lp.token_logprobs[0])  # the first token has no context
        self.assertTrue(all(isinstance(x, float) for x in lp.token_logprobs[1:]))
        # Teacher-forced scoring gives the generating logprobs, bit for bit (where the
        # text re-tokenizes to the generated tokens).
        k = len(gen_lp.tokens)
        if lp.tokens[-k:] == gen_lp.tokens:
            self.assertEqual(lp.token_logprobs[-k:], gen_lp.token_logprobs)
        else:
            self.fail(f"re-tokenization differs: {lp.tokens[-k:]} vs {gen_lp.tokens}")
        # echo without logprobs prepends the prompt to the generated text.
        e = self.complete(max_tokens=5, temperature=0, echo=True)
        self.assertTrue(e.choices[0].text.startswith(PROMPT))
        self.assertIsNone(e.choices[0].logprobs)

    def test_penalties_bias_and_extensions(self):
        status, body = self.srv.post("/v1/completions", {
            "model": self.model, "prompt": PROMPT, "max_tokens": 1, "temperature": 0,
            "logit_bias": {str(i): -100 for i in range(3, 512)}})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["choices"][0]["text"], "")  # only ids 0..2 (<unk>, BOS, EOS) remain
        for extra in ({"top_k": 5}, {"min_p": 0.1}, {"repetition_penalty": 1.3}, {"ignore_eos": True}):
            r = self.complete(max_tokens=8, temperature=0.7, seed=1, extra_body=extra)
            self.assertTrue(r.choices[0].text)
        pen = self.complete(max_tokens=60, temperature=0, presence_penalty=2.0, frequency_penalty=2.0)
        nopen = self.complete(max_tokens=60, temperature=0)
        self.assertNotEqual(pen.choices[0].text, nopen.choices[0].text)

    def test_max_tokens_beyond_context_is_clamped(self):
        r = self.complete(max_tokens=100000, temperature=0, extra_body={"ignore_eos": True})
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertEqual(r.usage.prompt_tokens + r.usage.completion_tokens, 2048)

    def test_prefix_cache_reports_cached_tokens_and_changes_nothing(self):
        long_prompt = "Once upon a time there was a little girl named Lily. She loved to play outside in the park."
        a = self.complete(prompt=long_prompt, max_tokens=10, temperature=0, logprobs=1)
        b = self.complete(prompt=long_prompt, max_tokens=10, temperature=0, logprobs=1)
        self.assertGreater(b.usage.prompt_tokens_details.cached_tokens, 0)
        self.assertEqual(a.choices[0].text, b.choices[0].text)
        self.assertEqual(a.choices[0].logprobs.token_logprobs, b.choices[0].logprobs.token_logprobs)

    # --- chat -------------------------------------------------------------------

    def test_chat_shape_and_stream(self):
        msgs = [{"role": "system", "content": "You tell stories."},
                {"role": "user", "content": [{"type": "text", "text": "A story"}, {"type": "text", "text": "please"}]}]
        r = self.chat(messages=msgs, max_tokens=25, temperature=0.5, seed=2)
        self.assertEqual(r.object, "chat.completion")
        self.assertTrue(r.id.startswith("chatcmpl-"))
        self.assertEqual(r.choices[0].message.role, "assistant")
        self.assertTrue(r.system_fingerprint.startswith("fp_"))
        self.assertEqual(r.model_dump()["seed"], 2)
        text, role, finish, usage = "", None, None, None
        for chunk in self.chat(messages=msgs, max_tokens=25, temperature=0.5, seed=2, stream=True,
                               stream_options={"include_usage": True}):
            self.assertEqual(chunk.object, "chat.completion.chunk")
            if chunk.usage:
                usage = chunk.usage
            for c in chunk.choices:
                role = role or c.delta.role
                text += c.delta.content or ""
                finish = c.finish_reason or finish
        self.assertEqual(role, "assistant")
        self.assertEqual(text, r.choices[0].message.content)
        self.assertEqual(finish, r.choices[0].finish_reason)
        self.assertEqual(usage.completion_tokens, r.usage.completion_tokens)
        # The ChatML fallback never leaks its end marker into the answer.
        self.assertNotIn("<|im_end|>", text)

    # --- operations -------------------------------------------------------------

    def test_metrics_exposition(self):
        self.complete(max_tokens=5, temperature=0)
        list(self.complete(max_tokens=5, temperature=0, stream=True))
        text = self.srv.metrics_text()
        S.check_exposition(text)  # raises on any format error
        tool = S.promtool()
        if tool:
            p = subprocess.run([tool, "check", "metrics"], input=text.encode(), capture_output=True)
            self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        else:
            print("promtool not installed: strict in-test checker only", file=sys.stderr)
        m = S.parse_exposition(text)
        ok = m[("stet_http_requests_total", frozenset({"endpoint": "/v1/completions", "status": "200"}.items()))]
        self.assertGreaterEqual(ok, 2)
        self.assertGreater(m[("stet_kv_blocks_capacity", frozenset())], 0)
        self.assertEqual(m[("stet_ready", frozenset())], 1)
        self.assertGreater(m[("stet_time_to_first_token_seconds_count", frozenset())], 0)
        self.assertGreater(m[("stet_inter_token_latency_seconds_count", frozenset())], 0)
        self.assertGreater(m[("stet_generation_tokens_total", frozenset())], 0)
        for name in ("stet_queue_depth", "stet_running_sequences", "stet_kv_blocks_used", "stet_prefix_cache_hit_rate"):
            self.assertIn((name, frozenset()), m)

    def test_metrics_checker_rejects_bad_expositions(self):
        good = "# HELP a_total x\n# TYPE a_total counter\na_total 1\n"
        S.check_exposition(good)
        for bad in ("a_total 1\n",                                                  # no TYPE
                    "# HELP a x\n# TYPE a counter\na 1\n",                          # counter without _total
                    good + "a_total 2\n",                                           # duplicate series
                    "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
                    "# HELP g x\n# TYPE g gauge\ng{a=\"1\"\"} 1\n",
                    "# HELP g x\n# TYPE g gauge\ng 1",                            # no final newline
                    "# HELP g x\n# TYPE g gauge\ng one\n",
                    "# HELP g_total x\n# TYPE g_total gauge\ng_total 1\n"):                # gauge named *_total
            with self.assertRaises(ValueError, msg=bad):
                S.check_exposition(bad)

    def test_request_log_lines(self):
        r = self.complete(max_tokens=3, temperature=0)
        # The line is written once the response is out: wait for it.
        self.srv.wait_for(lambda: any(l.get("id") == r.id for l in self.srv.request_logs()), 10)
        logs = [l for l in self.srv.request_logs() if l.get("id") == r.id]
        self.assertEqual(len(logs), 1, self.srv.lines()[-5:])
        log = logs[0]
        self.assertEqual(log["endpoint"], "/v1/completions")
        self.assertEqual(log["status"], 200)
        self.assertEqual(log["prompt_tokens"], 5)
        self.assertEqual(log["completion_tokens"], 3)
        self.assertGreaterEqual(log["ttft_ms"], 0)
        self.assertGreaterEqual(log["total_ms"], log["ttft_ms"])
        self.assertIn("ts", log)

    def test_context_length_exceeded(self):
        with self.assertRaises(openai.BadRequestError) as cm:
            self.complete(prompt="word " * 3000, max_tokens=5)
        self.assertEqual(cm.exception.code, "context_length_exceeded")
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat(messages=[{"role": "user", "content": "word " * 3000}])
        self.assertEqual(cm.exception.code, "context_length_exceeded")
        self.assertTrue(self.srv.healthy())



class SpeculativeApiTest(S.ClientTest):
    """`stet serve --spec lookup`: the same bytes, logprobs and fingerprint with
    speculation on (the server's default here) and off ('speculative': false)."""

    MODEL = STORIES
    SERVE_ARGS = ("--threads", "2", "--spec", "lookup", "--spec-k", "6")
    PROMPT = ("Once upon a time, there was a little girl named Lily. She liked to play with her ball "
              "in the park. Once upon a time, there was a little girl named Lily. She liked")

    def body(self, **kw):
        b = {"model": self.model, "prompt": self.PROMPT, "max_tokens": 60, "logprobs": 5, "seed": 11}
        b.update(kw)
        return b

    def test_same_bytes_on_and_off(self):
        for sampling in ({"temperature": 0}, {"temperature": 0.9, "n": 2}, {"temperature": 0, "stop": ["park"]}):
            st_on, on = self.srv.post("/v1/completions", self.body(**sampling))
            st_off, off = self.srv.post("/v1/completions", self.body(speculative=False, **sampling))
            self.assertEqual((st_on, st_off), (200, 200), (on, off))
            self.assertEqual(json.dumps(on["choices"], sort_keys=True),
                             json.dumps(off["choices"], sort_keys=True), sampling)
            self.assertEqual(on["system_fingerprint"], off["system_fingerprint"])
        fp = subprocess.run([S.stet_binary(), "fingerprint", "-m", STORIES], capture_output=True, text=True)
        self.assertEqual(fp.stdout.strip(), on["system_fingerprint"])  # not changed by --spec
        m = self.srv.metrics()
        drafted = m[("stet_spec_draft_tokens_total", frozenset())]
        accepted = m[("stet_spec_accepted_tokens_total", frozenset())]
        self.assertGreater(drafted, 0)
        self.assertGreater(accepted, 0)
        self.assertAlmostEqual(m[("stet_spec_acceptance_rate", frozenset())], accepted / drafted)

    def test_speculative_must_be_a_boolean(self):
        status, err = self.srv.post("/v1/completions", self.body(speculative="yes"))
        self.assertEqual(status, 400)
        self.assertEqual(err["error"]["param"], "speculative")


class DraftModelApiTest(SpeculativeApiTest):
    """`stet serve --draft-model F` (the model drafting for itself): the same bytes,
    logprobs and fingerprint as with speculation off."""

    SERVE_ARGS = ("--threads", "2", "--draft-model", STORIES, "--spec-k", "5")


if __name__ == "__main__":
    unittest.main()

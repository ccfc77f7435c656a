"""Batch invariance through HTTP: 32 mixed requests (completions and chat,
streamed and not, greedy and seeded sampling, n > 1, logprobs, stop, echo,
penalties) sent at once give, each, the same text and the same logprobs, bit
for bit, as the same request sent alone. The server runs with few sequence
slots and a small step budget, so the concurrent run queues, chunks prefills
and batches differently from the lone runs (which also warm the prefix cache)."""
import json
import threading
import unittest
from concurrent.futures import ThreadPoolExecutor

import stet_server as S

S.require_openai()

STORIES = S.stories_path()
PROMPTS = [
    "Once upon a time",
    "The little dog",
    "Lily and Ben went to the park. They saw a big tree with red apples. Ben wanted to climb",
    "One day, a girl named Sue",
    "Tom had a ball.",
    "The sun was hot and the bird",
    "Mom said",
    "There was a big, scary monster under the bed. Every night it made noises and the boy",
]


def specs():
    out = []
    for i in range(32):
        prompt = PROMPTS[i % len(PROMPTS)]
        kind = ["completion", "chat"][i % 2]
        spec = {"kind": kind, "stream": (i // 2) % 2 == 1, "max_tokens": 24 + (i * 7) % 40}
        if i % 3 == 0:
            spec["temperature"] = 0
        else:
            spec["temperature"] = 0.8
            spec["seed"] = 1000 + i
        if i % 4 == 1:
            spec["n"] = 2
        if kind == "completion":
            spec["prompt"] = prompt
            if i % 5 == 0:
                spec["logprobs"] = 3
            if i % 8 == 4:
                spec["echo"] = True
                spec["logprobs"] = 2
        else:
            spec["messages"] = [{"role": "user", "content": prompt}]
            if i % 5 != 2:
                spec["logprobs"] = True
                spec["top_logprobs"] = 2
        if i % 7 == 3:
            spec["stop"] = ["."]
        if i % 6 == 5:
            spec["presence_penalty"] = 0.5
            spec["frequency_penalty"] = 0.3
        out.append(spec)
    return out


def run(client, spec):
    """The request's choices as comparable data: text, finish reason and every logprob."""
    kw = {k: v for k, v in spec.items() if k not in ("kind",)}
    kw["model"] = "stories260K"
    stream = kw.pop("stream")
    if stream:
        kw["stream"] = True
    api = client.completions if spec["kind"] == "completion" else client.chat.completions
    if not stream:
        raw = api.with_raw_response.create(**kw).http_response.text
        choices = json.loads(raw)["choices"]
        out = {}
        for c in choices:
            if spec["kind"] == "completion":
                out[c["index"]] = {"text": c["text"], "finish": c["finish_reason"],
                                   "lp": c["logprobs"] and [c["logprobs"]["tokens"], c["logprobs"]["token_logprobs"],
                                                            c["logprobs"]["top_logprobs"]]}
            else:
                lp = c["logprobs"] and [[e["token"], e["logprob"], e["bytes"],
                                         [[t["token"], t["logprob"]] for t in e["top_logprobs"]]]
                                        for e in c["logprobs"]["content"]]
                out[c["index"]] = {"text": c["message"]["content"], "finish": c["finish_reason"], "lp": lp}
        return json.dumps(out, sort_keys=True)
    out = {}
    for chunk in api.create(**kw):
        for c in chunk.choices:
            d = out.setdefault(c.index, {"text": "", "finish": None, "lp": None})
            if spec["kind"] == "completion":
                d["text"] += c.text
                if c.logprobs is not None:
                    lp = d["lp"] or [[], [], []]
                    lp[0] += c.logprobs.tokens
                    lp[1] += c.logprobs.token_logprobs
                    lp[2] += c.logprobs.top_logprobs
                    d["lp"] = lp
            else:
                d["text"] += c.delta.content or ""
                if c.logprobs is not None and c.logprobs.content:
                    d["lp"] = (d["lp"] or []) + [[e.token, e.logprob, e.bytes,
                                                  [[t.token, t.logprob] for t in e.top_logprobs]]
                                                 for e in c.logprobs.content]
            d["finish"] = c.finish_reason or d["finish"]
    return json.dumps(out, sort_keys=True)


class ConcurrencyTest(unittest.TestCase):
    def test_32_concurrent_requests_equal_each_alone(self):
        with S.StetServer(STORIES, "--max-seqs", "12", "--batch-tokens", "96", "--chunk", "32",
                          "--threads", "2") as srv:
            client = srv.client()
            all_specs = specs()
            m0 = srv.metrics()
            alone = [run(client, s) for s in all_specs]
            m1 = srv.metrics()
            # Streamed and non-streamed forms of one request agree too (same spec, flipped).
            for s, a in zip(all_specs[:4], alone[:4]):
                flipped = dict(s, stream=not s["stream"])
                self.assertEqual(run(client, flipped), a, s)
            barrier = threading.Barrier(len(all_specs))

            def together(spec):
                barrier.wait()
                return run(client, spec)

            before = srv.metrics()
            with ThreadPoolExecutor(max_workers=len(all_specs)) as pool:
                concurrent = list(pool.map(together, all_specs))
            after = srv.metrics()
            for i, (spec, a, c) in enumerate(zip(all_specs, alone, concurrent)):
                self.assertEqual(c, a, f"request {i} {spec} differs under concurrency")
            # The concurrent run really overlapped: many sequences ran together and others
            # waited (the engine's own high-water marks, taken every step: a scrape now and
            # then could miss a queue that fills and drains within milliseconds).
            peak = {k: after[(f"stet_{k}_max", frozenset())]
                    for k in ("running_sequences", "queue_depth")}
            self.assertGreater(peak["running_sequences"], 4, peak)
            self.assertGreater(peak["queue_depth"], 0, peak)
            # ... and batching: clearly more tokens per engine step than the same requests
            # sent one at a time, whose steps each serve one request (its n choices). A
            # ratio, not a step count: how much the 32 overlap depends on how fast the
            # client threads send against how fast the tiny model decodes.
            def per_step(a, b):
                steps = a[("stet_engine_steps_total", frozenset())] - b[("stet_engine_steps_total", frozenset())]
                toks = (a[("stet_engine_generated_tokens_total", frozenset())]
                        - b[("stet_engine_generated_tokens_total", frozenset())])
                return toks / steps

            alone_rate, together_rate = per_step(m1, m0), per_step(after, before)
            print(f"tokens per step: together {together_rate:.2f}, alone {alone_rate:.2f}")
            self.assertGreater(together_rate, 1.2 * alone_rate, (together_rate, alone_rate))
            self.assertEqual(srv.stop(), 0)


if __name__ == "__main__":
    unittest.main()

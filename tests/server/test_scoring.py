"""Tokens in, tokens out, and scoring, on stories260K: vLLM's prompt_logprobs
on /v1/completions (teacher-forced scores equal, bit for bit, the logprobs and
alternatives the sampler saw while generating the same tokens: rule R7),
return_token_ids on streamed chunks (they concatenate to the non-streamed
ids), and chat requests that send prompt_token_ids instead of messages."""
import json
import unittest

import stet_server as S

S.require_openai()
import openai  # noqa: E402

STORIES = S.stories_path()
PROMPT = "Once upon a time there was a little dog"


class ScoringTest(S.ClientTest):
    MODEL = STORIES

    def post(self, path, body, status=200):
        got, out = self.srv.post(path, dict(body, model=self.model))
        self.assertEqual(got, status, out)
        return out

    def stream(self, path, body):
        """The JSON chunks of a streamed answer (raw SSE, so no client reshapes them)."""
        status, _, data = self.srv.http("POST", path, dict(body, model=self.model, stream=True))
        self.assertEqual(status, 200, data)
        chunks = []
        for event in data.decode().split("\n\n"):
            if event.startswith("data: ") and event != "data: [DONE]":
                chunks.append(json.loads(event[len("data: "):]))
        self.assertTrue(data.decode().endswith("data: [DONE]\n\n"))
        return chunks

    # --- prompt_logprobs -----------------------------------------------------------

    def test_prompt_logprobs_equal_the_generating_logprobs_bitwise(self):
        prompt = self.post("/tokenize", {"prompt": PROMPT})["tokens"]
        for sampling in ({"temperature": 0}, {"temperature": 1.0, "seed": 21}):
            gen = self.post("/v1/completions", dict(sampling, prompt=prompt, max_tokens=24, logprobs=5,
                                                    return_token_ids=True))
            g = gen["choices"][0]
            ids, lp = g["token_ids"], g["logprobs"]
            self.assertEqual(len(ids), len(lp["token_logprobs"]))
            self.assertGreater(len(ids), 5)
            scored = self.post("/v1/completions", {"prompt": prompt + ids, "max_tokens": 0,
                                                   "prompt_logprobs": 5})
            c = scored["choices"][0]
            plp = c["prompt_logprobs"]
            self.assertEqual(len(plp), len(prompt) + len(ids))
            self.assertIsNone(plp[0])
            self.assertEqual(c["text"], "")
            self.assertIsNone(c["logprobs"])
            for i, tok in enumerate(ids):
                entry = plp[len(prompt) + i]
                # The chosen token's logprob: the same float, bit for bit (JSON of the same float).
                self.assertEqual(entry[str(tok)]["logprob"], lp["token_logprobs"][i], (sampling, i))
                # Its five alternatives: the same logprobs, best first.
                alts = sorted((e for e in entry.values() if e["rank"] is not None and e["rank"] <= 5),
                              key=lambda e: e["rank"])
                self.assertEqual([e["rank"] for e in alts], [1, 2, 3, 4, 5])
                gen_top = sorted(lp["top_logprobs"][i].values())  # keyed by text: equal texts merge
                alt_lps = sorted(e["logprob"] for e in alts)
                if len(gen_top) == 5:
                    self.assertEqual(alt_lps, gen_top, (sampling, i))
                else:
                    self.assertTrue(set(gen_top) <= set(alt_lps), (sampling, i))
                self.assertEqual(alts[0]["logprob"], gen_top[-1])
                if sampling["temperature"] == 0:
                    self.assertEqual(entry[str(tok)]["rank"], 1)  # greedy took the best
                for e in entry.values():
                    self.assertIsInstance(e["decoded_token"], str)
            # The legacy echo path scores the same.
            echo = self.post("/v1/completions", {"prompt": prompt + ids, "max_tokens": 0, "echo": True,
                                                 "logprobs": 1})
            self.assertEqual(echo["choices"][0]["logprobs"]["token_logprobs"][len(prompt):],
                             lp["token_logprobs"])

    def test_prompt_logprobs_shapes(self):
        r = self.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 6, "temperature": 0,
                                          "prompt_logprobs": 0, "logprobs": 2})
        c = r["choices"][0]
        n_prompt = r["usage"]["prompt_tokens"]
        self.assertEqual(len(c["prompt_logprobs"]), n_prompt)
        for entry in c["prompt_logprobs"][1:]:
            self.assertEqual(len(entry), 1)  # k = 0: the prompt token alone
            (e,) = entry.values()
            self.assertLessEqual(e["logprob"], 0.0)
        # Generation's logprobs list only the generated tokens, as without prompt_logprobs.
        self.assertEqual(len(c["logprobs"]["tokens"]), r["usage"]["completion_tokens"])
        plain = self.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 6, "temperature": 0, "logprobs": 2})
        self.assertEqual(c["logprobs"], plain["choices"][0]["logprobs"])
        self.assertEqual(c["text"], plain["choices"][0]["text"])
        # With echo the prompt leads the legacy logprobs too.
        e = self.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 2, "temperature": 0, "echo": True,
                                          "logprobs": 1, "prompt_logprobs": 3})["choices"][0]
        self.assertEqual(len(e["logprobs"]["tokens"]), n_prompt + 2)
        self.assertEqual(len(e["prompt_logprobs"]), n_prompt)
        for bad in (21, -1, "3", 1.5):
            err = self.post("/v1/completions", {"prompt": PROMPT, "prompt_logprobs": bad}, 400)["error"]
            self.assertEqual(err["param"], "prompt_logprobs", bad)

    def test_prompt_logprobs_streamed(self):
        body = {"prompt": PROMPT, "max_tokens": 5, "temperature": 0, "prompt_logprobs": 2, "n": 2}
        full = self.post("/v1/completions", body)
        got = {}
        for ch in self.stream("/v1/completions", body):
            for c in ch["choices"]:
                if "prompt_logprobs" in c:
                    self.assertNotIn(c["index"], got)
                    got[c["index"]] = c["prompt_logprobs"]
        for c in full["choices"]:
            self.assertEqual(got[c["index"]], c["prompt_logprobs"])

    # --- return_token_ids, streamed -------------------------------------------------

    def test_streamed_token_ids_concatenate_to_the_full_ones(self):
        for body in ({"prompt": PROMPT, "max_tokens": 30, "temperature": 0.9, "seed": 4, "n": 2},
                     {"prompt": [PROMPT, "The cat"], "max_tokens": 20, "temperature": 0},
                     {"prompt": PROMPT, "max_tokens": 30, "temperature": 0, "stop": ["the"]}):
            body = dict(body, return_token_ids=True)
            full = self.post("/v1/completions", body)
            ids, prompts, text = {}, {}, {}
            for ch in self.stream("/v1/completions", body):
                for c in ch["choices"]:
                    i = c["index"]
                    self.assertIn("token_ids", c)
                    ids.setdefault(i, []).extend(c["token_ids"])
                    text[i] = text.get(i, "") + c["text"]
                    if "prompt_token_ids" in c:
                        self.assertNotIn(i, prompts)  # once, in the choice's first chunk
                        prompts[i] = c["prompt_token_ids"]
            for c in full["choices"]:
                self.assertEqual(ids[c["index"]], c["token_ids"], body)
                self.assertEqual(prompts[c["index"]], c["prompt_token_ids"])
                self.assertEqual(text[c["index"]], c["text"])

    def test_streamed_chat_token_ids(self):
        body = {"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 25,
                "temperature": 0.7, "seed": 8, "return_token_ids": True, "n": 2}
        full = self.post("/v1/chat/completions", body)
        ids, prompt = {}, None
        for ch in self.stream("/v1/chat/completions", body):
            if "prompt_token_ids" in ch:
                prompt = ch["prompt_token_ids"]
            for c in ch["choices"]:
                ids.setdefault(c["index"], []).extend(c["token_ids"])
        self.assertEqual(prompt, full["prompt_token_ids"])
        for c in full["choices"]:
            self.assertEqual(ids[c["index"]], c["token_ids"])
        # Without the flag, chunks carry no ids.
        for ch in self.stream("/v1/chat/completions", dict(body, return_token_ids=False)):
            self.assertNotIn("prompt_token_ids", ch)
            for c in ch["choices"]:
                self.assertNotIn("token_ids", c)

    # --- chat with prompt_token_ids -----------------------------------------------

    def test_chat_takes_prompt_token_ids(self):
        msgs = [{"role": "user", "content": "Tell me a story."}]
        by_msgs = self.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 20, "temperature": 0.8,
                                                     "seed": 6, "logprobs": True, "return_token_ids": True})
        p = by_msgs["prompt_token_ids"]
        by_ids = self.post("/v1/chat/completions", {"prompt_token_ids": p, "max_tokens": 20, "temperature": 0.8,
                                                    "seed": 6, "logprobs": True, "return_token_ids": True})
        self.assertEqual(by_ids["choices"], by_msgs["choices"])
        self.assertEqual(by_ids["prompt_token_ids"], p)
        for k in ("prompt_tokens", "completion_tokens"):  # cached_tokens: the prefix cache's
            self.assertEqual(by_ids["usage"][k], by_msgs["usage"][k])
        # The openai client insists on messages: an empty list goes with the ids.
        r = self.client.chat.completions.create(model=self.model, messages=[], max_tokens=20, temperature=0.8,
                                                seed=6, extra_body={"prompt_token_ids": p})
        self.assertEqual(r.choices[0].message.content, by_msgs["choices"][0]["message"]["content"])
        streamed = "".join(c.choices[0].delta.content or "" for c in self.client.chat.completions.create(
            model=self.model, messages=[], max_tokens=20, temperature=0.8, seed=6, stream=True,
            extra_body={"prompt_token_ids": p}) if c.choices)
        self.assertEqual(streamed, r.choices[0].message.content)
        for bad, param in (({"messages": msgs, "prompt_token_ids": p}, "prompt_token_ids"),
                           ({"prompt_token_ids": []}, "prompt_token_ids"),
                           ({"prompt_token_ids": "1 2"}, "prompt_token_ids"),
                           ({"prompt_token_ids": [1, 99999]}, "prompt_token_ids"),
                           ({"prompt_token_ids": [1, "a"]}, "prompt_token_ids"),
                           ({"prompt_token_ids": None}, "messages")):
            err = self.post("/v1/chat/completions", dict(bad, max_tokens=2), 400)["error"]
            self.assertEqual(err["param"], param, bad)
        with self.assertRaises(openai.BadRequestError):
            self.client.chat.completions.create(model=self.model, messages=[], max_tokens=2)


if __name__ == "__main__":
    unittest.main()

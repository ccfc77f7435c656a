"""The contract from Python: a prompt in a batch gets exactly what it gets
alone (text, token ids, every logprob bit); seeded sampling does not depend on
the order or the company of prompts; the logprobs of a prompt + completion
scored as a prompt equal the completion's own (scoring = generation); greedy
output equals `stet run`'s (the command the package installed)."""
import random

from conftest import f32, run_cli, smollm2_path, stories_path

from stet import SamplingParams

STORY_PROMPTS = ["Once upon a time", "The little dog", "Lily wanted to", "One day, a big",
                 "Tom and Sue went to the park", "The sun", "She saw a bird. The bird",
                 "A boy named Max had a red ball and", "There was a cat", "Mom said",
                 "The tree was very tall and", "Ben"]


def logprob_bits(out):
    """Every reported logprob of a CompletionOutput as (position, id, float32 bits)."""
    return [(i, t, f32(lp.logprob), lp.rank) for i, d in enumerate(out.logprobs or [])
            for t, lp in d.items()]


def assert_same(a, b):
    assert a.prompt_token_ids == b.prompt_token_ids
    assert len(a.outputs) == len(b.outputs)
    for x, y in zip(a.outputs, b.outputs):
        assert x.token_ids == y.token_ids
        assert x.text == y.text
        assert x.finish_reason == y.finish_reason and x.stop_reason == y.stop_reason
        assert logprob_bits(x) == logprob_bits(y)
        if x.cumulative_logprob is not None:
            assert x.cumulative_logprob == y.cumulative_logprob


def test_batch_equals_alone_greedy_and_seeded(stories):
    greedy = SamplingParams(temperature=0, max_tokens=40, logprobs=3)
    seeded = SamplingParams(temperature=0.9, top_p=0.95, seed=1234, max_tokens=40, logprobs=2)
    for sp in (greedy, seeded):
        together = stories.generate(STORY_PROMPTS, sp, use_tqdm=False)
        assert len(together) == len(STORY_PROMPTS)
        for prompt, got in zip(STORY_PROMPTS, together):
            alone = stories.generate(prompt, sp, use_tqdm=False)[0]
            assert got.prompt == prompt
            assert_same(got, alone)
    # Not all equal: the prompts do lead to different continuations.
    assert len({o.outputs[0].text for o in together}) > 1


def test_batch_equals_alone_on_smollm2(smollm2):
    prompts = ["The capital of France is", "def fibonacci(n):", "Write a haiku about the sea.",
               "1, 2, 3, 4,"]
    sp = SamplingParams(temperature=0, max_tokens=24, logprobs=5)
    together = smollm2.generate(prompts, sp, use_tqdm=False)
    for prompt, got in zip(prompts, together):
        assert_same(got, smollm2.generate(prompt, sp, use_tqdm=False)[0])


def test_seeded_sampling_ignores_order_and_company(stories):
    params = [SamplingParams(temperature=1.0, top_k=40, seed=100 + i, max_tokens=30, logprobs=1)
              for i in range(len(STORY_PROMPTS))]
    base = stories.generate(STORY_PROMPTS, params, use_tqdm=False)
    order = list(range(len(STORY_PROMPTS)))
    random.Random(7).shuffle(order)
    shuffled = stories.generate([STORY_PROMPTS[i] for i in order], [params[i] for i in order],
                                use_tqdm=False)
    for j, i in enumerate(order):
        assert_same(base[i], shuffled[j])
    # Different company: each prompt among unrelated greedy and n=3 requests.
    company = ["Zz", "A long time ago there was a small house", "Sam"]
    mixed = stories.generate(
        company + STORY_PROMPTS[:4],
        [SamplingParams(temperature=0, max_tokens=50), SamplingParams(n=3, seed=9, max_tokens=20),
         SamplingParams(temperature=0.5, max_tokens=5)] + params[:4], use_tqdm=False)
    for i in range(4):
        assert_same(base[i], mixed[3 + i])
    # The seed, not luck: another seed gives another sample somewhere.
    other = stories.generate(STORY_PROMPTS, [SamplingParams(temperature=1.0, top_k=40,
                                                            seed=900 + i, max_tokens=30)
                                             for i in range(len(STORY_PROMPTS))], use_tqdm=False)
    assert [o.outputs[0].token_ids for o in other] != [o.outputs[0].token_ids for o in base]


def test_unseeded_output_reports_the_seed_that_replays_it(stories):
    sp = SamplingParams(temperature=1.0, max_tokens=25)
    first = stories.generate("Once upon a time", sp, use_tqdm=False)[0]
    assert isinstance(first.seed, int)
    again = stories.generate("Once upon a time", SamplingParams(temperature=1.0, max_tokens=25,
                                                                seed=first.seed),
                             use_tqdm=False)[0]
    assert again.outputs[0].token_ids == first.outputs[0].token_ids


def test_prompt_logprobs_equal_completion_logprobs(stories, smollm2):
    for llm, prompt in ((stories, "Once upon a time"), (smollm2, "The capital of France is")):
        gen = llm.generate(prompt, SamplingParams(temperature=0.7, seed=3, max_tokens=20,
                                                  logprobs=4, ignore_eos=True),
                           use_tqdm=False)[0]
        out = gen.outputs[0]
        scored = llm.generate({"prompt_token_ids": gen.prompt_token_ids + out.token_ids},
                              SamplingParams(max_tokens=0, prompt_logprobs=4),
                              use_tqdm=False)[0]
        assert scored.prompt_logprobs[0] is None
        tail = scored.prompt_logprobs[len(gen.prompt_token_ids):]
        assert len(tail) == len(out.token_ids)
        for j, (want, got) in enumerate(zip(out.logprobs, tail)):
            assert [(t, f32(l.logprob), l.rank) for t, l in want.items()] == \
                   [(t, f32(l.logprob), l.rank) for t, l in got.items()], j


def test_greedy_equals_stet_run(stories, smollm2):
    for path, llm, prompt in ((stories_path(), stories, "Once upon a time"),
                              (smollm2_path(), smollm2, "The capital of France is")):
        want = run_cli("run", "-m", path, "-p", prompt, "-n", "48", "--temp", "0", "-q",
                       "-t", "1").decode()
        got = llm.generate(prompt, SamplingParams(temperature=0, max_tokens=48), use_tqdm=False)
        assert got[0].outputs[0].text == want
        assert len(want) > 20


def test_seeded_sample_equals_stet_run(stories):
    # stet run's own defaults: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05.
    want = run_cli("run", "-m", stories_path(), "-p", "The little dog", "-n", "40", "-s", "77",
                   "-q").decode()
    got = stories.generate("The little dog", SamplingParams(temperature=0.8, top_k=40, top_p=0.95,
                                                            min_p=0.05, seed=77, max_tokens=40),
                           use_tqdm=False)
    assert got[0].outputs[0].text == want


def test_fingerprint_is_the_servers(stories):
    want = run_cli("fingerprint", "-m", stories_path()).decode().split()
    assert stories.fingerprint in want
    assert stories.fingerprint.startswith("fp_")


def test_logits_hashes_equal_in_and_out_of_a_batch(stories):
    sp = SamplingParams(temperature=0, max_tokens=12, logits_hash=True)
    together = stories.generate(STORY_PROMPTS[:5], sp, use_tqdm=False)
    for prompt, got in zip(STORY_PROMPTS[:5], together):
        alone = stories.generate(prompt, sp, use_tqdm=False)[0]
        assert got.outputs[0].logits_hashes == alone.outputs[0].logits_hashes
        assert len(got.outputs[0].logits_hashes) == 12

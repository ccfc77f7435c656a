"""Python and `stet serve` give the same bytes: a real server (the build's
`stet`, $STET_BINARY, else the one pip installed) on SmolLM2, driven by the
official `openai` client; completions (several prompts in one request) and
chat completions, greedy and seeded, compared token id by token id and
logprob bit by logprob bit with LLM.generate and LLM.chat."""
import os
import sys

import pytest
from conftest import HERE, f32, installed_cli, require, smollm2_path

from stet import SamplingParams

sys.path.insert(0, os.path.join(HERE, "..", "server"))


@pytest.fixture(scope="module")
def server():
    try:
        import openai  # noqa: F401
    except ImportError:
        require(False, "the Python package 'openai' in this environment")
    binary = os.environ.get("STET_BINARY") or installed_cli()
    os.environ["STET_BINARY"] = binary
    from stet_server import StetServer
    srv = StetServer(smollm2_path(), "-t", "2")
    yield srv
    srv.kill()


@pytest.fixture(scope="module")
def client(server):
    from openai import OpenAI
    return OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="none", max_retries=0)


MODEL = "SmolLM2-135M-Instruct.Q4_1"


def as_server_reports(out):
    """(token ids, logprob dicts) as the server reports a choice: vLLM's
    token_ids (and logprobs) include the token that ended it (EOS or a stop
    id), the OpenAI wire leaves it out."""
    ended_by_token = out.finish_reason == "stop" and not isinstance(out.stop_reason, str)
    if ended_by_token:
        return out.token_ids[:-1], (out.logprobs or [])[:-1]
    return out.token_ids, out.logprobs or []


@pytest.mark.parametrize("sampling", [dict(temperature=0), dict(temperature=0.8, seed=42)])
def test_completions_equal(client, smollm2, sampling):
    prompts = ["The capital of France is", "def add(a, b):", "My favourite fruit is"]
    r = client.completions.create(model=MODEL, prompt=prompts, max_tokens=24, logprobs=3,
                                  extra_body={"return_token_ids": True}, **sampling)
    assert r.system_fingerprint == smollm2.fingerprint
    outs = smollm2.generate(prompts, SamplingParams(max_tokens=24, logprobs=3, **sampling),
                            use_tqdm=False)
    for choice, out in zip(sorted(r.choices, key=lambda c: c.index), outs):
        extra = choice.model_extra
        assert extra["prompt_token_ids"] == out.prompt_token_ids
        got = out.outputs[0]
        ids, lps = as_server_reports(got)
        assert extra["token_ids"] == ids
        assert choice.text == got.text
        assert choice.finish_reason == got.finish_reason
        assert [f32(x) for x in choice.logprobs.token_logprobs] == \
               [f32(d[t].logprob) for d, t in zip(lps, ids)]
        for server_top, d in zip(choice.logprobs.top_logprobs, lps):
            for piece, lp in server_top.items():
                assert any(x.decoded_token == piece and f32(x.logprob) == f32(lp)
                           for x in d.values()), piece


@pytest.mark.parametrize("sampling", [dict(temperature=0), dict(temperature=0.7, seed=5)])
def test_chat_equal(client, smollm2, sampling):
    messages = [{"role": "system", "content": "You are a terse assistant."},
                {"role": "user", "content": "Name three colours."}]
    r = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=30,
                                       logprobs=True, top_logprobs=2,
                                       extra_body={"return_token_ids": True}, **sampling)
    out = smollm2.chat(messages, SamplingParams(max_tokens=30, logprobs=2, **sampling),
                       use_tqdm=False)[0]
    assert r.model_extra["prompt_token_ids"] == out.prompt_token_ids
    assert out.prompt_token_ids == smollm2.get_tokenizer().apply_chat_template(
        messages, add_generation_prompt=True)
    got = out.outputs[0]
    ids, lps = as_server_reports(got)
    choice = r.choices[0]
    assert choice.model_extra["token_ids"] == ids
    assert choice.message.content == got.text
    assert choice.finish_reason == got.finish_reason
    content = choice.logprobs.content
    assert len(content) == len(ids)
    for entry, d, t in zip(content, lps, ids):
        assert f32(entry.logprob) == f32(d[t].logprob)
        # The server's top list, best first, is the k most likely of ours.
        ours = sorted((lp.logprob for lp in d.values()), reverse=True)[:len(entry.top_logprobs)]
        assert [f32(e.logprob) for e in entry.top_logprobs] == [f32(x) for x in ours]


def test_stop_strings_and_n_equal(client, smollm2):
    r = client.completions.create(model=MODEL, prompt="List: apples, pears,", max_tokens=40,
                                  temperature=0.9, seed=11, n=3, stop=[","],
                                  extra_body={"return_token_ids": True})
    out = smollm2.generate("List: apples, pears,", SamplingParams(
        max_tokens=40, temperature=0.9, seed=11, n=3, stop=[","]), use_tqdm=False)[0]
    for choice in sorted(r.choices, key=lambda c: c.index):
        got = out.outputs[choice.index]
        assert choice.text == got.text
        assert choice.model_extra["token_ids"] == as_server_reports(got)[0]
        assert choice.finish_reason == got.finish_reason
        if got.finish_reason == "stop" and got.stop_reason is not None:
            assert got.stop_reason == ","

"""The offline API's shapes and behaviour, as vLLM's: prompt forms, one
SamplingParams or one per prompt, n, stop strings and ids with their
stop_reason, logprob dicts and ranks, prompt logprobs, min_tokens, the
tokenizer, chat, streaming, structured outputs."""
import json
import re

import pytest
from conftest import f32

import stet
from stet import Logprob, RequestOutput, SamplingParams, StructuredOutputsParams


def test_prompt_forms_give_the_same_request(stories):
    sp = SamplingParams(temperature=0, max_tokens=10)
    ids = stories.get_tokenizer().encode("Once upon a time")
    a, b, c = stories.generate(["Once upon a time", {"prompt": "Once upon a time"},
                                {"prompt_token_ids": ids}], sp, use_tqdm=False)
    assert isinstance(a, RequestOutput)
    assert a.prompt_token_ids == b.prompt_token_ids == c.prompt_token_ids == ids
    assert a.outputs[0].token_ids == b.outputs[0].token_ids == c.outputs[0].token_ids
    assert a.prompt == "Once upon a time" and c.prompt is None
    assert len({a.request_id, b.request_id, c.request_id}) == 3
    assert a.finished and a.outputs[0].finished()
    # vLLM's defaults: temperature 1, max_tokens 16.
    d = stories.generate("Once upon a time", use_tqdm=False)[0]
    assert len(d.outputs[0].token_ids) == 16 and d.outputs[0].finish_reason == "length"


def test_one_sampling_params_per_prompt(stories):
    outs = stories.generate(["The sun", "The sun"], [SamplingParams(temperature=0, max_tokens=3),
                                                     SamplingParams(temperature=0, max_tokens=7)],
                            use_tqdm=False)
    assert [len(o.outputs[0].token_ids) for o in outs] == [3, 7]
    assert outs[1].outputs[0].token_ids[:3] == outs[0].outputs[0].token_ids
    with pytest.raises(ValueError, match="2 SamplingParams for 3 prompts"):
        stories.generate(["a", "b", "c"], [SamplingParams(), SamplingParams()])


def test_n_choices_are_distinct_seeded_streams(stories):
    out = stories.generate("Lily", SamplingParams(n=4, seed=5, temperature=1.0, max_tokens=20),
                           use_tqdm=False)[0]
    assert [o.index for o in out.outputs] == [0, 1, 2, 3]
    assert len({tuple(o.token_ids) for o in out.outputs}) > 1
    again = stories.generate("Lily", SamplingParams(n=4, seed=5, temperature=1.0, max_tokens=20),
                             use_tqdm=False)[0]
    assert [o.token_ids for o in again.outputs] == [o.token_ids for o in out.outputs]


def test_stop_strings_and_stop_token_ids(stories):
    full = stories.generate("Once upon a time", SamplingParams(temperature=0, max_tokens=60),
                            use_tqdm=False)[0].outputs[0]
    at = full.text.index("Lily")
    out = stories.generate("Once upon a time", SamplingParams(temperature=0, max_tokens=60,
                                                              stop=["xyz", "ily"]),
                           use_tqdm=False)[0].outputs[0]
    assert out.text == full.text[:at + 1]
    assert out.finish_reason == "stop" and out.stop_reason == "ily"
    kept = stories.generate("Once upon a time", SamplingParams(
        temperature=0, max_tokens=60, stop="ily", include_stop_str_in_output=True),
        use_tqdm=False)[0].outputs[0]
    assert kept.text == full.text[:at + 4]
    stop_id = full.token_ids[5]
    by_id = stories.generate("Once upon a time", SamplingParams(
        temperature=0, max_tokens=60, stop_token_ids=[stop_id]), use_tqdm=False)[0].outputs[0]
    assert by_id.token_ids == full.token_ids[:6]  # the stop token is in token_ids, as in vLLM
    assert by_id.stop_reason == stop_id and by_id.finish_reason == "stop"
    # min_tokens: the stop id may not end the choice before 10 tokens.
    later = stories.generate("Once upon a time", SamplingParams(
        temperature=0, max_tokens=30, stop_token_ids=[stop_id], min_tokens=10),
        use_tqdm=False)[0].outputs[0]
    assert len(later.token_ids) >= 10 and stop_id not in later.token_ids[:10]
    assert later.token_ids[:5] == full.token_ids[:5]


def test_end_of_generation_has_no_stop_reason(smollm2):
    out = smollm2.chat([{"role": "user", "content": "What is 2+2?"}],
                       SamplingParams(temperature=0, max_tokens=100), use_tqdm=False)[0]
    o = out.outputs[0]
    assert o.finish_reason == "stop" and o.stop_reason is None
    assert o.token_ids[-1] in smollm2.get_tokenizer().eog_token_ids
    assert "4" in o.text


def test_logprobs_shaped_as_vllm(stories):
    out = stories.generate("The little dog", SamplingParams(temperature=0.8, seed=1, max_tokens=12,
                                                            logprobs=3, prompt_logprobs=2),
                           use_tqdm=False)[0]
    o = out.outputs[0]
    assert len(o.logprobs) == len(o.token_ids)
    for t, d in zip(o.token_ids, o.logprobs):
        assert next(iter(d)) == t  # the sampled token first
        assert 3 <= len(d) <= 4
        assert all(isinstance(v, Logprob) and v.logprob <= 0 for v in d.values())
        ranked = sorted((v.rank, v.logprob) for v in d.values() if v.rank is not None)
        assert ranked[0][0] == 1
        assert [r for r, _ in ranked] == sorted(r for r, _ in ranked)
        assert d[t].decoded_token == stories.get_tokenizer().piece(t)
    assert o.cumulative_logprob == pytest.approx(sum(d[t].logprob for t, d in
                                                     zip(o.token_ids, o.logprobs)))
    assert out.prompt_logprobs[0] is None
    assert len(out.prompt_logprobs) == len(out.prompt_token_ids)
    for t, d in zip(out.prompt_token_ids[1:], out.prompt_logprobs[1:]):
        assert next(iter(d)) == t and 2 <= len(d) <= 3
    greedy = stories.generate("The little dog", SamplingParams(temperature=0, max_tokens=8,
                                                               logprobs=0), use_tqdm=False)[0]
    assert all(len(d) == 1 for d in greedy.outputs[0].logprobs)  # logprobs=0: the token only
    assert all(d[t].rank == 1 for t, d in zip(greedy.outputs[0].token_ids,
                                               greedy.outputs[0].logprobs))
    assert stories.generate("x", SamplingParams(max_tokens=2),
                            use_tqdm=False)[0].outputs[0].logprobs is None


def test_tokenizer(stories, smollm2):
    tok = smollm2.get_tokenizer()
    ids = tok.encode("Hello world")
    assert tok.decode(ids, skip_special_tokens=True) == "Hello world"
    assert tok("Hello world")["input_ids"] == ids
    assert tok.vocab_size == len(tok) > 1000
    assert tok.convert_ids_to_tokens(ids)[-1].endswith("world")
    conv = [{"role": "user", "content": "Hi"}]
    text = tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>") and text.endswith("<|im_start|>assistant\n")
    assert tok.apply_chat_template(conv, add_generation_prompt=True) == tok.encode(text, False)
    st = stories.get_tokenizer()
    assert st.bos_token_id == 1 and st.encode("Hi")[0] == 1


def test_chat_batch_and_continue_final_message(smollm2):
    convs = [[{"role": "user", "content": "Say yes."}],
             [{"role": "user", "content": "Count to three."}]]
    sp = SamplingParams(temperature=0, max_tokens=12)
    outs = smollm2.chat(convs, sp, use_tqdm=False)
    assert len(outs) == 2
    assert outs[1].outputs[0].token_ids == smollm2.chat(convs[1], sp,
                                                        use_tqdm=False)[0].outputs[0].token_ids
    assert outs[0].prompt.endswith("<|im_start|>assistant\n")
    cont = smollm2.chat(convs[1] + [{"role": "assistant", "content": "One, two,"}], sp,
                        add_generation_prompt=False, continue_final_message=True,
                        use_tqdm=False)[0]
    assert cont.prompt.endswith("One, two,")
    kw = smollm2.chat(convs[0], sp, chat_template_kwargs={"unused_variable": 1},
                      use_tqdm=False)[0]
    assert kw.prompt_token_ids == outs[0].prompt_token_ids


def test_stream_deltas_add_up_to_generate(stories):
    sp = SamplingParams(temperature=0.9, seed=8, max_tokens=30, logprobs=1, n=2)
    whole = stories.generate("Tom and Sue", sp, use_tqdm=False)[0]
    text, ids, finish = {0: "", 1: ""}, {0: [], 1: []}, {}
    for d in stories.stream("Tom and Sue", sp):
        text[d.index] += d.text
        ids[d.index] += d.token_ids
        if d.finish_reason:
            finish[d.index] = d.finish_reason
        elif d.logprobs:
            assert f32(d.logprobs[0][d.token_ids[0]].logprob) == \
                f32(whole.outputs[d.index].logprobs[len(ids[d.index]) - 1][d.token_ids[0]].logprob)
    for c in (0, 1):
        assert text[c] == whole.outputs[c].text
        assert ids[c] == whole.outputs[c].token_ids
        assert finish[c] == whole.outputs[c].finish_reason


def test_stream_closed_early_cancels(stories):
    it = stories.stream("Once", SamplingParams(max_tokens=400, ignore_eos=True))
    first = next(it)
    assert first.token_ids
    it.close()  # cancels the request in the engine
    assert stories.generate("Once", SamplingParams(temperature=0, max_tokens=3),
                            use_tqdm=False)[0].outputs[0].token_ids


def test_structured_outputs(smollm2):
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                               "age": {"type": "integer"}},
              "required": ["name", "age"]}
    conv = [{"role": "user", "content": "Give a person as JSON."}]
    out = smollm2.chat(conv, SamplingParams(temperature=0, max_tokens=60, structured_outputs=(
        StructuredOutputsParams(json=schema))), use_tqdm=False)[0].outputs[0]
    doc = json.loads(out.text)
    assert set(doc) == {"name", "age"} and isinstance(doc["age"], int)
    ok = [{"role": "user", "content": 'Reply with a JSON object with key "ok" set to true.'}]
    out = smollm2.chat(ok, SamplingParams(temperature=0, max_tokens=100,
                                            structured_outputs=StructuredOutputsParams(
                                                json_object=True)), use_tqdm=False)[0]
    assert out.outputs[0].finish_reason == "stop", out.outputs[0].text
    assert json.loads(out.outputs[0].text) == {"ok": True}
    pick = smollm2.generate("Is the sky blue? Answer:", SamplingParams(
        temperature=1.0, seed=4, max_tokens=5, n=4,
        structured_outputs=StructuredOutputsParams(choice=["yes", "no", "maybe \"so\""])),
        use_tqdm=False)[0]
    assert all(o.text in ("yes", "no", 'maybe "so"') for o in pick.outputs)
    code = smollm2.generate("A code:", SamplingParams(
        temperature=1.0, seed=6, max_tokens=12, n=3,
        guided_decoding=stet.GuidedDecodingParams(regex=r"[A-Z]{2}-\d{3}")), use_tqdm=False)[0]
    assert all(re.fullmatch(r"[A-Z]{2}-\d{3}", o.text) for o in code.outputs), code.outputs
    gram = smollm2.generate("Answer:", SamplingParams(
        temperature=0, max_tokens=10, structured_outputs=StructuredOutputsParams(
            grammar='root ::= "A" [0-9] [0-9]')), use_tqdm=False)[0].outputs[0]
    assert re.fullmatch(r"A[0-9]{2}", gram.text)


def test_chat_template_override_clock_and_default_kwargs():
    from conftest import stories_path
    tmpl = ("{{ strftime_now('%Y-%m-%d') }} {{ greeting }}|{% for m in messages %}"
            "{{ m['role'] }}:{{ m['content'] }};{% endfor %}")
    llm = stet.LLM(stories_path(), chat_template=tmpl, chat_template_kwargs={"greeting": "hi"})
    tok = llm.get_tokenizer()
    conv = [{"role": "user", "content": "x"}]
    assert tok.apply_chat_template(conv, tokenize=False, clock=86400) == "1970-01-02 hi|user:x;"
    assert tok.apply_chat_template(conv, tokenize=False, clock=0,
                                   chat_template_kwargs={"greeting": "yo"}) == \
        "1970-01-01 yo|user:x;"
    out = llm.chat(conv, SamplingParams(temperature=0, max_tokens=3), clock=86400,
                   use_tqdm=False)[0]
    assert out.prompt == "1970-01-02 hi|user:x;"
    assert out.prompt_token_ids == tok.apply_chat_template(conv, clock=86400,
                                                           add_generation_prompt=True)


def test_the_interpreter_runs_while_the_engine_works(smollm2):
    """generate releases the GIL: another Python thread keeps running meanwhile."""
    import threading
    import time
    done = threading.Event()

    def work():
        smollm2.generate([f"Prompt {i}" for i in range(16)],
                         SamplingParams(temperature=0, max_tokens=100, ignore_eos=True),
                         use_tqdm=False)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    time.sleep(0.05)  # the batch is in the engine
    spins, t0 = 0, time.monotonic()
    while not done.is_set() and time.monotonic() - t0 < 1.0:
        spins += 1
    t.join()
    assert spins > 10000, spins

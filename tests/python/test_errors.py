"""Bad input is a Python exception naming the field — a RequestError (a
ValueError) whose ``param`` is the engine's ValidateRequest field, as the
server's 400 — never a crash of the interpreter; Ctrl-C cancels a running
batch and leaves the engine serving."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import stories_path

import stet
from stet import RequestError, SamplingParams, StructuredOutputsParams


@pytest.mark.parametrize("kwargs, field", [
    (dict(temperature=-1), "temperature"),
    (dict(temperature=float("nan")), "temperature"),
    (dict(top_p=0), "top_p"),
    (dict(top_k=-2), "top_k"),
    (dict(min_p=2), "min_p"),
    (dict(n=0), "n"),
    (dict(max_tokens=-1), "max_tokens"),
    (dict(min_tokens=5, max_tokens=2), "min_tokens"),
    (dict(presence_penalty=3), "presence_penalty"),
    (dict(frequency_penalty=-3), "frequency_penalty"),
    (dict(repetition_penalty=0), "repetition_penalty"),
    (dict(logit_bias={5: 200}), "logit_bias"),
    (dict(logprobs=21), "logprobs"),
    (dict(logprobs=-1), "logprobs"),
    (dict(prompt_logprobs=50), "prompt_logprobs"),
    (dict(temperature="hot"), "temperature"),
    (dict(stop=[1]), "stop"),
    (dict(skip_special_tokens=False), "skip_special_tokens"),
    (dict(seed=-1), "seed"),
])
def test_sampling_params_refusals_name_the_field(kwargs, field):
    with pytest.raises(RequestError) as e:
        SamplingParams(**kwargs)
    assert isinstance(e.value, ValueError)
    assert e.value.param == field
    assert str(e.value).startswith(field), str(e.value)


def test_refusals_that_need_the_model(stories):
    n_vocab = stories.get_tokenizer().vocab_size
    cases = [
        ({"prompt_token_ids": [1, n_vocab]}, SamplingParams(), "prompt_token_ids"),
        ({"prompt_token_ids": []}, SamplingParams(), "prompt_token_ids"),
        ("Hi", SamplingParams(logit_bias={n_vocab: 1.0}), "logit_bias"),
        ("Hi", SamplingParams(stop_token_ids=[n_vocab + 5]), "stop_token_ids"),
        ({"prompt_token_ids": [1] * (stories.max_model_len + 1)}, SamplingParams(),
         "prompt_token_ids"),
    ]
    for prompt, sp, field in cases:
        with pytest.raises(RequestError) as e:
            stories.generate([prompt], sp, use_tqdm=False)
        assert e.value.param == field, (prompt if isinstance(prompt, str) else "ids", str(e.value))
    with pytest.raises(RequestError) as e:
        stories.generate([{"prompt_token_ids": ["a"]}])
    assert e.value.param == "prompt_token_ids"
    # A refused prompt among good ones runs none of them.
    with pytest.raises(RequestError):
        stories.generate(["fine", {"prompt_token_ids": [n_vocab]}], use_tqdm=False)


def test_structured_refusals_name_the_field():
    cases = [
        (dict(json={"type": "string", "pattern": "(?=a)"}), "structured_outputs.json"),
        (dict(json="{not json"), "structured_outputs.json"),
        (dict(grammar="root ::= ("), "structured_outputs.grammar"),
        (dict(regex="a(?=b)"), "structured_outputs.regex"),
        (dict(choice=[]), "structured_outputs.choice"),
        (dict(choice=["a", ""]), "structured_outputs.choice"),
    ]
    for kwargs, field in cases:
        with pytest.raises(RequestError) as e:
            SamplingParams(structured_outputs=StructuredOutputsParams(**kwargs))
        assert e.value.param == field, (kwargs, str(e.value))
    with pytest.raises(RequestError) as e:
        StructuredOutputsParams(json={}, regex="a")
    assert e.value.param == "structured_outputs"


def test_chat_refusals_name_the_field(smollm2):
    with pytest.raises(RequestError) as e:
        smollm2.chat([{"role": "wizard", "content": "hi"}])
    assert e.value.param == "messages[0].role"
    with pytest.raises(RequestError) as e:
        smollm2.chat([{"role": "user"}])
    assert e.value.param == "messages[0].content"
    with pytest.raises(RequestError) as e:  # add_generation_prompt is True by default
        smollm2.chat([{"role": "assistant", "content": "hi"}], continue_final_message=True)
    assert e.value.param == "continue_final_message"
    with pytest.raises(RequestError) as e:
        smollm2.chat([{"role": "user", "content": "hi"}], chat_template_kwargs={"messages": []})
    assert e.value.param == "chat_template_kwargs"


def test_bad_options_and_files_are_exceptions(tmp_path):
    with pytest.raises(OSError):
        stet.LLM(str(tmp_path / "missing.gguf"))
    with pytest.raises(ValueError, match="kv_cache_dtype"):
        stet.LLM(stories_path(), kv_cache_dtype="int3")
    with pytest.raises(ValueError, match="numerics"):
        stet.LLM(stories_path(), numerics="quick")
    with pytest.raises(TypeError):
        stet.LLM(stories_path(), no_such_option=1)
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"GGUF" + os.urandom(4096))
    # In a child process, so a crash would show as a signal rather than kill pytest.
    code = ("import stet\n"
            "try:\n"
            f"    stet.LLM({str(garbage)!r})\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n"
            "    raise SystemExit(3)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert r.returncode == 3, (r.returncode, r.stderr.decode(errors="replace"))


def test_keyboard_interrupt_cancels_the_batch(smollm2):
    sp = SamplingParams(temperature=0, max_tokens=400, ignore_eos=True)
    prompts = [f"Story number {i}:" for i in range(64)]
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        smollm2.generate(prompts, sp, use_tqdm=False)
    elapsed = time.monotonic() - t0
    timer.join()
    # 64 x 400 tokens of SmolLM2 take a minute here: the batch was cut short.
    assert elapsed < 5, elapsed
    # The engine serves on, with nothing of the cancelled batch in its way.
    out = smollm2.generate("Once upon a time", SamplingParams(temperature=0, max_tokens=5),
                           use_tqdm=False)[0]
    assert len(out.outputs[0].token_ids) == 5


def test_progress_lines_when_not_a_terminal(stories, capfd):
    stories.generate(["a", "b", "c"], SamplingParams(max_tokens=2), use_tqdm=True)
    err = capfd.readouterr().err
    assert "processed prompts 3/3" in err
    stories.generate(["a", "b", "c"], SamplingParams(max_tokens=2), use_tqdm=False)
    assert capfd.readouterr().err == ""

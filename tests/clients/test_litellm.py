"""LiteLLM's SDK (litellm.completion through its "openai/" provider with
api_base) on a live `stet serve`: a completion, a stream (the chunks add up
to the completion's text), a forced tool call whose arguments validate, the
tool's answer sent back for a text answer, and response_format as a pydantic
model whose answer parses into it."""
import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch at import

import litellm  # noqa: E402
import pytest  # noqa: E402

import conftest as C  # noqa: E402

WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24}},
                   "required": ["city"], "additionalProperties": False}}}]


@pytest.fixture(scope="module")
def kw(base_url):
    return dict(model="openai/" + C.MODEL_NAME, api_base=base_url, api_key="none",
                temperature=0, max_tokens=60, seed=1, num_retries=0)


def ask(text):
    return [{"role": "user", "content": text}]


def test_completion_and_stream(kw):
    r = litellm.completion(messages=ask("Say hello to Ada."), **kw)
    text = r.choices[0].message.content
    assert text and r.usage.completion_tokens > 0
    chunks = list(litellm.completion(messages=ask("Say hello to Ada."), stream=True, **kw))
    parts = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert len([p for p in parts if p]) > 3
    assert "".join(parts) == text


def test_tool_round_trip(kw):
    messages = ask("What is the weather in Paris?")
    r = litellm.completion(messages=messages, tools=WEATHER, tool_choice="required", **kw)
    assert r.choices[0].finish_reason == "tool_calls"
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert isinstance(json.loads(call.function.arguments)["city"], str)
    # Streamed: the deltas rebuild the same call.
    deltas = [c.choices[0].delta.tool_calls for c in litellm.completion(
        messages=messages, tools=WEATHER, tool_choice="required", stream=True, **kw)
        if c.choices and c.choices[0].delta.tool_calls]
    assert deltas[0][0].id == call.id and deltas[0][0].function.name == "get_weather"
    assert "".join(d[0].function.arguments or "" for d in deltas) == call.function.arguments
    messages += [r.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21 degrees."}]
    final = litellm.completion(messages=messages, tools=WEATHER, **kw)
    assert final.choices[0].message.content and not final.choices[0].message.tool_calls


def test_response_format_pydantic(kw):
    r = litellm.completion(messages=ask(C.ASK_BOOKING), response_format=C.Booking,
                           **dict(kw, max_tokens=300, temperature=0.7))
    assert r.choices[0].finish_reason == "stop"
    C.check_booking(C.Booking.model_validate_json(r.choices[0].message.content))

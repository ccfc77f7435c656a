"""LangChain's OpenAI chat model (langchain-openai's ChatOpenAI) on a live
`stet serve`: invoke, stream (the chunks add up to the invoked text), tools
bound with bind_tools (a forced call, streamed and not, then the tool's answer
sent back for a final text answer, which streams token by token with the
tools still bound), and with_structured_output on a pydantic
model in each of its methods. Every HTTP answer passes the openai types'
strict check (tests/server/wire_check.py)."""
import json

import langchain_openai
import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool

import conftest as C
import wire_check


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"It is sunny and 21 degrees in {city}."


@pytest.fixture(scope="module")
def llm(base_url):
    http = wire_check.httpx.Client(transport=wire_check.CheckingTransport(), timeout=300)
    return langchain_openai.ChatOpenAI(base_url=base_url, api_key="none", model=C.MODEL_NAME,
                                       temperature=0, max_tokens=60, seed=1, max_retries=0,
                                       http_client=http)


def test_invoke_and_stream(llm):
    msg = llm.invoke("Say hello to Ada.")
    assert msg.content and msg.response_metadata["finish_reason"] in ("stop", "length")
    assert msg.usage_metadata["output_tokens"] > 0
    chunks = list(llm.stream("Say hello to Ada."))
    assert len([c for c in chunks if c.content]) > 3  # streamed as it came, not at the end
    assert "".join(c.content for c in chunks) == msg.content  # greedy: the same text


def test_bind_tools_round_trip(llm):
    bound = llm.bind_tools([get_weather], tool_choice="get_weather")
    ask = [HumanMessage("What is the weather in Paris?")]
    ai = bound.invoke(ask)
    assert [c["name"] for c in ai.tool_calls] == ["get_weather"]
    call = ai.tool_calls[0]
    assert isinstance(call["args"]["city"], str) and call["id"].startswith("call_")
    # Streamed: the chunks' tool_call_chunks merge into the same call.
    merged = None
    for chunk in bound.stream(ask):
        merged = chunk if merged is None else merged + chunk
    assert merged.tool_calls == ai.tool_calls
    # The tool's answer goes back; with tools still bound (auto) the model answers in text.
    result = get_weather.invoke(call)
    assert isinstance(result, ToolMessage) and result.tool_call_id == call["id"]
    final = llm.bind_tools([get_weather]).invoke(ask + [ai, result])
    assert final.content and not final.tool_calls
    # With tools bound (auto) a text answer still streams as it comes.
    chunks = list(llm.bind_tools([get_weather]).stream(ask + [ai, result]))
    assert len([c for c in chunks if c.content]) > 3
    assert "".join(c.content for c in chunks) == final.content


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_with_structured_output(llm, method):
    long = llm.model_copy(update={"max_tokens": 300})
    out = long.with_structured_output(C.Booking, method=method, include_raw=True).invoke(C.ASK_BOOKING)
    assert out["parsing_error"] is None, out
    C.check_booking(out["parsed"])


def test_with_structured_output_json_mode(llm):
    # json_mode sends response_format json_object and no schema: the grammar
    # can only make the answer a JSON object; matching Booking is left to the
    # model (a 135M one rarely does), so only the object is asserted.
    long = llm.model_copy(update={"max_tokens": 300})
    structured = long.with_structured_output(C.Booking, method="json_mode", include_raw=True)
    out = structured.invoke(C.ASK_BOOKING + " Answer in JSON.")
    raw = out["raw"]
    if raw.response_metadata["finish_reason"] == "stop":
        assert isinstance(json.loads(raw.content), dict)
    else:
        assert raw.content.lstrip().startswith("{")
    if out["parsing_error"] is None:
        C.check_booking(out["parsed"])

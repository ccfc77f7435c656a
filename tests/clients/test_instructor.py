"""instructor (from_openai on the openai client) on a live `stet serve`: a
pydantic model with a date, a UUID, a bounded int, a pattern, a tuple and a
Literal comes back parsed in TOOLS, JSON_SCHEMA, RESPONSES_TOOLS and
TOOLS_STRICT modes (the schema travels as tool parameters, response_format or
a Responses function tool, and stet's grammar enforces it), streamed partials
too (TOOLS); JSON mode (the schema only in the prompt, response_format json_object)
gets a JSON object. No retries: the first answer must parse."""
import json

import typing

import instructor
import pydantic
import pytest
from instructor.v2.core.errors import InstructorRetryException

import conftest as C


@pytest.fixture(scope="module")
def client(server):
    return server.client()  # the openai client, answers checked by wire_check


MODES = [instructor.Mode.TOOLS, instructor.Mode.TOOLS_STRICT, instructor.Mode.JSON_SCHEMA]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_chat_modes(client, mode):
    ins = instructor.from_openai(client, mode=mode)
    booking, completion = ins.chat.completions.create_with_completion(
        model=C.MODEL_NAME, messages=[{"role": "user", "content": C.ASK_BOOKING}],
        response_model=C.Booking, max_tokens=300, temperature=0.7, seed=3, max_retries=0)
    C.check_booking(booking)
    finish = completion.choices[0].finish_reason
    assert finish == ("stop" if mode == instructor.Mode.JSON_SCHEMA else "tool_calls"), completion


def test_responses_tools(client):
    ins = instructor.from_openai(client, mode=instructor.Mode.RESPONSES_TOOLS)
    booking = ins.responses.create(model=C.MODEL_NAME, input=C.ASK_BOOKING, response_model=C.Booking,
                                   max_output_tokens=300, temperature=0.7, max_retries=0)
    C.check_booking(booking)


class Guest(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=24)
    age: int = pydantic.Field(ge=18, le=99)
    plan: typing.Literal["bed", "breakfast", "full"]


def test_partial_stream(client):
    # Partials stream from the call's argument deltas. (Booking itself is not
    # used: instructor validates partials strictly in Python mode, where a
    # date or UUID string is refused whatever the server sends.)
    ins = instructor.from_openai(client, mode=instructor.Mode.TOOLS)
    partials = list(ins.chat.completions.create_partial(
        model=C.MODEL_NAME, messages=[{"role": "user", "content": "Register a hotel guest."}],
        response_model=Guest, max_tokens=120, temperature=0, max_retries=0))
    assert len(partials) > 3  # the arguments came in pieces
    assert len({p.model_dump_json() for p in partials}) > 2  # and grew
    Guest.model_validate(partials[-1].model_dump())


def test_json_mode_answers_an_object(client):
    # JSON mode puts the schema in a system message and asks for json_object:
    # the grammar makes the answer a JSON object; its keys are the model's skill.
    ins = instructor.from_openai(client, mode=instructor.Mode.JSON)
    try:
        booking = ins.chat.completions.create(
            model=C.MODEL_NAME, messages=[{"role": "user", "content": C.ASK_BOOKING}],
            response_model=C.Booking, max_tokens=400, temperature=0, max_retries=0)
    except InstructorRetryException as e:
        assert isinstance(e.__cause__, pydantic.ValidationError) or e.failed_attempts, e
        text = e.last_completion.choices[0].message.content
        assert text.lstrip().startswith("{"), text
        if e.last_completion.choices[0].finish_reason == "stop":
            assert isinstance(json.loads(text), dict)
        return
    C.check_booking(booking)

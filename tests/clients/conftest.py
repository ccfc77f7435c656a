"""The client matrix's shared parts: one `stet serve` of SmolLM2-135M-Instruct
Q4_1 per test module (served as "smollm2", so a client's model name is the
server's), and the pydantic model every client must round-trip — a date, a
UUID, a bounded int, a pattern, a tuple and a Literal, each of which compiles
to an exact grammar (docs/api.md "Structured outputs"), so even a 135M model's
answer parses into it. Run through run_client_test.py, which finds the
clients' venv (scripts/setup --clients)."""
import datetime
import os
import sys
import typing
import uuid

import pydantic
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import stet_server as S  # noqa: E402

MODEL_NAME = "smollm2"


class Booking(pydantic.BaseModel):
    guest: str = pydantic.Field(min_length=1, max_length=24)
    day: datetime.date
    ref: uuid.UUID
    nights: int = pydantic.Field(ge=1, le=14)
    room: str = pydantic.Field(pattern=r"^[A-D][0-9]{3}$")
    slot: tuple[int, int]
    kind: typing.Literal["single", "double", "suite"]


ASK_BOOKING = "Book a hotel room for Ada Lovelace next week."


@pytest.fixture(scope="module")
def server():
    srv = S.StetServer(S.smollm2_path(), "--threads", "2", "--ctx", "4096",
                       "--served-model-name", MODEL_NAME)
    yield srv
    assert srv.stop() == 0


@pytest.fixture(scope="module")
def base_url(server):
    return server.url + "/v1"


def check_booking(b):
    """A parsed answer: the client's own parse gave a Booking; the JSON it came
    from validates against the model's schema with jsonschema's format checker."""
    import jsonschema
    assert isinstance(b, Booking), b
    doc = b.model_dump(mode="json")
    doc["slot"] = list(b.slot)
    jsonschema.validate(doc, Booking.model_json_schema(),
                        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    return b

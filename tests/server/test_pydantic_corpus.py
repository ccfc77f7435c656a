"""The schemas pydantic v2 writes, answered by a real model (SmolLM2-135M-
Instruct, Q4_1): one model per standard field type — dates and times, UUIDs,
emails, URLs, IP addresses, interfaces and networks, constrained ints, floats
and strings, Literal, Enum, tuples, dicts, lists, Optional, unions,
discriminated unions, nested and recursive models — sent as response_format
json_schema exactly as model_json_schema() writes it (what LangChain and
LiteLLM send), three sampled choices each. Every answer must end (finish
"stop"), parse into the model (model_validate_json) and validate against the
schema with jsonschema's FormatChecker: each keyword compiles to a grammar
that admits only valid values (docs/api.md "Structured outputs"); only a
recursive model, whose depth no schema bounds, may be cut at max_tokens. A model
of every kind at once goes through the openai client's parse() (its strict
schema rewrite). Types whose schema a grammar cannot enforce are 400s naming
the keyword."""
import datetime
import decimal
import enum
import ipaddress
import json
import typing
import unittest
import uuid

import stet_server as S

S.require_openai()
try:
    import jsonschema
    import pydantic
    import email_validator  # noqa: F401  (pydantic's EmailStr)
except ImportError as e:
    S.require(False, f"the Python package {e.name!r} (scripts/setup installs it)")

from pydantic import BaseModel, Field  # noqa: E402

SMOL = S.smollm2_path()
FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER
Str = typing.Annotated[str, Field(max_length=16)]


class Color(str, enum.Enum):
    red = "red"
    green = "green"
    blue = "blue"


class Level(enum.IntEnum):
    low = 1
    high = 3


class Cat(BaseModel):
    kind: typing.Literal["cat"]
    lives: int = Field(ge=1, le=9)


class Dog(BaseModel):
    kind: typing.Literal["dog"]
    breed: Str


class Address(BaseModel):
    street: Str
    city: Str
    zip: str = Field(pattern=r"^\d{5}$")


class Node(BaseModel):
    label: str = Field(max_length=8)
    next: typing.Optional["Node"] = None


CORPUS = {
    "date": datetime.date,
    "datetime": datetime.datetime,
    "aware_datetime": pydantic.AwareDatetime,
    "time": datetime.time,
    "timedelta": datetime.timedelta,
    "uuid": uuid.UUID,
    "uuid4": pydantic.UUID4,
    "email": pydantic.EmailStr,
    "name_email": pydantic.NameEmail,
    "http_url": pydantic.HttpUrl,
    "any_url": pydantic.AnyUrl,
    "ipv4": ipaddress.IPv4Address,
    "ipv6": ipaddress.IPv6Address,
    "ip_any": pydantic.IPvAnyAddress,
    "ipv4_interface": ipaddress.IPv4Interface,
    "ipv4_network": ipaddress.IPv4Network,
    "ipv6_network": ipaddress.IPv6Network,
    "ip_any_network": pydantic.IPvAnyNetwork,
    "int_ge_le": typing.Annotated[int, Field(ge=3, le=1234)],
    "int_gt_lt": typing.Annotated[int, Field(gt=-5, lt=5)],
    "positive_int": pydantic.PositiveInt,
    "negative_int": pydantic.NegativeInt,
    "float_ge_le": typing.Annotated[float, Field(ge=0.5, le=99.5)],
    "float_gt_lt": typing.Annotated[float, Field(gt=0, lt=1)],
    "str_lengths": typing.Annotated[str, Field(min_length=2, max_length=10)],
    "str_pattern": typing.Annotated[str, Field(pattern=r"^[a-z]{3}-\d{2}$")],
    "str_pattern_phone": typing.Annotated[str, Field(pattern=r"^\+?[0-9]{7,12}$")],
    "literal": typing.Literal["a", "b", 3],
    "enum": Color,
    "int_enum": Level,
    "bool": bool,
    "strict_bool": pydantic.StrictBool,
    "decimal": decimal.Decimal,
    "bytes": typing.Annotated[bytes, Field(max_length=12)],
    "tuple": tuple[int, bool, Color],
    "var_tuple": typing.Annotated[tuple[int, ...], Field(max_length=4)],
    "list": typing.Annotated[list[Str], Field(min_length=1, max_length=3)],
    "dict": dict[Str, bool],
    "dict_literal_keys": dict[typing.Literal["a", "b"], int],
    "dict_bounded": typing.Annotated[dict[Str, int], Field(min_length=1, max_length=2)],
    "optional": typing.Optional[int],
    "union": typing.Union[int, Str],
    "discriminated": typing.Annotated[typing.Union[Cat, Dog], Field(discriminator="kind")],
    "nested": Address,
    "recursive": Node,
}

# A grammar cannot enforce these: a 400 naming the keyword, never a silent drop.
REFUSED = {
    "set": (set[int], "uniqueItems"),
    "frozenset": (frozenset[str], "uniqueItems"),
    "multiple_of": (typing.Annotated[int, Field(multiple_of=5)], "multipleOf"),
    # A length bound beside a pattern that does not imply it (a grammar would
    # need the two languages' product).
    "pattern_and_length": (typing.Annotated[str, Field(pattern=r"[A-Z]{2}\d", max_length=12)],
                           "'minLength'/'maxLength' together with 'pattern'"),
}
# Nothing in these schemas bounds the depth: a small model may nest until
# max_tokens, so an answer cut at the limit is allowed (and must be a prefix).
UNBOUNDED_DEPTH = {"recursive"}


class Everything(BaseModel):
    day: datetime.date
    at: datetime.datetime
    ref: uuid.UUID
    email: pydantic.EmailStr
    site: pydantic.HttpUrl
    host: ipaddress.IPv4Address
    count: int = Field(ge=1, le=12)
    ratio: float = Field(ge=0, le=1)
    code: str = Field(pattern=r"^[A-Z]{2}-\d{3}$")
    pair: tuple[int, int]
    color: Color
    kind: typing.Literal["x", "y"]
    pet: typing.Annotated[typing.Union[Cat, Dog], Field(discriminator="kind")]
    home: Address
    note: typing.Optional[Str] = None


def model_of(name, annotation):
    return pydantic.create_model("M_" + name, value=(annotation, ...))


class PydanticCorpusTest(S.ClientTest):
    MODEL = SMOL
    SERVE_ARGS = ("--ctx", "4096", "--threads", "2")

    def ask(self, name, schema, n=3):
        return self.srv.post("/v1/chat/completions", {
            "model": self.model, "max_tokens": 300, "temperature": 0.8, "seed": 7, "n": n,
            "messages": [{"role": "user", "content": f"Give an example {name} value as JSON."}],
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "m", "schema": schema}}})

    def test_every_answer_parses_into_its_model(self):
        for name, annotation in CORPUS.items():
            with self.subTest(name):
                model = model_of(name, annotation)
                schema = model.model_json_schema()
                status, j = self.ask(name, schema)
                self.assertEqual(status, 200, (schema, j))
                for c in j["choices"]:
                    text = c["message"]["content"]
                    if name in UNBOUNDED_DEPTH and c["finish_reason"] == "length":
                        self.assertTrue(text.lstrip().startswith("{"), text)
                        continue
                    self.assertEqual(c["finish_reason"], "stop", text)
                    model.model_validate_json(text)
                    jsonschema.validate(json.loads(text), schema, format_checker=FORMATS)

    def test_refused_types_name_the_keyword(self):
        for name, (annotation, keyword) in REFUSED.items():
            with self.subTest(name):
                status, j = self.ask(name, model_of(name, annotation).model_json_schema(), n=1)
                self.assertEqual(status, 400, j)
                self.assertIn(keyword, j["error"]["message"])

    def test_openai_parse_of_every_kind_at_once(self):
        parse = getattr(self.client.chat.completions, "parse", None) or self.client.beta.chat.completions.parse
        r = parse(model=self.model, messages=[{"role": "user", "content": "Fill in a record as JSON."}],
                  response_format=Everything, max_tokens=1000, temperature=0.7, seed=3, n=2)
        for c in r.choices:
            self.assertEqual(c.finish_reason, "stop", c.message.content)
            self.assertIsInstance(c.message.parsed, Everything)
            jsonschema.validate(json.loads(c.message.content), Everything.model_json_schema(),
                                format_checker=FORMATS)


if __name__ == "__main__":
    unittest.main()

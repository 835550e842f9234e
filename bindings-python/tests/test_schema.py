"""Schemas from type hints and docstrings (schema.py)."""

from __future__ import annotations

import datetime
import enum
from collections.abc import Callable
from typing import Annotated, Any, Literal, Optional

import pydantic
import pytest
from pydantic import Field

import tooljig
from tooljig.schema import from_function


class Address(pydantic.BaseModel):
    """A postal address."""

    city: str
    zip: Annotated[str, Field(pattern=r"^\d{5}$")]


class Units(enum.Enum):
    C = "c"
    F = "f"


class Span(pydantic.BaseModel):
    start: int
    end: int

    @pydantic.model_validator(mode="after")
    def ordered(self) -> "Span":
        if self.end < self.start:
            raise ValueError("end must not be before start")
        return self


class Opaque:
    """A type pydantic has no schema for."""


def test_google_docstring_types_defaults_literals_optionals_and_constraints() -> None:
    def book(
        city: str,
        nights: Annotated[int, Field(ge=1, le=30, description="Nights to stay (theirs).")],
        units: Literal["c", "f"] = "c",
        note: Optional[str] = None,
        tags: list[str] | None = None,
    ) -> dict:
        """Books a room.

        Longer explanation for the model.

        Args:
            city: The city name.
            nights: Ours, overridden by the Field's own description.
            units: Celsius or Fahrenheit.
            note: Anything for the front desk.
        """
        return {}

    tool = from_function(book)
    assert tool.name == "book" and not tool.is_async
    assert tool.description == "Books a room.\n\nLonger explanation for the model."
    s = tool.input_schema
    assert s["type"] == "object" and s["additionalProperties"] is False
    assert s["required"] == ["city", "nights"]
    p = s["properties"]
    assert p["city"] == {"type": "string", "description": "The city name."}
    assert p["nights"] == {"type": "integer", "minimum": 1, "maximum": 30, "description": "Nights to stay (theirs)."}
    assert p["units"] == {"type": "string", "enum": ["c", "f"], "default": "c", "description": "Celsius or Fahrenheit."}
    assert p["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}] and p["note"]["default"] is None
    assert p["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    assert "title" not in s and all("title" not in v for v in p.values())


def test_rest_and_numpy_docstrings_give_descriptions() -> None:
    def rest(a: int) -> None:
        """Does a.

        :param a: The a.
        """

    def numpy(b: int) -> None:
        """Does b.

        Parameters
        ----------
        b : int
            The b.
        """

    assert from_function(rest).input_schema["properties"]["a"]["description"] == "The a."
    assert from_function(numpy).input_schema["properties"]["b"]["description"] == "The b."
    assert from_function(numpy).description == "Does b."


def test_models_and_enums_become_defs() -> None:
    def ship(to: Address, units: Units = Units.C) -> None:
        """Ships."""

    s = from_function(ship).input_schema
    assert s["properties"]["to"] == {"$ref": "#/$defs/Address"}
    assert s["$defs"]["Address"]["properties"]["zip"]["pattern"] == r"^\d{5}$"
    assert s["$defs"]["Units"]["enum"] == ["c", "f"]


async def test_arguments_arrive_as_the_declared_python_types(engine: tooljig.Engine) -> None:
    seen: dict[str, Any] = {}

    @engine.tool
    def ship(to: Address, when: datetime.date, units: Units = Units.C, weight: float = 1) -> str:
        """Ships."""
        seen.update(to=to, when=when, units=units, weight=weight)
        return to.city

    out = await engine.run([{"tool": "ship", "arguments": {"to": {"city": "Lyon", "zip": "69001"}, "when": "2026-11-22", "units": "f", "weight": 2}}])
    assert out[0].envelope == {"ok": True, "data": "Lyon"}
    assert seen["to"] == Address(city="Lyon", zip="69001")
    assert seen["when"] == datetime.date(2026, 11, 22)
    assert seen["units"] is Units.F and isinstance(seen["weight"], float)


async def test_numbers_arrive_as_declared_with_or_without_converting(engine: tooljig.Engine) -> None:
    # ints and floats pass as they are when they have their parameter's type already, and
    # through pydantic when they must be converted: an int from 3.0 (an integer to JSON
    # Schema), a float from 3, a float from an int beyond 2**53 as pydantic makes it; None stays.
    @engine.tool
    def size(n: int, x: float, m: Optional[int] = None, label: str = "") -> list[str]:
        return [repr(v) for v in (n, x, m, label)]

    args = [
        {"n": 3, "x": 2.5, "m": 4, "label": "as is"},
        {"n": 3, "x": 3},
        {"n": 3.0, "x": 2.5, "m": None},
        {"n": 2**62, "x": 2**60, "m": 5.0},
        {"n": -0.0, "x": -(2**53)},
    ]
    out = await engine.run([{"id": str(i), "tool": "size", "arguments": a} for i, a in enumerate(args)])
    assert [r.envelope.get("data") for r in out] == [
        ["3", "2.5", "4", "'as is'"],
        ["3", "3.0", "None", "''"],
        ["3", "2.5", "None", "''"],
        [repr(2**62), repr(float(2**60)), "5", "''"],
        ["0", repr(-float(2**53)), "None", "''"],
    ], [r.envelope for r in out]


async def test_a_number_pydantic_refuses_is_invalid_arguments(engine: tooljig.Engine) -> None:
    # 1e20 is an integer to JSON Schema, but larger than pydantic takes from a float.
    @engine.tool
    def count(n: int) -> int:
        return n

    out = await engine.run([{"tool": "count", "arguments": {"n": 1e20}}])
    assert out[0].error_code == "invalid_arguments", out[0].envelope
    assert out[0].envelope["error"]["errors"][0]["pointer"] == "/n"


async def test_the_schema_is_enforced_before_the_handler(engine: tooljig.Engine) -> None:
    calls: list[object] = []

    @engine.tool
    def book(nights: Annotated[int, Field(ge=1, le=30)], to: Address) -> None:
        calls.append(1)

    out = await engine.run([
        {"id": "range", "tool": "book", "arguments": {"nights": 0, "to": {"city": "x", "zip": "12345"}}},
        {"id": "pattern", "tool": "book", "arguments": {"nights": 2, "to": {"city": "x", "zip": "1"}}},
        {"id": "needs", "tool": "book", "arguments": {"nights": 2}},
        {"id": "extra", "tool": "book", "arguments": {"nights": 2, "to": {"city": "x", "zip": "12345"}, "x": 1}},
    ])
    assert out[0].error_code == "invalid_arguments" and "/nights" in out[0].envelope["error"]["message"]
    assert out[1].error_code == "invalid_arguments" and "/to/zip" in out[1].envelope["error"]["message"]
    assert out[2].envelope == {"ok": False, "needs": {"to": True}}
    assert out[3].error_code == "invalid_arguments"
    assert calls == []


async def test_a_models_own_validator_failing_is_invalid_arguments(engine: tooljig.Engine) -> None:
    @engine.tool
    def span(s: Span) -> int:
        return s.end - s.start

    out = await engine.run([{"tool": "span", "arguments": {"s": {"start": 5, "end": 1}}}])
    err = out[0].envelope["error"]
    assert err["code"] == "invalid_arguments" and "end must not be before start" in err["message"]
    assert err["errors"][0]["pointer"] == "/s"


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda *args: None, r"\*args or \*\*kwargs"),
        (lambda **kw: None, r"\*args or \*\*kwargs"),
        (eval("lambda a, /: None"), "positional-only"),
        (lambda _private: None, "starts with '_'"),
    ],
)
def test_signatures_a_schema_cannot_describe_are_refused(fn: Callable[..., Any], match: str) -> None:
    with pytest.raises(tooljig.UnsupportedTypeError, match=match):
        from_function(fn, name="f")


def test_a_type_without_a_schema_names_its_parameter(engine: tooljig.Engine) -> None:
    def f(ok: int, bad: Opaque) -> None: ...

    def g(cb: Callable[[int], int]) -> None: ...

    with pytest.raises(tooljig.UnsupportedTypeError, match="parameter 'bad'"):
        engine.tool(f)
    with pytest.raises(tooljig.UnsupportedTypeError, match="parameter 'cb'"):
        engine.tool(g)
    with pytest.raises(TypeError):
        engine.tool(g)
    assert engine.specs() == []


def test_unresolvable_hints_are_refused() -> None:
    def f(x: "NoSuchType") -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(tooljig.UnsupportedTypeError, match="cannot resolve its type hints"):
        from_function(f)


def test_names_and_descriptions_can_be_given(engine: tooljig.Engine) -> None:
    @engine.tool(name="weather-now", description="Current weather.")
    async def w(city: str) -> str:
        """Ignored."""
        return city

    spec = engine.specs()[0]
    assert spec["name"] == "weather-now" and spec["description"] == "Current weather."
    assert w.__name__ == "w", "the decorator returns the function itself"


async def test_an_output_schema_from_a_type_is_checked(engine: tooljig.Engine) -> None:
    @engine.tool(output_schema=Address)
    def where(good: bool) -> dict:
        return {"city": "Lyon", "zip": "69001"} if good else {"city": 1}

    assert engine.specs()[0]["output_schema"]["required"] == ["city", "zip"]
    out = await engine.run([{"tool": "where", "arguments": {"good": True}}, {"tool": "where", "arguments": {"good": False}}])
    assert out[0].ok and out[1].error_code == "invalid_output"


async def test_defaults_from_the_signature_are_filled_by_the_core_and_named(engine: tooljig.Engine) -> None:
    @engine.tool
    def forecast(city: str, days: int = 3, unit: str = "celsius") -> dict[str, Any]:
        """Forecast."""
        return {"city": city, "days": days, "unit": unit}

    [out] = await engine.run([{"tool": "forecast", "arguments": {"city": "Oslo", "unit": "fahrenheit"}}])
    assert out.envelope == {"ok": True, "data": {"city": "Oslo", "days": 3, "unit": "fahrenheit"}}
    assert out["defaults"] == ["/days"]
    assert out.arguments == {"city": "Oslo", "days": 3, "unit": "fahrenheit"}

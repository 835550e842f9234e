"""What handlers return or raise, as envelopes (outcome.rs, convert.rs)."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import dataclasses
import datetime
import enum
import json
import math
import uuid

import pydantic
import pytest

import tooljig
from tooljig import ErrorCode, Needs, ToolError

UNEXPECTED = "the tool failed unexpectedly; the details were logged for the app"


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def register(engine: tooljig.Engine, name: str, body, flavour: str) -> None:
    """Registers ``body(args)`` as a sync or an async handler."""
    if flavour == "sync":
        engine.register(name, "", None, lambda args: body(args))
    else:

        async def handler(args):
            await asyncio.sleep(0)
            return body(args)

        engine.register(name, "", None, handler)


async def one(engine: tooljig.Engine, tool: str, arguments=None) -> tooljig.CallResult:
    out = await engine.run([{"id": "x", "tool": tool, "arguments": arguments or {}}])
    return out[0]


class Point(pydantic.BaseModel):
    x: int
    y: int


@dataclasses.dataclass
class Pair:
    a: str
    b: float


class Colour(enum.Enum):
    RED = "red"


async def test_json_values_come_back_as_data(engine: tooljig.Engine, flavour: str) -> None:
    value = {"s": "é", "i": -3, "big": 2**63 + 5, "f": 1.5, "b": True, "n": None, "l": [1, [2]], "t": (1, 2)}
    register(engine, "t", lambda a: value, flavour)
    r = await one(engine, "t")
    assert r.envelope == {"ok": True, "data": {**value, "t": [1, 2]}}


async def test_rich_values_are_serialized_like_pydantic(engine: tooljig.Engine, flavour: str) -> None:
    uid = uuid.UUID(int=7)
    value = {
        "model": Point(x=1, y=2),
        "dataclass": Pair("k", 0.5),
        "when": datetime.datetime(2026, 11, 22, 6, 0, tzinfo=datetime.timezone.utc),
        "id": uid,
        "colour": Colour.RED,
        "keys": {1: "int key", 2.5: "float key", False: "bool key", None: "none key"},
    }
    register(engine, "t", lambda a: value, flavour)
    r = await one(engine, "t")
    assert r.envelope["data"] == {
        "model": {"x": 1, "y": 2},
        "dataclass": {"a": "k", "b": 0.5},
        "when": "2026-11-22T06:00:00Z",
        "id": str(uid),
        "colour": "red",
        "keys": {"1": "int key", "2.5": "float key", "false": "bool key", "null": "none key"},
    }


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (object(), "not JSON-serializable"),
        ({"a": [1, {"b": object()}]}, "value at /a/1/b is a object"),
        ({"f": math.nan}, "JSON cannot represent"),
        ({"deep": 2**70}, "does not fit in 64 bits"),
        ({(1, 2): "tuple key"}, "keys must be strings"),
    ],
)
async def test_a_non_serializable_return_is_an_internal_error_with_the_reason(
    engine: tooljig.Engine, flavour: str, value: object, reason: str
) -> None:
    register(engine, "t", lambda a: value, flavour)
    r = await one(engine, "t")
    assert r.envelope == {"ok": False, "error": {"code": "internal_error", "message": UNEXPECTED, "retryable": False}}
    assert r.detail is not None and reason in r.detail, r.detail


async def test_a_self_containing_value_is_refused_not_a_crash(engine: tooljig.Engine, flavour: str) -> None:
    loop: list[object] = []
    loop.append(loop)
    register(engine, "t", lambda a: loop, flavour)
    r = await one(engine, "t")
    assert r.error_code == "internal_error"
    assert r.detail is not None and "deeper than 512 levels" in r.detail


async def test_an_exception_becomes_an_envelope_and_its_traceback_a_detail(
    engine: tooljig.Engine, flavour: str
) -> None:
    def fail(args):
        raise KeyError("secret-table-name")

    register(engine, "t", fail, flavour)
    r = await one(engine, "t")
    assert r.envelope["error"] == {"code": "internal_error", "message": UNEXPECTED, "retryable": False}
    assert "secret-table-name" not in json.dumps(r.envelope)
    assert r.detail is not None
    assert r.detail.startswith("Traceback (most recent call last):")
    assert "in fail" in r.detail and "KeyError: 'secret-table-name'" in r.detail


async def test_tool_error_chooses_the_code_retryability_and_details(
    engine: tooljig.Engine, flavour: str
) -> None:
    def fail(args):
        raise ToolError(ErrorCode.RATE_LIMITED, "slow down", retry_after_ms=1200)

    def fail_not_retryable(args):
        raise ToolError("external_api_error", "the CRM refused", retryable=False, status=503)

    register(engine, "limited", fail, flavour)
    register(engine, "crm", fail_not_retryable, flavour)
    register(engine, "returned", lambda a: ToolError("not_found", "no such lead", lead="L1"), flavour)
    assert (await one(engine, "limited")).envelope == {
        "ok": False,
        "error": {"code": "rate_limited", "message": "slow down", "retryable": True, "retry_after_ms": 1200},
    }
    crm = await one(engine, "crm")
    assert crm.envelope["error"] == {
        "code": "external_api_error",
        "message": "the CRM refused",
        "retryable": False,
        "status": 503,
    }
    assert crm.detail is None
    assert (await one(engine, "returned")).envelope["error"]["lead"] == "L1"


async def test_needs_raised_or_returned(engine: tooljig.Engine, flavour: str) -> None:
    def raise_needs(args):
        raise Needs("duration_minutes", "attendees")

    register(engine, "raised", raise_needs, flavour)
    register(engine, "returned", lambda a: Needs("when"), flavour)
    assert (await one(engine, "raised")).envelope == {
        "ok": False,
        "needs": {"duration_minutes": True, "attendees": True},
    }
    assert (await one(engine, "returned")).envelope == {"ok": False, "needs": {"when": True}}


def test_tool_error_and_needs_check_their_arguments() -> None:
    with pytest.raises(ValueError, match="unknown error code 'nope'"):
        ToolError("nope", "x")
    with pytest.raises(ValueError):
        Needs()
    with pytest.raises(TypeError):
        Needs(3)  # type: ignore[arg-type]
    e = ToolError("timeout", "slow")
    assert e.code is ErrorCode.TIMEOUT and e.retryable is None and e.details == {}
    assert isinstance(e, tooljig.TooljigError) and isinstance(Needs("a"), tooljig.TooljigError)


async def test_a_tool_error_with_a_non_json_detail_is_an_internal_error(
    engine: tooljig.Engine, flavour: str
) -> None:
    def fail(args):
        raise ToolError("conflict", "taken", holder=object())

    register(engine, "t", fail, flavour)
    r = await one(engine, "t")
    assert r.error_code == "internal_error"
    assert r.detail is not None and "malformed ToolError" in r.detail


async def test_retryable_failures_are_retried_with_the_attempt_in_the_context(engine: tooljig.Engine) -> None:
    attempts: list[int] = []

    @engine.tool(retry=tooljig.Retry(attempts=3, backoff_ms=1))
    def flaky(ctx: tooljig.ToolContext) -> int:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ToolError("external_api_error", "try again")
        return ctx.attempt

    r = await one(engine, "flaky")
    assert r.envelope == {"ok": True, "data": 3}
    assert r.attempts == 3 and attempts == [1, 2, 3]


REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


async def test_handlers_see_the_callers_contextvars(engine: tooljig.Engine, flavour: str) -> None:
    register(engine, "t", lambda a: REQUEST_ID.get(), flavour)
    REQUEST_ID.set("req-42")
    assert (await one(engine, "t")).envelope["data"] == "req-42"


async def test_a_sync_handler_may_return_an_awaitable(engine: tooljig.Engine) -> None:
    async def later(v: int) -> int:
        await asyncio.sleep(0.01)
        return v * 2

    engine.register("t", "", None, lambda args: later(args["v"]))
    r = await one(engine, "t", {"v": 21})
    assert r.envelope == {"ok": True, "data": 42}


async def test_an_object_with_an_async_call_runs_on_the_loop(engine: tooljig.Engine) -> None:
    import threading

    class Handler:
        async def __call__(self, args):
            await asyncio.sleep(0)
            return threading.current_thread().name

    engine.register("t", "", None, Handler())
    assert (await one(engine, "t")).envelope == {"ok": True, "data": threading.current_thread().name}


@pytest.mark.parametrize("kind", ["async", "sync", "sync_on_loop"])
@pytest.mark.parametrize("calls", [1, 40])
async def test_a_handler_that_changes_its_arguments_changes_nothing_the_engine_keeps(
    engine: tooljig.Engine, kind: str, calls: int
) -> None:
    # Each attempt gets arguments of its own, whether they became Python objects on the
    # loop thread (a small batch polled there) or were copied for later: what one attempt
    # did to its dict is seen neither by the next nor in the result.
    seen: list[dict] = []

    def change(args: dict, ctx: tooljig.ToolContext) -> dict:
        seen.append(copy.deepcopy(args))
        args["q"]["deep"].append("changed")
        args["added"] = True
        if ctx.attempt < 2:
            raise ToolError("external_api_error", "try again")
        return args

    async def achange(args: dict, ctx: tooljig.ToolContext) -> dict:
        return change(args, ctx)

    handler = achange if kind == "async" else change
    engine.register(
        "t", "", None, handler, retry=tooljig.Retry(attempts=2, backoff_ms=1),
        sync_to_thread=kind != "sync_on_loop",
    )
    arguments = {"q": {"deep": ["as sent"]}}
    out = await engine.run([{"id": f"c{i}", "tool": "t", "arguments": arguments} for i in range(calls)])
    assert arguments == {"q": {"deep": ["as sent"]}}
    for r in out:
        assert r.envelope == {"ok": True, "data": {"q": {"deep": ["as sent", "changed"]}, "added": True}}
        assert r.arguments == {"q": {"deep": ["as sent"]}}
        assert r.attempts == 2
    assert len(seen) == 2 * calls
    assert all(s == {"q": {"deep": ["as sent"]}} for s in seen)

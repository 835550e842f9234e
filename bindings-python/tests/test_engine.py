"""Registering tools and running batches (engine.py, engine.rs)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import tooljig

OBJECT = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def test_registration_errors_raise_at_registration_by_type(engine: tooljig.Engine) -> None:
    engine.register("search", "Searches.", OBJECT, lambda args: args)
    with pytest.raises(tooljig.DuplicateToolError, match='a tool named "search" is already registered'):
        engine.register("search", "Again.", OBJECT, lambda args: args)
    with pytest.raises(tooljig.InvalidToolNameError, match="has '.'"):
        engine.register("calendar.create", "", OBJECT, lambda args: args)
    with pytest.raises(tooljig.InvalidSchemaError, match="input schema"):
        engine.register("broken", "", {"type": 12}, lambda args: args)
    with pytest.raises(tooljig.InvalidSchemaError, match="output schema"):
        engine.register("broken2", "", OBJECT, lambda args: args, output_schema={"minimum": "zero"})
    with pytest.raises(tooljig.InvalidPolicyError, match="invalid policy"):
        engine.register("zero", "", OBJECT, lambda args: args, retry={"attempts": 0})
    with pytest.raises(tooljig.InvalidPolicyError, match="unknown field `retires`"):
        engine.register("typo", "", OBJECT, lambda args: args, retires=3)
    for cls in (tooljig.DuplicateToolError, tooljig.InvalidSchemaError, tooljig.UnsupportedTypeError):
        assert issubclass(cls, tooljig.RegistrationError) and issubclass(cls, tooljig.TooljigError)

    @engine.tool
    def dup() -> None: ...

    with pytest.raises(tooljig.DuplicateToolError):

        @engine.tool(name="dup")
        def other() -> None: ...

    assert [s["name"] for s in engine.specs()] == ["search", "dup"]


async def test_boolean_schemas_register_as_json_schema_defines_them(engine: tooljig.Engine) -> None:
    engine.register("anything", "Takes anything.", True, lambda args: args, output_schema=True)
    engine.register("nothing", "Takes nothing.", False, lambda args: args)
    assert [s["input_schema"] for s in engine.specs()] == [True, False]
    out = await engine.run([
        {"tool": "anything", "arguments": {"x": 1}},
        {"tool": "nothing", "arguments": {}},
    ])
    assert out[0].envelope == {"ok": True, "data": {"x": 1}}
    assert out[1].error_code == "invalid_arguments"


async def test_a_handlers_own_validation_reports_violations_in_the_cores_words(
    engine: tooljig.Engine,
) -> None:
    def book(args: dict[str, int]) -> None:
        raise tooljig.InvalidArguments((("slots", 0, "a/b~"), "overlaps"), ((), "too early"))

    engine.register("book", "Books.", {"type": "object"}, book)
    [r] = await engine.run([{"tool": "book", "arguments": {}}])
    error = r.envelope["error"]
    assert error["message"] == (
        "arguments do not match the tool's schema: at /slots/0/a~1b~0: overlaps; too early"
    )
    assert error["errors"] == [
        {"pointer": "/slots/0/a~1b~0", "message": "overlaps"},
        {"pointer": "", "message": "too early"},
    ]


async def test_raw_schema_tools_get_the_arguments_dict_and_optionally_the_context(engine: tooljig.Engine) -> None:
    engine.register("one", "One argument.", OBJECT, lambda args: args["q"].upper())

    async def two(args: dict, ctx: tooljig.ToolContext) -> str:
        return f"{args['q']}@{ctx.call_id}"

    engine.register("two", "Two arguments.", OBJECT, two, timeout_ms=1000)
    engine.register("client", "Runs on the client.", OBJECT, None)
    out = await engine.run([
        {"id": "a", "tool": "one", "arguments": {"q": "x"}},
        {"id": "b", "tool": "two", "arguments": '{"q": "y"}'},
        {"id": "c", "tool": "client", "arguments": {"q": "z"}},
        {"id": "d", "tool": "one", "arguments": {}},
    ])
    assert out[0].envelope == {"ok": True, "data": "X"}
    assert out[1].envelope == {"ok": True, "data": "y@b"}
    assert out[2].status == "pending_external" and out[2].error_code == "pending_external"
    assert out[3].envelope == {"ok": False, "needs": {"q": True}}
    spec = engine.specs()[1]
    assert spec["input_schema"] == OBJECT and spec["policy"]["timeout_ms"] == 1000


async def test_parallel_dependent_repaired_and_failing_calls(engine: tooljig.Engine) -> None:
    @engine.tool
    async def lookup(name: str) -> dict:
        await asyncio.sleep(0.02)
        return {"id": len(name), "name": name}

    @engine.tool
    def greet(user_id: int) -> str:
        return f"hello #{user_id}"

    @engine.tool
    def boom() -> None:
        raise ValueError("nope")

    out = await engine.run([
        {"id": "a", "tool": "lookup", "arguments": "{'name': 'Ada',}"},
        {"id": "b", "tool": "greet", "arguments": {"user_id": {"$from": "a", "pointer": "/id"}}},
        {"id": "c", "tool": "boom"},
        {"id": "d", "tool": "greet", "arguments": {"user_id": 1}, "depends_on": ["c"]},
        {"id": "e", "tool": "lookp", "arguments": {}},
    ])
    assert out.get("a").repaired  # type: ignore[union-attr]
    assert out[1].envelope == {"ok": True, "data": "hello #3"}
    assert out[2].error_code == "internal_error" and "ValueError: nope" in (out[2].detail or "")
    assert out[3].error_code == "dependency_failed"
    assert out[4].error_code == "unknown_tool" and "lookup" in out[4].envelope["error"]["message"]


async def test_batch_options_reach_the_core(engine: tooljig.Engine) -> None:
    @engine.tool
    def one() -> int:
        return 1

    out = await engine.run([{"tool": "one"}] * 4, max_calls=2, concurrency=1, deadline_ms=5000)
    assert [r.error_code for r in out] == [None, None, "too_many_calls", "too_many_calls"]
    with pytest.raises(tooljig.InvalidInputError, match="unknown field `paralel`"):
        await engine.run([], paralel=3)


async def test_malformed_calls_are_refused_with_the_reason(engine: tooljig.Engine) -> None:
    with pytest.raises(tooljig.InvalidInputError, match="invalid calls"):
        await engine.run([{"id": "a"}])
    with pytest.raises(tooljig.InvalidInputError, match="unknown field `tol`"):
        await engine.run([{"tool": "x", "tol": 1}])
    # One call handed over where a list belongs is named as such, not read as its keys.
    for not_a_list in ({"tool": "x"}, "x"):
        with pytest.raises(tooljig.InvalidInputError, match="expected a list of calls"):
            await engine.run(not_a_list)  # type: ignore[arg-type]
    # Arguments without a JSON form refuse their own call only.
    out = await engine.run([{"tool": "x", "arguments": object()}])
    assert out.results[0].error_code == "unknown_tool"


def test_run_sync_runs_sync_and_async_handlers(engine: tooljig.Engine) -> None:
    @engine.tool
    async def a() -> str:
        await asyncio.sleep(0.01)
        return "a"

    @engine.tool
    def s() -> str:
        return "s"

    out = engine.run_sync([{"tool": "a"}, {"tool": "s"}], caller={"principal": "u"})
    assert out.envelopes() == [{"ok": True, "data": "a"}, {"ok": True, "data": "s"}]


async def test_run_sync_refuses_a_running_loop(engine: tooljig.Engine) -> None:
    with pytest.raises(RuntimeError, match="await engine.run"):
        engine.run_sync([])


def test_the_native_start_needs_a_running_loop(engine: tooljig.Engine) -> None:
    with pytest.raises(RuntimeError, match="running event loop"):
        engine._native.start([], None, None, False)


def test_limits_and_schema_resources() -> None:
    engine = tooljig.Engine(
        limits={"max_argument_bytes": 64},
        schema_resources={"https://example.com/place.json": {"type": "object", "required": ["city"]}},
    )
    engine.register("go", "", {"type": "object", "properties": {"to": {"$ref": "https://example.com/place.json"}}}, lambda a: a)
    out = engine.run_sync([
        {"id": "big", "tool": "go", "arguments": {"to": {"city": "x" * 100}}},
        {"id": "ref", "tool": "go", "arguments": {"to": {}}},
    ])
    assert out[0].error_code == "arguments_too_large"
    assert out[1].envelope == {"ok": False, "needs": {"to.city": True}}
    with pytest.raises(tooljig.InvalidInputError, match="unknown field `max_bytes`"):
        tooljig.Engine(limits={"max_bytes": 1})


async def test_engines_are_independent_and_reusable(engine: tooljig.Engine) -> None:
    other = tooljig.Engine()

    @engine.tool
    def t() -> int:
        return 1

    @other.tool(name="t")
    def t2() -> int:
        return 2

    for _ in range(3):
        a, b = await asyncio.gather(engine.run([{"tool": "t"}]), other.run([{"tool": "t"}]))
        assert (a[0].envelope["data"], b[0].envelope["data"]) == (1, 2)


def test_batches_from_threads_each_with_their_own_loop(engine: tooljig.Engine) -> None:
    import threading

    @engine.tool
    async def nap(i: int) -> int:
        await asyncio.sleep(0.05)
        return i

    results: dict[int, int] = {}

    def worker(i: int) -> None:
        results[i] = engine.run_sync([{"tool": "nap", "arguments": {"i": i}}])[0].envelope["data"]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {0: 0, 1: 1, 2: 2, 3: 3}
    assert time.perf_counter() - t0 < 1


async def test_guardrail_policy_fields_settings_visibility_and_telemetry() -> None:
    engine = tooljig.Engine(settings={"system": {"search_web": False}})

    @engine.tool
    def search_web(q: str) -> str:
        return q

    @engine.tool(scopes=["calendar.read"], hidden={"user_id": {"from": "principal"}})
    def list_events(day: str, user_id: str) -> dict:
        return {"day": day, "user": user_id}

    caller = tooljig.Caller(principal="u1", scopes=["calendar.read"])
    assert [s["name"] for s in engine.specs_for(caller)] == ["list_events"]
    assert engine.specs_for(caller)[0]["input_schema"]["properties"].keys() == {"day"}
    assert engine.specs_for({"principal": "u2"}) == []
    out = await engine.run(
        [
            {"id": "off", "tool": "search_web", "arguments": {"q": "x"}},
            {"id": "ok", "tool": "list_events", "arguments": {"day": "mon", "user_id": "forged"}},
        ],
        caller=caller,
    )
    assert out[0].error_code == "permission_denied"
    assert out[1].envelope == {"ok": True, "data": {"day": "mon", "user": "u1"}}
    out = await engine.run([{"tool": "list_events", "arguments": {"day": "mon"}}], caller={"principal": "u2"})
    assert out[0].error_code == "scopes_missing"

    engine.settings = {"system": {"search_web": True}}
    assert engine.settings["system"] == {"search_web": True}
    out = await engine.run([{"tool": "search_web", "arguments": {"q": "x"}}], caller=caller)
    assert out[0].envelope == {"ok": True, "data": "x"}
    snapshot = engine.telemetry()
    assert "search_web" in snapshot["tools"] and "list_events" in snapshot["tools"]
    with pytest.raises(tooljig.InvalidInputError, match="invalid settings"):
        engine.settings = {"sytem": {}}


def test_one_call_with_arguments_json_cannot_carry_is_refused_alone() -> None:
    engine = tooljig.Engine()
    engine.register("echo", "Echoes.", None, lambda args: args)
    deep: Any = 1
    for _ in range(600):
        deep = [deep]
    hostile = {
        "big": {"n": 2**64 + 1},
        "nan": {"x": float("nan")},
        "inf": {"x": float("inf")},
        "surrogate": {"s": "a\ud800b"},
        "bytes": {"b": b"\xff\xfe"},
        "deep": {"d": deep},
    }
    calls = [{"id": k, "tool": "echo", "arguments": v} for k, v in hostile.items()]
    calls.append({"id": "fine", "tool": "echo", "arguments": {"n": 2**63}})
    out = engine.run_sync(calls)
    for k in hostile:
        r = out.get(k)
        assert r is not None and r.error_code == "invalid_arguments", (k, r and r.envelope)
        assert "could not be read" in r.envelope["error"]["message"]
    assert out.get("big").envelope["error"]["message"].count("64 bits") == 1  # type: ignore[union-attr]
    assert out.get("fine").envelope == {"ok": True, "data": {"n": 2**63}}  # type: ignore[union-attr]
    # A call whose own fields are wrong still refuses the batch, naming the call.
    with pytest.raises(tooljig.InvalidInputError, match=r"calls\[0\]"):
        engine.run_sync([{"id": object(), "tool": "echo", "arguments": {"x": float("nan")}}])


async def test_search_tools_finds_what_a_caller_may_use_and_the_model_can_search_too() -> None:
    engine = tooljig.Engine()

    @engine.tool
    def get_weather(city: str) -> int:
        """Current weather of a city."""
        return 21

    @engine.tool
    def send_email(to: str) -> str:
        """Sends an email."""
        return "sent"

    @engine.tool(scopes=["admin"])
    def reset_weather_station() -> str:
        """Resets the weather station."""
        return "reset"

    engine.enable_tool_search()
    found = [s["name"] for s in engine.search_tools("weather in Paris", caller={"principal": "alice"})]
    assert found[0] == "get_weather" and "reset_weather_station" not in found
    [out] = await engine.run([{"tool": "search_tools", "arguments": {"query": "email someone"}}], caller={"principal": "alice"})
    assert out.envelope["data"][0]["name"] == "send_email"

"""An engine whose own callables hold it is freed by Python's cycle collector (collect.rs),
and never while something still uses it."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import tooljig

OBJECT = {"type": "object"}


def _holding(kind: str) -> tuple[weakref.ref[tooljig.Engine], list[Any]]:
    """An engine whose `kind` of callable holds it (the engine reaches it only through the
    native engine), after one batch has run through it; the app keeps nothing but a weak
    reference. Returns that reference and the list the callables write what they saw to."""
    seen: list[Any] = []
    held: dict[str, tooljig.Engine] = {}

    def uses_engine(*_: Any) -> Any:
        seen.append(len(held["engine"].specs()))
        return True

    async def uses_engine_async(*_: Any) -> Any:
        await asyncio.sleep(0)
        return uses_engine()

    def resolve(_: dict[str, Any]) -> dict[str, Any]:
        uses_engine()
        return {"status": "found", "value": "u1"}

    options: dict[str, Any] = {
        "policy_hook": uses_engine if kind == "policy_hook" else None,
        "resolvers": {"users": resolve} if kind == "resolver" else None,
        "approval_predicate": (lambda q: uses_engine() and False) if kind == "approval_predicate" else None,
    }
    engine = tooljig.Engine(**options)
    held["engine"] = engine
    handler = {"async": uses_engine_async, "on_loop": uses_engine}.get(kind, uses_engine)
    schema: dict[str, Any] = OBJECT
    policy: dict[str, Any] = {}
    if kind == "resolver":
        schema = {
            "type": "object",
            "properties": {"name": {"type": "string"}, "user": {"type": "string"}},
            "required": ["name", "user"],
        }
        policy["hidden"] = {"user": {"from": "resolver", "resolver": "users", "input": "name"}}
    engine.register(
        "t",
        "Uses its engine.",
        schema,
        handler,
        to_model_output=(lambda data: uses_engine()) if kind == "to_model_output" else None,
        on_success=uses_engine if kind == "on_success" else None,
        sync_to_thread=kind != "on_loop",
        **policy,
    )
    if kind == "compensation":
        engine.compensate_with("t", uses_engine)
    result = engine.run_sync([{"id": "1", "tool": "t", "arguments": {"name": "ann"} if kind == "resolver" else {}}])
    assert result[0].envelope["ok"], result[0].envelope
    return weakref.ref(engine), seen


KINDS = [
    "handler",
    "async",
    "on_loop",
    "policy_hook",
    "resolver",
    "approval_predicate",
    "to_model_output",
    "on_success",
    "compensation",
]


@pytest.mark.parametrize("kind", KINDS)
def test_an_engine_its_callables_hold_is_collected(kind: str) -> None:
    engine, seen = _holding(kind)
    if kind != "compensation":  # a compensation runs only in a rollback
        assert seen, f"the {kind} did not run"
    gc.collect()
    assert engine() is None, f"an engine held by its {kind} stayed alive: {gc.get_referrers(engine())}"


def test_an_engine_with_tool_search_its_handlers_hold_is_collected() -> None:
    """`search_tools` looks at its engine's tools without holding them."""

    def make() -> weakref.ref[tooljig.Engine]:
        engine = tooljig.Engine()
        engine.enable_tool_search()

        @engine.tool()
        def count() -> int:
            """Counts the engine's tools."""
            return len(engine.specs())

        out = engine.run_sync([{"tool": "search_tools", "arguments": {"query": "count tools"}}, {"tool": "count", "arguments": {}}])
        assert [t["name"] for t in out[0].envelope["data"]] == ["count"]
        assert out[1].envelope == {"ok": True, "data": 2}
        return weakref.ref(engine)

    engine = make()
    gc.collect()
    assert engine() is None


def test_many_engines_their_handlers_hold_are_freed() -> None:
    refs = [_holding(kind)[0] for _ in range(30) for kind in ("handler", "async", "policy_hook")]
    gc.collect()
    assert [r for r in refs if r() is not None] == []


async def _collected_while_waiting(work: Awaitable[Any], started: asyncio.Event, release: asyncio.Event) -> Any:
    """Runs `work`, which the app holds no other way, collecting while it waits, then lets it
    finish: what it returns."""
    task = asyncio.ensure_future(work)
    del work
    await started.wait()
    for _ in range(3):
        gc.collect()
        await asyncio.sleep(0)
    release.set()
    return await task


async def test_an_engine_in_use_is_not_collected() -> None:
    """The app lets go of an engine while its batch waits in a handler: collections meanwhile
    must leave the handler, its closure and the engine whole."""
    release = asyncio.Event()
    started = asyncio.Event()

    def make() -> Callable[[], Any]:
        holder: dict[str, Any] = {}

        async def waits(args: dict[str, Any]) -> Any:
            started.set()
            await release.wait()
            return [spec["name"] for spec in holder["engine"].specs()]

        engine = tooljig.Engine()
        holder["engine"] = engine
        engine.register("waits", "Waits.", OBJECT, waits)
        return lambda: engine.run([{"id": "1", "tool": "waits", "arguments": {}}])

    result = await _collected_while_waiting(make()(), started, release)
    assert result[0].envelope == {"ok": True, "data": ["waits"]}


def test_a_sync_handler_running_on_a_thread_survives_collections() -> None:
    """A `def` handler runs on a worker thread while the app's thread collects: the call it
    runs holds its callable, so the collector leaves it whole."""
    entered = threading.Event()
    release = threading.Event()
    out: list[Any] = []

    def start() -> tuple[weakref.ref[tooljig.Engine], threading.Thread]:
        holder: dict[str, Any] = {}

        def blocks(args: dict[str, Any]) -> Any:
            entered.set()
            release.wait(10)
            return len(holder["engine"].specs())

        engine = tooljig.Engine()
        holder["engine"] = engine
        engine.register("blocks", "Blocks.", OBJECT, blocks)
        calls = [{"id": "1", "tool": "blocks", "arguments": {}}]
        runner = threading.Thread(target=lambda: out.append(engine.run_sync(calls)))
        runner.start()
        return weakref.ref(engine), runner

    ref, runner = start()
    assert entered.wait(10)
    for _ in range(5):
        gc.collect()
    release.set()
    runner.join(10)
    assert out[0][0].envelope == {"ok": True, "data": 1}
    del runner
    out.clear()
    gc.collect()
    assert ref() is None


async def test_an_engine_an_mcp_server_serves_is_not_collected() -> None:
    """The app keeps only the server of an engine whose tool holds it: collections leave the
    engine whole while it serves, and free it once the server stops."""

    def serve() -> tuple[weakref.ref[tooljig.Engine], tooljig.McpServer]:
        holder: dict[str, tooljig.Engine] = {}
        engine = tooljig.Engine()
        holder["engine"] = engine

        @engine.tool()
        def count() -> int:
            """Counts the engine's tools."""
            return len(holder["engine"].specs())

        return weakref.ref(engine), engine.serve_mcp()

    ref, server = serve()
    for _ in range(3):
        gc.collect()
    client = tooljig.Engine()
    connection = await client.connect_mcp(server.url, prefix="s_")
    out = await client.run([{"tool": "s_count", "arguments": {}}])
    # The server's envelope is the tool's structured content.
    assert out[0].envelope == {"ok": True, "data": {"ok": True, "data": 1}}
    await connection.close()
    await server.stop()
    del server
    gc.collect()
    assert ref() is None, "stopped, the server lets go of the engine"


def test_a_model_its_callable_holds_is_collected() -> None:
    """A model over a callable that holds the model (here to count its own name), used by an
    agent that is gone afterwards."""
    from tooljig.agent import Agent, AgentState, ModelClient

    class Marker:
        """Lives as long as the model's callable (a native model takes no weak reference)."""

    def make() -> weakref.ref[Any]:
        held: dict[str, Any] = {"marker": Marker()}

        def answer(request: dict[str, Any], emit: Any) -> str:
            return f"I am {held['model'].name}."

        model = ModelClient(answer, name="self")
        held["model"] = model
        out = Agent(tooljig.Engine(), model).run_sync(AgentState("Who are you?"))
        assert out.answer == "I am self."
        return weakref.ref(held["marker"])

    marker = make()
    gc.collect()
    assert marker() is None


@pytest.mark.parametrize("holder", ["tool", "select_tools", "model"])
def test_an_agent_its_tools_hooks_or_model_hold_is_collected(holder: str) -> None:
    """The agent's engine and models are Python objects to the collector: an agent whose
    tool, tool picker or model holds it is freed with its engine once the app lets go."""
    from tooljig.agent import Agent, AgentState, ModelClient

    class Marker:
        """Lives as long as the agent."""

    def make() -> weakref.ref[Any]:
        held: dict[str, Any] = {"marker": Marker()}

        def uses_agent(for_: str) -> int:
            return len(held["agent"].options) if holder == for_ else 0

        engine = tooljig.Engine()

        @engine.tool()
        def options() -> int:
            """Counts the agent's options."""
            return uses_agent("tool")

        def pick(message: str, tools: list[dict[str, Any]]) -> list[str]:
            uses_agent("select_tools")
            return [t["name"] for t in tools]

        turns: list[Any] = [{"tool_calls": [{"id": "c1", "name": "options", "arguments": "{}"}]}, "Done."]

        def plan(request: dict[str, Any], emit: Any) -> Any:
            uses_agent("model")
            return turns.pop(0)

        agent = Agent(engine, ModelClient(plan), select_tools=pick)
        held["agent"] = agent
        out = agent.run_sync(AgentState("How many options?"))
        assert out.answer == "Done.", out
        return weakref.ref(held["marker"])

    marker = make()
    gc.collect()
    assert marker() is None


async def test_an_agent_in_use_is_not_collected() -> None:
    """The app lets go of an agent while its run waits in a tool that holds the agent."""
    from tooljig.agent import Agent, AgentState, ModelClient

    release = asyncio.Event()
    started = asyncio.Event()

    def start() -> Awaitable[Any]:
        held: dict[str, Any] = {}
        engine = tooljig.Engine()

        @engine.tool()
        async def waits() -> int:
            """Waits, then counts the agent's options."""
            started.set()
            await release.wait()
            return len(held["agent"].options)

        turns: list[Any] = [{"tool_calls": [{"id": "c1", "name": "waits", "arguments": "{}"}]}, "Done."]
        agent = Agent(engine, ModelClient(lambda request, emit: turns.pop(0)))
        held["agent"] = agent
        return agent.run(AgentState("Wait."))

    out = await _collected_while_waiting(start(), started, release)
    assert out.answer == "Done."
    assert out.counters["tool_successes"] == 1

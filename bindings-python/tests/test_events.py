"""Events as an async iterator (events.rs, host.rs, EventStream)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

import tooljig


async def test_a_stream_yields_every_event_in_order_then_the_result(engine: tooljig.Engine) -> None:
    @engine.tool(retry=tooljig.Retry(attempts=2, backoff_ms=1))
    def flaky(ctx: tooljig.ToolContext) -> int:
        if ctx.attempt == 1:
            raise tooljig.ToolError("external_api_error", "once")
        return 1

    @engine.tool
    async def after(x: int) -> int:
        return x + 1

    calls = [
        {"id": "a", "tool": "flaky"},
        {"id": "b", "tool": "after", "arguments": {"x": {"$from": "a", "pointer": ""}}},
    ]
    stream = engine.stream(calls)
    events = [e async for e in stream]
    types = [e.type for e in events]
    assert types[0] == "batch_started" and types[-1] == "batch_finished"
    assert types.count("call_planned") == 2
    assert types.count("call_retried") == 1
    assert types.count("call_finished") == 2
    finished = [e for e in events if e.type == "call_finished"]
    assert [e.call_id for e in finished] == ["a", "b"]
    assert finished[1].result is not None and finished[1].result.envelope == {"ok": True, "data": 2}
    retried = next(e for e in events if e.type == "call_retried")
    assert retried["attempt"] == 1 and retried["error"]["code"] == "external_api_error"
    assert retried.to_dict()["call_id"] == "a"
    assert [e.at_us for e in events] == sorted(e.at_us for e in events)
    assert [r.envelope["data"] for r in stream.result] == [1, 2]


async def test_the_loop_runs_while_events_arrive(engine: tooljig.Engine) -> None:
    @engine.tool
    async def nap(i: int) -> int:
        await asyncio.sleep(0.01 * i)
        return i

    seen = []
    async for event in engine.stream([{"tool": "nap", "arguments": {"i": i}} for i in range(5)]):
        if event.type == "call_finished":
            seen.append(event.result.envelope["data"])  # type: ignore[union-attr]
    assert seen == [0, 1, 2, 3, 4]


async def test_leaving_the_stream_early_cancels_the_batch(engine: tooljig.Engine) -> None:
    cancelled = asyncio.Event()

    @engine.tool
    async def hang() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async with engine.stream([{"tool": "hang"}]) as stream:
        async for event in stream:
            if event.type == "call_started":
                break
    await asyncio.wait_for(cancelled.wait(), 10)  # generous: a loaded CI machine


async def test_the_result_is_unavailable_before_the_end(engine: tooljig.Engine) -> None:
    @engine.tool
    def one() -> int:
        return 1

    stream = engine.stream([{"tool": "one"}])
    with pytest.raises(RuntimeError):
        _ = stream.result
    async for _ in stream:
        pass
    assert stream.result[0].envelope == {"ok": True, "data": 1}


async def test_progress_and_partial_outputs_reach_the_events_and_only_the_result_is_checked(
    engine: tooljig.Engine,
) -> None:
    @engine.tool(output_schema={"type": "array", "minItems": 3})
    def count(n: int, ctx: tooljig.ToolContext) -> list[int]:
        ctx.progress(0.5, "half way")
        ctx.progress(fraction=float("nan"), message="still going")
        ctx.partial([1])
        return list(range(1, n + 1))

    @engine.tool(output_schema={"type": "array", "minItems": 3})
    async def grow(n: int) -> AsyncIterator[list[int]]:
        """Yields longer and longer lists: each a partial output, the last the result."""
        for i in range(1, n + 1):
            await asyncio.sleep(0)
            yield list(range(1, i + 1))

    calls = [{"id": "a", "tool": "count", "arguments": {"n": 3}}, {"id": "b", "tool": "grow", "arguments": {"n": 3}}]
    stream = engine.stream(calls)
    events = [e async for e in stream]
    progress = [e.to_dict() for e in events if e.type == "call_progress"]
    a = [p for p in progress if p["call_id"] == "a"]
    assert a[0]["fraction"] == 0.5 and a[0]["message"] == "half way"
    assert "fraction" not in a[1] and a[1]["message"] == "still going"
    assert a[2]["output"] == [1]
    assert [p["output"] for p in progress if p["call_id"] == "b"] == [[1], [1, 2], [1, 2, 3]]
    assert [r.envelope for r in stream.result] == [{"ok": True, "data": [1, 2, 3]}] * 2
    # Unheard, reporting is a no-op, and a generator's last value is still the result.
    out = await engine.run([{"tool": "grow", "arguments": {"n": 4}}])
    assert out[0].envelope == {"ok": True, "data": [1, 2, 3, 4]}


async def test_batch_started_tells_the_run_id_so_the_batch_is_cancelled_from_outside(tmp_path: Any) -> None:
    # The id is known before any handler runs: an operator or a web request stops the run by it.
    engine = tooljig.Engine(state_store=f"sqlite://{tmp_path / 'runs.db'}")

    async def hold(args: dict[str, Any], ctx: tooljig.ToolContext) -> str:
        while not ctx.cancelled:
            await asyncio.sleep(0.01)
        return "stopped"

    engine.register("hold", "Waits until cancelled.", None, hold)
    stream = engine.stream([{"id": "h", "tool": "hold", "arguments": {}}])
    run_id = None
    async for event in stream:
        if event.type == "batch_started":
            run_id = event["run_id"]
            assert await engine.cancel_run(run_id, "the user left") is True
    assert run_id is not None and stream.result is not None
    assert [r.envelope["error"]["code"] for r in stream.result] == ["cancelled"]

"""Parallelism is real (handler.rs, host.rs, workers.rs): async handlers overlap on the
caller's loop; sync handlers overlap on worker threads while the loop stays responsive."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import tooljig


async def test_ten_async_sleeps_of_200ms_finish_under_300ms(engine: tooljig.Engine) -> None:
    @engine.tool
    async def nap(i: int) -> int:
        await asyncio.sleep(0.2)
        return i

    calls = [{"id": f"c{i}", "tool": "nap", "arguments": {"i": i}} for i in range(10)]
    t0 = time.perf_counter()
    out = await engine.run(calls)
    elapsed = time.perf_counter() - t0
    assert [r.envelope for r in out] == [{"ok": True, "data": i} for i in range(10)]
    assert elapsed < 0.3, f"10 parallel 200 ms sleeps took {elapsed:.3f} s"


async def test_ten_sync_sleeps_of_200ms_finish_under_500ms_while_a_ticker_ticks(
    engine: tooljig.Engine,
) -> None:
    threads: set[str] = set()

    @engine.tool
    def block(i: int) -> int:
        threads.add(threading.current_thread().name)
        time.sleep(0.2)
        return i

    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.02)
    calls = [{"id": f"c{i}", "tool": "block", "arguments": {"i": i}} for i in range(10)]
    t0 = time.perf_counter()
    out = await engine.run(calls)
    t1 = time.perf_counter()
    task.cancel()
    assert [r.envelope for r in out] == [{"ok": True, "data": i} for i in range(10)]
    assert t1 - t0 < 0.5, f"10 parallel 200 ms sync sleeps took {t1 - t0:.3f} s"
    during = [t for t in ticks if t0 <= t <= t1]
    gaps = [b - a for a, b in zip(during, during[1:])]
    # A 10 ms ticker over ~200 ms: it keeps ticking, never stalled behind a handler.
    assert len(during) >= 10, f"the loop ticked {len(during)} times in {t1 - t0:.3f} s"
    assert max(gaps) < 0.1, f"the loop stalled for {max(gaps):.3f} s"
    assert threading.current_thread().name not in threads, "a sync handler ran on the loop thread"
    assert len(threads) >= 5


async def test_sync_and_async_handlers_overlap_in_one_batch(engine: tooljig.Engine) -> None:
    @engine.tool
    def slow_sync() -> str:
        time.sleep(0.2)
        return "sync"

    @engine.tool
    async def slow_async() -> str:
        await asyncio.sleep(0.2)
        return "async"

    t0 = time.perf_counter()
    out = await engine.run([{"id": "s", "tool": "slow_sync"}, {"id": "a", "tool": "slow_async"}])
    assert time.perf_counter() - t0 < 0.35
    s, a = out.get("s"), out.get("a")
    assert s is not None and a is not None
    assert s.started_us is not None and a.started_us is not None
    assert s.started_us < a.finished_us and a.started_us < s.finished_us


async def test_concurrency_caps_parallel_handlers(engine: tooljig.Engine) -> None:
    running = 0
    peak = 0

    @engine.tool
    async def track() -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1

    out = await engine.run([{"tool": "track"} for _ in range(12)], concurrency=3)
    assert all(r.ok for r in out)
    assert peak == 3


async def test_a_thousand_calls_settle(engine: tooljig.Engine) -> None:
    @engine.tool
    async def a(i: int) -> int:
        return i

    @engine.tool
    def s(i: int) -> int:
        return -i

    calls = [{"tool": "a" if i % 2 else "s", "arguments": {"i": i}} for i in range(1000)]
    out = await engine.run(calls)
    assert [r.envelope["data"] for r in out] == [i if i % 2 else -i for i in range(1000)]


async def test_sync_to_thread_false_runs_a_def_handler_on_the_loop_thread(
    engine: tooljig.Engine,
) -> None:
    where: dict[str, set[int]] = {"loop": set(), "thread": set()}

    @engine.tool(sync_to_thread=False)
    def on_loop(i: int, ctx: tooljig.ToolContext) -> dict[str, object]:
        where["loop"].add(threading.get_ident())
        return {"i": i, "call": ctx.call_id}

    @engine.tool
    def on_thread(i: int) -> int:
        where["thread"].add(threading.get_ident())
        return i

    # One call (the batch polled on the loop) and many (driven from a runtime thread).
    for n in (1, 300):
        calls = [
            {"id": f"c{i}", "tool": "on_loop" if i % 2 == 0 else "on_thread", "arguments": {"i": i}}
            for i in range(n)
        ]
        out = await engine.run(calls)
        assert [r.envelope["data"] for r in out] == [
            {"i": i, "call": f"c{i}"} if i % 2 == 0 else i for i in range(n)
        ]
    assert where["loop"] == {threading.get_ident()}
    assert threading.get_ident() not in where["thread"]


async def test_a_def_handler_on_the_loop_sees_a_copy_of_the_callers_contextvars(
    engine: tooljig.Engine,
) -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    def seen_then_set(tag: str) -> str:
        before = var.get()
        var.set(tag)
        return before

    engine.register("peek", "Reads then sets a context variable.", None, lambda a: seen_then_set(a["tag"]),
                    sync_to_thread=False)
    var.set("caller")
    out = await engine.run([{"tool": "peek", "arguments": {"tag": f"t{i}"}} for i in range(3)])
    assert [r.envelope for r in out] == [{"ok": True, "data": "caller"}] * 3
    assert var.get() == "caller", "a handler's set() leaked into the caller"


async def test_a_def_handler_on_the_loop_fails_awaits_and_guards_like_any_other(
    engine: tooljig.Engine,
) -> None:
    @engine.tool(sync_to_thread=False)
    def boom() -> None:
        raise ValueError("secret detail")

    @engine.tool(sync_to_thread=False, name="later")
    def returns_awaitable() -> object:
        async def later() -> str:
            await asyncio.sleep(0.01)
            return "awaited"

        return later()

    @engine.tool(sync_to_thread=False)
    def refuses() -> None:
        raise tooljig.ToolError("not_found", "no such order")

    out = await engine.run(
        [
            {"id": "b", "tool": "boom"},
            {"id": "l", "tool": "later"},
            {"id": "r", "tool": "refuses"},
            {"id": "w", "tool": "boom", "arguments": {"unexpected": 1}},
        ]
    )
    b, later, r, wrong = (out.get(i) for i in "blrw")
    assert b is not None and b.envelope["error"]["code"] == "internal_error"
    assert "secret detail" not in b.envelope["error"]["message"]
    assert b.detail is not None and "secret detail" in b.detail
    assert later is not None and later.envelope == {"ok": True, "data": "awaited"}
    assert r is not None and r.envelope["error"]["code"] == "not_found"
    assert wrong is not None and wrong.envelope["error"]["code"] == "invalid_arguments"

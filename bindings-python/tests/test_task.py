"""A handler's task on the loop (`src/task.rs`, `src/guarded.rs`): its first step taken as it
is made (`eager_start` on Python 3.12 and later, the same step taken by tooljig on 3.11), so a
handler that never waits settles its call before the loop turns; its own task either way, named
after its tool, and a coroutine to asyncio's eyes."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import time

import pytest

import tooljig

async def test_a_handler_that_never_waits_ends_a_one_call_batch_before_the_loop_turns(
    engine: tooljig.Engine,
) -> None:
    caller = asyncio.current_task()
    seen: list[object] = []

    @engine.tool
    async def quick(n: int) -> int:
        seen.append(asyncio.current_task())
        return n + 1

    turned: list[bool] = []
    asyncio.get_running_loop().call_soon(turned.append, True)
    out = await engine.run([{"tool": "quick", "arguments": {"n": 1}}])
    assert out[0].envelope == {"ok": True, "data": 2}
    assert turned == [], "the batch waited for a turn of the loop"
    # The step ran as the handler's own task, and the caller's task is current again.
    assert len(seen) == 1 and seen[0] is not None and seen[0] is not caller
    assert seen[0].get_name() == "tooljig:quick"  # type: ignore[attr-defined]
    assert asyncio.current_task() is caller
    await asyncio.sleep(0)
    assert turned == [True]


async def test_batches_awaited_back_to_back_leave_no_pile_of_tasks(
    engine: tooljig.Engine,
) -> None:
    # Each batch ends before the loop turns; on 3.11 its task still has a last step to take,
    # so past a bound tasks start on the next turn again, which lets the loop run those steps.
    @engine.tool
    async def quick() -> int:
        return 1

    most = 0
    for _ in range(3000):
        out = await engine.run([{"tool": "quick"}])
        assert out[0].envelope == {"ok": True, "data": 1}
        most = max(most, len(asyncio.all_tasks()))
    assert most <= 1100, f"{most} tasks were waiting"
    for _ in range(3):
        await asyncio.sleep(0)
    assert len(asyncio.all_tasks()) == 1


async def test_a_first_step_keeps_its_context_and_sees_its_own_task_after_it_waits(
    engine: tooljig.Engine,
) -> None:
    # What the handler's first step set in its context is there after it waits; the task it
    # saw as current in that step is the one it resumes in.
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[object] = []

    @engine.tool
    async def two_steps() -> str:
        var.set("set in the first step")
        first = asyncio.current_task()
        await asyncio.sleep(0.01)
        seen.append(first is asyncio.current_task())
        return var.get()

    out = await engine.run([{"tool": "two_steps"}])
    assert out[0].envelope == {"ok": True, "data": "set in the first step"}
    assert seen == [True]
    assert var.get() == "unset"


async def test_a_batch_run_inside_a_handlers_first_step_gives_each_its_own_task(
    engine: tooljig.Engine,
) -> None:
    # The inner batch's handler takes its first step inside the outer one's: each sees its
    # own task as current, the outer one its own again after, and the caller's is current
    # once the outer batch ends.
    caller = asyncio.current_task()
    seen: dict[str, list[object]] = {"outer": [], "inner": []}

    @engine.tool
    async def inner() -> int:
        seen["inner"].append(asyncio.current_task())
        return 2

    @engine.tool
    async def outer() -> int:
        seen["outer"].append(asyncio.current_task())
        out = await engine.run([{"tool": "inner"}])
        seen["outer"].append(asyncio.current_task())
        return out[0].envelope["data"] + 1

    out = await engine.run([{"tool": "outer"}])
    assert out[0].envelope == {"ok": True, "data": 3}
    (outer_first, outer_after), (inner_task,) = seen["outer"], seen["inner"]
    assert outer_first is outer_after, "the outer handler resumed as another task"
    assert inner_task is not outer_first and inner_task is not caller
    assert outer_first is not caller and outer_first is not None
    assert asyncio.current_task() is caller


async def test_a_handler_that_cancels_its_own_task_in_its_first_step_ends_cancelled(
    engine: tooljig.Engine,
) -> None:
    # As with eager tasks: the cancellation lands at the handler's first wait, which it sees.
    saw: list[str] = []

    @engine.tool
    async def quits() -> str:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            saw.append("cancelled at its wait")
            raise
        return "not reached"

    @engine.tool
    async def fine() -> int:
        return 1

    out = await asyncio.wait_for(engine.run([{"id": "q", "tool": "quits"}, {"tool": "fine"}]), 5)
    assert saw == ["cancelled at its wait"]
    assert out[0].envelope["ok"] is False
    assert out[0].envelope["error"]["code"] == "cancelled"
    assert out[1].envelope == {"ok": True, "data": 1}
    assert asyncio.current_task() is not None and not asyncio.current_task().cancelling()


async def test_a_task_cancelled_while_its_first_step_waits_cancels_what_it_waited_on(
    engine: tooljig.Engine,
) -> None:
    # The batch is cancelled right after the handler's first step, before the loop turns:
    # the future that step waited on is cancelled and the handler gets `CancelledError`.
    waited: list[asyncio.Future[None]] = []
    cancelled = asyncio.Event()

    @engine.tool
    async def waits() -> None:
        fut = asyncio.get_running_loop().create_future()
        waited.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            cancelled.set()
            raise

    batch = asyncio.ensure_future(engine.run([{"id": "w", "tool": "waits"}]))
    await asyncio.sleep(0)  # the batch starts; the handler's first step waits on `fut`
    assert len(waited) == 1
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await batch
    await asyncio.wait_for(cancelled.wait(), 5)
    assert waited[0].cancelled()


async def test_a_handler_runs_as_its_own_task_and_may_time_itself_out(
    engine: tooljig.Engine,
) -> None:
    # An eager first step still runs as the handler's task: `asyncio.timeout()` inside it
    # cancels the handler, never the task that awaits the batch.
    caller = asyncio.current_task()
    seen: list[bool] = []

    @engine.tool
    async def patient() -> str:
        seen.append(asyncio.current_task() is not caller)
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(5)
        except TimeoutError:
            return "gave up"
        return "waited"

    out = await asyncio.wait_for(engine.run([{"tool": "patient"}] * 2), 5)
    assert [r.envelope for r in out] == [{"ok": True, "data": "gave up"}] * 2
    assert seen == [True, True]
    assert not caller.cancelled() and caller.cancelling() == 0


async def test_a_call_given_up_during_its_handlers_first_step_has_its_task_cancelled(
    engine: tooljig.Engine,
) -> None:
    # The first step blocks the loop past the call's timeout; the batch (two calls: its driver
    # on a tokio thread) gives the call up meanwhile, so its task is cancelled once made.
    cancelled = asyncio.Event()

    @engine.tool(timeout_ms=100)
    async def slow_start() -> None:
        time.sleep(0.3)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    @engine.tool
    async def quick() -> int:
        return 1

    out = await asyncio.wait_for(
        engine.run([{"id": "s", "tool": "slow_start"}, {"id": "q", "tool": "quick"}]), 5
    )
    assert out.get("s").error_code == "timeout"
    assert out.get("q").envelope == {"ok": True, "data": 1}
    await asyncio.wait_for(cancelled.wait(), 2)


async def test_a_handlers_task_is_named_after_its_tool_and_shows_where_it_waits(
    engine: tooljig.Engine,
) -> None:
    # What an operator looking at a stuck app sees: `asyncio.all_tasks()` names the tool,
    # the task's repr and stack reach the handler's own frame.
    seen: dict[str, object] = {}
    waiting = asyncio.Event()
    release = asyncio.Event()

    @engine.tool
    async def lookup(q: str) -> str:
        waiting.set()
        await release.wait()
        return q

    batch = asyncio.ensure_future(engine.run([{"tool": "lookup", "arguments": {"q": "x"}}]))
    await asyncio.wait_for(waiting.wait(), 5)
    (task,) = [t for t in asyncio.all_tasks() if t.get_name() == "tooljig:lookup"]
    coro = task.get_coro()
    seen.update(
        coroutine=asyncio.iscoroutine(coro),
        repr="lookup" in repr(task),
        stack=[f.f_code.co_name for f in task.get_stack()],
    )
    release.set()
    out = await asyncio.wait_for(batch, 5)
    assert out[0].envelope == {"ok": True, "data": "x"}
    assert seen == {"coroutine": True, "repr": True, "stack": ["lookup"]}


async def test_a_handlers_task_collected_while_it_waits_ends_its_call(
    engine: tooljig.Engine,
) -> None:
    # The handler awaits a future nothing holds but itself: its task, its coroutine and the
    # future are garbage together. Collected, the call ends as cancelled at once, not at its
    # timeout, and the handler's own cleanup runs.
    cleaned: list[bool] = []

    @engine.tool(timeout_ms=30_000)
    async def forgotten() -> str:
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            cleaned.append(True)
        return "never"

    loop = asyncio.get_running_loop()
    handler = loop.get_exception_handler()
    # "Task was destroyed but it is pending!": asyncio's own word on such a task.
    loop.set_exception_handler(lambda loop, context: None)
    try:
        batch = asyncio.ensure_future(engine.run([{"id": "f", "tool": "forgotten"}]))
        for _ in range(5):
            await asyncio.sleep(0)
        gc.collect()
        out = await asyncio.wait_for(batch, 5)
    finally:
        loop.set_exception_handler(handler)
    assert out.get("f").error_code == "cancelled"
    assert "collected while it waited" in out.get("f").envelope["error"]["message"]
    assert cleaned == [True]

"""Timeouts and cancellation reach Python (host.rs, batch.rs, handler.rs)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import time
import warnings
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import pytest

import tooljig
from conftest import run_python


async def test_a_timed_out_async_handler_has_its_task_cancelled(engine: tooljig.Engine) -> None:
    cancelled = asyncio.Event()

    @engine.tool(timeout_ms=100)
    async def stuck() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    t0 = time.perf_counter()
    out = await engine.run([{"tool": "stuck"}])
    assert time.perf_counter() - t0 < 1
    assert out[0].envelope["error"]["code"] == "timeout"
    assert out[0].envelope["error"]["message"] == "the tool did not finish within 100 ms"
    await asyncio.wait_for(cancelled.wait(), 1)


async def test_a_timed_out_sync_handler_sees_ctx_cancelled(engine: tooljig.Engine) -> None:
    saw_cancel = asyncio.Event()
    loop = asyncio.get_running_loop()

    @engine.tool(timeout_ms=100)
    def polling(ctx: tooljig.ToolContext) -> None:
        deadline = time.monotonic() + 5
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        if ctx.cancelled:
            loop.call_soon_threadsafe(saw_cancel.set)

    out = await engine.run([{"tool": "polling"}])
    assert out[0].error_code == "timeout"
    await asyncio.wait_for(saw_cancel.wait(), 1)


async def test_wait_for_cancels_the_batch_and_its_handlers(engine: tooljig.Engine) -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    @engine.tool
    async def hang(name: str) -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise

    calls = [{"tool": "hang", "arguments": {"name": n}} for n in ("a", "b", "c")]
    t0 = time.perf_counter()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(engine.run(calls), 0.2)
    assert time.perf_counter() - t0 < 1
    for _ in range(100):
        if len(cancelled) == 3:
            break
        await asyncio.sleep(0.01)
    assert sorted(cancelled) == ["a", "b", "c"]


async def test_cancelling_the_awaiting_task_cancels_the_batch(engine: tooljig.Engine) -> None:
    started = asyncio.Event()
    finished: list[str] = []

    @engine.tool
    async def slow(name: str) -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            finished.append(name)

    @engine.tool(after=["slow"])
    def later() -> None:
        finished.append("later ran")

    task = asyncio.create_task(engine.run([{"tool": "slow", "arguments": {"name": "s"}}, {"tool": "later"}]))
    await asyncio.wait_for(started.wait(), 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.05)
    assert finished == ["s"], "the running handler is cancelled and the waiting call never runs"


async def test_the_deadline_ends_the_batch_and_cancels_running_handlers(engine: tooljig.Engine) -> None:
    cancelled = asyncio.Event()

    @engine.tool
    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    out = await engine.run([{"tool": "slow"}], deadline_ms=100)
    assert out[0].error_code == "deadline_exceeded"
    await asyncio.wait_for(cancelled.wait(), 1)


CTRL_C_SCRIPT = """
import asyncio, sys, time
import tooljig

engine = tooljig.Engine()

@engine.tool
async def hang() -> None:
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        print("handler cancelled", flush=True)
        raise

@engine.tool
async def ready() -> None:
    print("ready", flush=True)

try:
    engine.run_sync([{"tool": "ready"}, {"tool": "hang"}])
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(7)
"""


def test_ctrl_c_cancels_the_batch_and_raises_keyboard_interrupt() -> None:
    import subprocess
    import sys
    import textwrap

    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CTRL_C_SCRIPT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.1)
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert time.perf_counter() - t0 < 5
    assert proc.returncode == 7, (out, err)
    assert "handler cancelled" in out and "KeyboardInterrupt" in out, (out, err)


def test_keyboard_interrupt_raised_in_a_sync_handler_interrupts_the_main_thread() -> None:
    result = run_python(
        """
        import sys, time
        import tooljig

        engine = tooljig.Engine()

        @engine.tool
        def interrupt() -> None:
            raise KeyboardInterrupt

        @engine.tool(timeout_ms=10000)
        def slow() -> None:
            time.sleep(3)

        t0 = time.perf_counter()
        try:
            engine.run_sync([{"tool": "interrupt"}, {"tool": "slow"}])
        except KeyboardInterrupt:
            print(f"interrupted after {time.perf_counter() - t0:.2f} s")
            sys.exit(3)
        print("not interrupted")
        """
    )
    assert result.returncode == 3, result
    assert float(result.stdout.split()[2]) < 2.5


def test_keyboard_interrupt_raised_in_an_async_handler_stops_asyncio_run() -> None:
    result = run_python(
        """
        import asyncio, sys
        import tooljig

        engine = tooljig.Engine()

        @engine.tool
        async def interrupt() -> None:
            raise KeyboardInterrupt

        try:
            engine.run_sync([{"tool": "interrupt"}])
        except KeyboardInterrupt:
            sys.exit(4)
        """
    )
    assert result.returncode == 4, result


def test_run_sync_returns_when_a_handler_swallows_its_cancellation() -> None:
    result = run_python(
        """
        import asyncio, time
        import tooljig

        engine = tooljig.Engine()

        @engine.tool(timeout_ms=300)
        async def stubborn() -> None:
            while True:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    pass

        t0 = time.perf_counter()
        out = engine.run_sync([{"tool": "stubborn"}])
        print(out.results[0].error_code, f"{time.perf_counter() - t0:.2f}")
        """,
        timeout=20,
    )
    code, seconds = result.stdout.split()
    assert code == "timeout", result
    assert float(seconds) < 3, result


def test_system_exit_in_an_async_handler_fails_that_call_alone() -> None:
    result = run_python(
        """
        import sys
        import tooljig

        engine = tooljig.Engine()

        @engine.tool
        async def leave() -> None:
            sys.exit(5)

        @engine.tool
        async def stay() -> str:
            return "here"

        out = engine.run_sync([{"id": "l", "tool": "leave"}, {"id": "s", "tool": "stay"}])
        print(out.get("l").error_code, out.get("s").envelope["data"])
        print("SystemExit(5)" in (out.get("l").detail or ""))
        """
    )
    assert result.returncode == 0, result
    assert result.stdout.split() == ["internal_error", "here", "True"], result


def _handler_of(task: asyncio.Task[object]) -> str:
    """The handler a tooljig handler task runs, by the name of its coroutine (a task factory
    sees the task before it has its name, ``tooljig:<tool>``), or ''."""
    if not task.get_name().startswith("tooljig:") and task.get_loop().get_task_factory() is None:
        return ""
    return getattr(task.get_coro(), "__qualname__", "").rsplit(".", 1)[-1]


async def test_a_handler_task_cancelled_by_another_handler_ends_its_call(
    engine: tooljig.Engine,
) -> None:
    # A hostile handler cancels another handler's task while it waits: that call ends as
    # cancelled at once, not at its 30 s timeout, and the hostile one goes on.
    waiting = asyncio.Event()

    @engine.tool
    async def victim() -> str:
        waiting.set()
        await asyncio.sleep(30)
        return "woke"

    @engine.tool
    async def killer() -> int:
        await waiting.wait()
        victims = [t for t in asyncio.all_tasks() if _handler_of(t) == "victim"]
        for task in victims:
            task.cancel()
        return len(victims)

    calls = [{"id": "v", "tool": "victim"}, {"id": "k", "tool": "killer"}]
    out = await asyncio.wait_for(engine.run(calls), 5)
    assert out.get("k").envelope == {"ok": True, "data": 1}
    assert out.get("v").error_code == "cancelled"


@contextlib.asynccontextmanager
async def no_coroutine_left_unawaited() -> AsyncIterator[None]:
    """Fails when a coroutine is collected never awaited (Python warns of it, an error under
    ``-W error``), letting cancelled tasks take their last step and collecting what is left
    before it looks."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
        for _ in range(5):
            await asyncio.sleep(0)
        gc.collect()
    unawaited = [str(w.message) for w in caught if "was never awaited" in str(w.message)]
    assert unawaited == []


async def test_a_handler_task_cancelled_before_its_first_step_ends_its_call(
    engine: tooljig.Engine,
) -> None:
    # Its task cancelled as it is made (an app's task factory here; `asyncio.run` does the
    # same to every task left when it ends), the handler never runs, nor does the code that
    # would settle its call: the call still ends as cancelled, at once.
    loop = asyncio.get_running_loop()
    ran: list[str] = []

    def factory(
        loop: asyncio.AbstractEventLoop, coro: Coroutine[object, object, object], **kwargs: Any
    ) -> asyncio.Task[object]:
        task = asyncio.Task(coro, loop=loop, **kwargs)
        if _handler_of(task) == "doomed":
            task.cancel()
        return task

    @engine.tool
    async def doomed() -> str:
        ran.append("doomed")
        return "ran"

    @engine.tool
    async def spared() -> str:
        return "ran"

    loop.set_task_factory(factory)
    try:
        calls = [{"id": "d", "tool": "doomed"}, {"id": "s", "tool": "spared"}]
        async with no_coroutine_left_unawaited():
            out = await asyncio.wait_for(engine.run(calls), 5)
    finally:
        loop.set_task_factory(None)
    assert out.get("s").envelope == {"ok": True, "data": "ran"}
    assert out.get("d").error_code == "cancelled"
    assert out.get("d").envelope["error"]["message"] == (
        "the tool's task was cancelled before it started"
    )
    assert ran == []


async def test_a_call_timed_out_before_its_task_ran_leaves_no_coroutine_unawaited(
    engine: tooljig.Engine,
) -> None:
    # The handler's task is made (its first step taken as it is made), then the loop is held
    # by a handler on it past the other's timeout, so that task is cancelled before the loop
    # turns: its coroutine ends cancelled, none is left for Python to warn about.
    @engine.tool(timeout_ms=5)
    async def hang() -> None:
        await asyncio.sleep(30)

    @engine.tool(sync_to_thread=False)
    def hold_the_loop() -> str:
        time.sleep(0.1)
        return "held"

    async with no_coroutine_left_unawaited():
        out = await engine.run([{"id": "h", "tool": "hang"}, {"id": "l", "tool": "hold_the_loop"}])
    assert out.get("h").error_code == "timeout"
    assert out.get("l").envelope == {"ok": True, "data": "held"}


async def test_a_handler_that_raises_leaves_asyncio_nothing_to_report(
    engine: tooljig.Engine,
) -> None:
    # The call takes the exception; the task does not keep it for asyncio to log as never
    # retrieved when it is collected.
    import gc

    reported: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))

    @engine.tool
    async def broken() -> None:
        raise ValueError("no luck")

    out = await engine.run([{"tool": "broken"}] * 3)
    assert [r.error_code for r in out] == ["internal_error"] * 3
    assert "ValueError: no luck" in (out[0].detail or "")
    del out
    gc.collect()
    await asyncio.sleep(0)
    loop.set_exception_handler(None)
    assert reported == []

"""The runtime at interpreter exit and after fork, and the loops it wakes (runtime.rs,
workers.rs, loop_waker.rs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import run_python

EXIT_AT_ONCE = """
import asyncio, time
import tooljig

engine = tooljig.Engine()

@engine.tool
async def a(i: int) -> int:
    await asyncio.sleep(0.001 * (i % 3))
    return i

@engine.tool
def s(i: int) -> int:
    time.sleep(0.001 * (i % 3))
    return i

@engine.tool(timeout_ms=20)
async def slow() -> None:
    await asyncio.sleep(10)

out = engine.run_sync([{"tool": "a" if i % 2 else "s", "arguments": {"i": i}} for i in range(40)] + [{"tool": "slow"}])
assert [r.envelope.get("data") for r in out][:40] == list(range(40)), out
print("ok")
"""

BUSY = "import time\nend = time.time() + 120\nwhile time.time() < end: pass\n"


def test_fifty_scripts_that_exit_right_after_a_batch_exit_cleanly_while_a_core_is_busy() -> None:
    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        failures = []
        for i in range(50):
            r = run_python(EXIT_AT_ONCE, timeout=60)
            if r.returncode != 0 or r.stdout.strip() != "ok":
                failures.append((i, r.returncode, r.stdout[-200:], r.stderr[-500:]))
        assert not failures, failures
    finally:
        busy.kill()
        busy.wait()


def test_exit_while_a_sync_handler_still_runs_waits_for_it() -> None:
    r = run_python(
        """
        import asyncio, time
        import tooljig

        engine = tooljig.Engine()

        @engine.tool(timeout_ms=50)
        def lingering() -> None:
            time.sleep(0.5)
            print("handler returned", flush=True)

        out = engine.run_sync([{"tool": "lingering"}])
        print(out[0].error_code, flush=True)
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["timeout", "handler", "returned"]


def test_no_batch_starts_after_shutdown() -> None:
    r = run_python(
        """
        import tooljig
        from tooljig import _native

        engine = tooljig.Engine()
        _native.shutdown()
        _native.shutdown()
        try:
            engine.run_sync([])
        except tooljig.ShutdownError as e:
            print("refused:", e)
        """
    )
    assert r.returncode == 0, r.stderr
    assert "refused: tooljig is shutting down" in r.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_its_own_runtime_and_workers() -> None:
    r = run_python(
        """
        import os, sys, warnings
        import tooljig

        warnings.simplefilter("ignore", DeprecationWarning)
        engine = tooljig.Engine()

        @engine.tool
        def pid() -> int:
            return os.getpid()

        @engine.tool
        async def apid() -> int:
            return os.getpid()

        parent = engine.run_sync([{"tool": "pid"}, {"tool": "apid"}])
        child = os.fork()
        if child == 0:
            out = engine.run_sync([{"tool": "pid"}, {"tool": "apid"}])
            ok = [r.envelope["data"] for r in out] == [os.getpid()] * 2
            os._exit(0 if ok else 1)
        _, status = os.waitpid(child, 0)
        print(os.waitstatus_to_exitcode(status), [r.envelope["data"] for r in parent] == [os.getpid()] * 2)
        """,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "True"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_never_repeats_its_parents_run_ids() -> None:
    # Ids are drawn from the kernel many at a time (random_id.rs); a child inherits its
    # parent's unspent ones and must throw them away, or both would name their next runs alike.
    # Atomic batches are recorded (in the engine's memory store), so their run ids come back;
    # one-call batches awaited in a loop are polled on its thread, the thread that forks.
    r = run_python(
        """
        import asyncio, os, warnings
        import tooljig

        warnings.simplefilter("ignore", DeprecationWarning)
        engine = tooljig.Engine()

        @engine.tool
        def noop() -> int:
            return 1

        async def run_id() -> str:
            return (await engine.run([{"tool": "noop"}], atomic=True)).run_id

        first = asyncio.run(run_id())
        read, write = os.pipe()
        child = os.fork()
        if child == 0:
            ids = [asyncio.run(run_id()) for _ in range(3)]
            os.write(write, " ".join(ids).encode())
            os._exit(0)
        os.close(write)
        theirs = set(os.read(read, 4096).decode().split())
        os.waitpid(child, 0)
        ours = {asyncio.run(run_id()) for _ in range(3)}
        print(len(theirs), len(ours), len(ours | theirs | {first}))
        """,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3", "3", "7"]


def test_loops_that_come_and_go_leave_no_socket_behind() -> None:
    # Each loop gets one wake-up socket, kept while it is open; a closed loop's goes when the
    # next loop's is made. Two-call batches, so handlers are started from tokio threads.
    r = run_python(
        """
        import asyncio, os, threading
        import tooljig

        engine = tooljig.Engine()

        @engine.tool
        async def echo(i: int) -> int:
            await asyncio.sleep(0)
            return i

        def fds() -> int:
            return len(os.listdir("/proc/self/fd"))

        calls = [{"tool": "echo", "arguments": {"i": i}} for i in range(2)]
        engine.run_sync(calls)
        before = fds()
        for _ in range(200):
            assert [r.envelope["data"] for r in engine.run_sync(calls)] == [0, 1]

        async def on_its_own_loop() -> None:
            for _ in range(20):
                assert [r.envelope["data"] for r in await engine.run(calls)] == [0, 1]

        threads = [threading.Thread(target=asyncio.run, args=(on_its_own_loop(),)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        engine.run_sync(calls)
        print(fds() - before)
        """,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) <= 4, f"{r.stdout} more file descriptors after 285 loops"


def test_a_batch_whose_loop_is_closed_midway_still_finishes_on_the_runtime() -> None:
    # A one-call batch is polled on its loop; an app that closes the loop with the batch in
    # flight (neither awaited nor cancelled) must not lose it: the runtime takes it over once
    # the loop stops answering, and the call's audit record is written.
    r = run_python(
        """
        import asyncio, json, os, tempfile, time
        import tooljig

        d = tempfile.mkdtemp()
        path = os.path.join(d, "audit.jsonl")
        engine = tooljig.Engine(audit=f"jsonl://{path}")

        @engine.tool
        def slow() -> str:
            time.sleep(0.3)
            return "done"

        loop = asyncio.new_event_loop()
        loop.create_task(engine.run([{"id": "c", "tool": "slow"}]))
        loop.run_until_complete(asyncio.sleep(0.1))
        loop.close()
        deadline = time.monotonic() + 10
        records = []
        while time.monotonic() < deadline and not records:
            time.sleep(0.1)
            if os.path.exists(path):
                records = [json.loads(line) for line in open(path)]
        print(json.dumps([[r["call_id"], r["outcome"]] for r in records]))
        """,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [["c", "ok"]]


async def test_batches_that_end_in_their_first_poll_queue_nothing_on_the_loop() -> None:
    # A one-call batch is polled on the loop as it starts; a refused call, or a `def` handler
    # run on the loop, ends it right there, before `run` awaits it, so awaiting it never turns
    # the loop. Nothing may be queued on the loop per such batch, or a caller awaiting them
    # back to back piles up callbacks (and all they hold) until the loop turns.
    import gc

    import tooljig

    engine = tooljig.Engine()

    @engine.tool(sync_to_thread=False)
    def echo(x: int) -> int:
        return x

    def queued() -> int:
        return sum(1 for o in gc.get_objects() if type(o).__name__ == "Handle")

    before = queued()
    for i in range(300):
        refused = await engine.run([{"tool": "no_such_tool"}])
        ran = await engine.run([{"tool": "echo", "arguments": {"x": i}}])
        assert refused[0].envelope["error"]["code"] == "unknown_tool"
        assert ran[0].envelope == {"ok": True, "data": i}
    assert queued() - before < 30, f"{queued() - before} loop callbacks queued by 600 batches"


async def test_an_async_handler_that_returns_settles_its_call_in_its_tasks_own_step() -> None:
    # A task's done callbacks run a turn of the loop after its last step. The call settles in
    # that step instead (the guard coroutine hands the value over), so a one-call batch of an
    # async handler that never waits ends two turns after it starts, not three.
    import asyncio

    import tooljig

    engine = tooljig.Engine()

    @engine.tool
    async def echo(x: int) -> int:
        return x

    turns = 0
    stop = False

    async def count() -> None:
        nonlocal turns
        while not stop:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count())
    await asyncio.sleep(0)
    samples = []
    for i in range(20):
        start = turns
        out = await engine.run([{"tool": "echo", "arguments": {"x": i}}])
        samples.append(turns - start)
        assert out[0].envelope == {"ok": True, "data": i}
    stop = True
    await counter
    assert sorted(samples)[len(samples) // 2] <= 2, f"loop turns per batch: {samples}"

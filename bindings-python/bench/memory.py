"""Python heap allocated per call by tooljig's Python package, beside plain asyncio.gather +
pydantic: what ``tracemalloc`` counts (objects and buffers of Python's allocators) over many
batches, divided by the calls. The Rust side's own allocations are the core's, measured by
``cargo bench -p tooljig --bench memory``.

Run: ``.venv/bin/python bindings-python/bench/memory.py`` (after ``bench/run.sh`` or the tests'
``setup.sh`` built the extension); figures go to BENCHMARKS.md.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import bench  # noqa: E402  (the same workload and baselines as the timing benchmark)


async def allocated(run: Callable[[str], Awaitable[Any]], kind: str, calls: int, batches: int) -> tuple[float, float]:
    """Peak bytes per call (each batch's high-water mark above where it started), and how
    much more stays allocated, per call, after as many batches again."""
    for _ in range(batches):
        await run(kind)
    gc.collect()
    tracemalloc.start()
    total = 0
    for _ in range(batches):
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        await run(kind)
        _, peak = tracemalloc.get_traced_memory()
        total += peak - before
    gc.collect()
    settled, _ = tracemalloc.get_traced_memory()
    for _ in range(batches):
        await run(kind)
    gc.collect()
    end, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n = calls * batches
    return total / n, (end - settled) / n


async def main() -> None:
    print("| path | calls a batch | handler | peak bytes a call | bytes kept a call |")
    print("|---|---|---|---|---|")
    for calls, batches in ((1, 2000), (1000, 20)):
        for name, make in (("tooljig", bench.tooljig_runner), ("asyncio.gather + pydantic", bench.gather_runner)):
            run = make(calls)
            for kind in ("sync", "async"):
                peak, held = await allocated(run, kind, calls, batches)
                print(f"| {name} | {calls} | {kind} | {peak:.0f} | {held:.1f} |")


asyncio.run(main())

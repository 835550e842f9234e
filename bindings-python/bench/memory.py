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
    """Bytes allocated per call, and bytes still held per call after the batches."""
    for _ in range(batches):
        await run(kind)
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    start, _ = tracemalloc.get_traced_memory()
    total = 0
    # tracemalloc reports what is held, not a running total: read the peak of each batch and
    # start over, so each figure is one batch's allocations with nothing freed in between
    # counted twice. The batch's own garbage is freed as it goes; the peak is its high-water.
    for _ in range(batches):
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        await run(kind)
        _, peak = tracemalloc.get_traced_memory()
        total += peak - before
    gc.collect()
    end, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n = calls * batches
    return total / n, (end - start) / n


async def main() -> None:
    print("| path | calls a batch | handler | peak bytes a call | bytes held a call |")
    print("|---|---|---|---|---|")
    for calls, batches in ((1, 2000), (1000, 20)):
        for name, make in (("tooljig", bench.tooljig_runner), ("asyncio.gather + pydantic", bench.gather_runner)):
            run = make(calls)
            for kind in ("sync", "async"):
                peak, held = await allocated(run, kind, calls, batches)
                print(f"| {name} | {calls} | {kind} | {peak:.0f} | {held:.1f} |")


asyncio.run(main())

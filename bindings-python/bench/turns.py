"""bench.py's workloads, each in a process of its own, taking turns for several rounds, so a
host whose speed drifts weighs on each alike; optionally beside another build of the package
(``--other DIR``: the ``python/`` folder of another checkout, its extension built there).

    python bench/turns.py [--rounds 5] [--calls 1000] [--batches 200] [--other DIR] KIND...

KIND: async, sync, loop (tooljig's three kinds of handler) or gather-async, gather-sync (the
hand-written asyncio.gather + pydantic baseline). Prints, per build and kind, each round's
median batch time divided by the calls a batch, sorted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

ONE = """
import asyncio, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from bench import gather_runner, tooljig_runner
kind, batches, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
run = (gather_runner if kind.startswith("gather-") else tooljig_runner)(n)
kind = kind.removeprefix("gather-")
async def main():
    for _ in range(5):
        await run(kind)
    times = []
    for _ in range(batches):
        t = time.perf_counter()
        await run(kind)
        times.append(time.perf_counter() - t)
    print(statistics.median(times) / n * 1e6)
asyncio.run(main())
"""


def one(kind: str, calls: int, batches: int, package: str | None) -> float:
    env = dict(os.environ)
    if package is not None:
        env["PYTHONPATH"] = package
    out = subprocess.run(
        [sys.executable, "-c", ONE, str(HERE), kind, str(batches), str(calls)],
        env=env, capture_output=True, text=True, check=True,
    )
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kinds", nargs="+")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--other", help="the python/ folder of another build")
    args = parser.parse_args()
    builds: list[tuple[str, str | None]] = [("this", None)]
    if args.other:
        builds.append(("other", args.other))
    seen: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for kind in args.kinds:
            for name, package in builds if not kind.startswith("gather-") else [("hand", None)]:
                seen.setdefault((name, kind), []).append(one(kind, args.calls, args.batches, package))
    for (name, kind), times in sorted(seen.items()):
        row = " ".join(f"{t:.2f}" for t in sorted(times))
        print(f"{name:5} {kind:12} {row}  (median {statistics.median(times):.2f} µs a call)")


if __name__ == "__main__":
    main()

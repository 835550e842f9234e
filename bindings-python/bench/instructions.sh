#!/usr/bin/env bash
# Instructions per call of bench.py's workloads, counted by callgrind: (3N batches - N
# batches) / 2N, divided by the calls a batch, so start-up and warm-up drop out (N: enough
# batches for 1,000 calls). Counts do not move with
# the machine's load as timings do; with threads they still vary by a few per cent from run
# to run. Run after run.sh (it leaves the release build in <repo>/.venv). Needs valgrind.
#   [PYTHON=...] bash bindings-python/bench/instructions.sh [KIND] [CALLS]
# PYTHON: another interpreter that imports the same build, e.g. <repo>/.venv-newer/bin/python
# (Python 3.12+, which run-tests.sh makes) to count eager handler tasks.
# KIND: async, sync, loop (tooljig's three kinds of handler), or gather-async, gather-sync
# (the hand-written asyncio.gather + pydantic baseline). CALLS: calls a batch (1000).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-$(cd "$here/../.." && pwd)/.venv/bin/python}"
kind=${1:-async}
calls=${2:-1000}
driver='
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from bench import gather_runner, tooljig_runner
kind, batches, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
run = (gather_runner if kind.startswith("gather-") else tooljig_runner)(n)
kind = kind.removeprefix("gather-")
async def main():
    for _ in range(3 + batches):
        await run(kind)
asyncio.run(main())
'
count() {
  PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$py" -c "$driver" "$here" "$kind" "$1" "$calls" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
n=$(((1000 + calls - 1) / calls))
one=$(count "$n")
three=$(count $((3 * n)))
echo "$kind: $(((three - one) / (2 * n * calls))) instructions per call ($calls calls a batch)"

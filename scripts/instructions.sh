#!/usr/bin/env bash
# Instructions per batch on the bare path (core/benches/instructions.rs), by callgrind:
# the difference between 2N and N batches, divided by N, so set-up drops out.
#   bash scripts/instructions.sh [CALLS_PER_BATCH] [N]   (GUARDED=1: with guardrails)
# Prints the instructions per batch and per call. Needs valgrind.
# COLD=1: each batch run cold (the bench's `cold` flag), and counted by cachegrind instead:
# the cache lines of code the batch fetches from memory, the cost of a cold batch.
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-1}
mode=$([ -n "${GUARDED:-}" ] && echo guarded || true)
cold=$([ -n "${COLD:-}" ] && echo cold || true)
n=${2:-$((10000 / calls))}
[ -n "$cold" ] && n=${2:-200}
export CARGO_BUILD_TARGET="${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
bin=$(cargo bench --no-run -p tooljig --bench instructions --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$calls" $mode 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
if [ -n "$cold" ]; then
  # A last-level cache of 4 MiB, smaller than the bench's 16 MiB evictor, so each batch
  # starts with none of its lines cached, as it would on a busy machine.
  lines() {
    valgrind --tool=cachegrind --cache-sim=yes --LL=4194304,16,64 --cachegrind-out-file=/dev/null \
      "$bin" "$1" "$calls" $mode cold 2>&1 | sed -n 's/.*LLi misses: *\([0-9,]*\).*/\1/p' | tr -d ,
  }
  one=$(lines "$n")
  two=$(lines $((2 * n)))
  echo "lines of code fetched from memory per cold batch of $calls: $(((two - one) / n))"
  exit 0
fi
one=$(count "$n")
two=$(count $((2 * n)))
per_batch=$(((two - one) / n))
echo "instructions per batch of $calls: $per_batch ($((per_batch / calls)) per call)"

#!/usr/bin/env bash
# Instructions per batch on the bare path (core/benches/instructions.rs), by callgrind:
# the difference between 2N and N batches, divided by N, so set-up drops out.
#   bash scripts/instructions.sh [CALLS_PER_BATCH] [N]   (GUARDED=1: with guardrails)
# Prints the instructions per batch and per call. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-1}
mode=$([ -n "${GUARDED:-}" ] && echo guarded || true)
n=${2:-$((10000 / calls))}
export CARGO_BUILD_TARGET="${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
bin=$(cargo bench --no-run -p tooljig --bench instructions --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$calls" $mode 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
one=$(count "$n")
two=$(count $((2 * n)))
per_batch=$(((two - one) / n))
echo "instructions per batch of $calls: $per_batch ($((per_batch / calls)) per call)"

#!/usr/bin/env bash
# Runs every test of the project: Rust core, Python package, Node package, UI stream check.
# Each part installs what it needs (venv, maturin, npm packages) on first run.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

status=0
run() {
  local name=$1; shift
  echo
  echo "==== $name: $*"
  local t0=$SECONDS
  if "$@"; then
    echo "==== $name passed in $((SECONDS - t0)) s"
  else
    echo "==== $name FAILED in $((SECONDS - t0)) s"
    status=1
  fi
}

run "rust" cargo test -p tooljig --all-targets --no-fail-fast
run "rust-doc" cargo test -p tooljig --doc
for part in bindings-python bindings-node tests/ui-stream; do
  if [ -f "$part/run-tests.sh" ]; then
    run "$part" bash "$part/run-tests.sh"
  else
    echo "==== $part: missing $part/run-tests.sh"; status=1
  fi
done
exit $status

#!/usr/bin/env bash
# Runs every test of the project: Rust core, Python package, Node package, the seed apps, the inbox in a
# browser, UI stream check, the MCP conformance suite, and the fuzz targets for a bounded time.
# Each part installs what it needs (venv, maturin, npm packages) on first run.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# One target directory for every build of the run: the napi CLI always passes `--target`,
# and without it here cargo would build every dependency a second time under target/<triple>.
export CARGO_BUILD_TARGET="${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
# A one-off run (CI, a fresh clone) gains nothing from incremental caches but their disk.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi

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

# Every feature of the crate (the Rust default is lean; each backend and client is a feature).
run "rust" cargo test -p tooljig -p tooljig-cli --all-targets --all-features --no-fail-fast
run "rust-doc" cargo test -p tooljig --doc --all-features
for part in bindings-python bindings-node apps tests/inbox-browser tests/ui-stream tests/mcp-conformance; do
  if [ -f "$part/run-tests.sh" ]; then
    run "$part" bash "$part/run-tests.sh"
  else
    echo "==== $part: missing $part/run-tests.sh"; status=1
  fi
done
# Every fuzz target for a bounded time (docs/fuzzing.md); FUZZ_SECONDS=0 skips them.
if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
  run "fuzz" bash scripts/fuzz.sh
fi
exit $status

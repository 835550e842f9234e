#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time (docs/fuzzing.md).
#   bash scripts/fuzz.sh            each target for $FUZZ_SECONDS (default 20) seconds
#   bash scripts/fuzz.sh arguments  one target
# libFuzzer needs rustc's unstable sanitizer-coverage flags: on a stable toolchain they are
# unlocked with RUSTC_BOOTSTRAP=1, for this build only. Seeds come from the corpora written
# by others when they are at hand; findings are kept in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-20}"
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install --locked cargo-fuzz
fi
export RUSTC_BOOTSTRAP=1
# The fuzz build has its own flags and target directory; the host triple keeps it from the
# workspace's CARGO_BUILD_TARGET, which points at the main target directory's layout.
unset CARGO_BUILD_TARGET

corpora="${TOOLJIG_CORPORA:-$(cd .. && pwd)/shared/corpora}"
seed() {
  local target=$1 dir="fuzz/corpus/$1"
  mkdir -p "$dir"
  case $target in
    arguments)
      if [ -f "$corpora/jsonrepair/jsonrepair_js_cases.jsonl" ]; then
        python3 - "$corpora/jsonrepair/jsonrepair_js_cases.jsonl" "$dir" <<'PY'
import hashlib, json, pathlib, sys
out = pathlib.Path(sys.argv[2])
for line in open(sys.argv[1], encoding="utf-8"):
    if line.strip():
        text = json.loads(line)["input"].encode()
        (out / hashlib.sha1(text).hexdigest()).write_bytes(text)
PY
      fi ;;
    sse)
      if [ -d "$corpora/wire" ]; then
        find "$corpora/wire" -type f | head -200 | while read -r f; do
          cp "$f" "$dir/$(sha1sum "$f" | cut -c1-40)"
        done
      fi ;;
  esac
}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(arguments sse schema_import planner audit_verify)
fi
(cd fuzz && cargo fuzz build --sanitizer none)
status=0
for t in "${targets[@]}"; do
  seed "$t"
  echo "== fuzz $t for ${seconds}s"
  log="fuzz/artifacts/$t.log"
  mkdir -p "fuzz/artifacts"
  if (cd fuzz && cargo fuzz run --sanitizer none "$t" -- -max_total_time="$seconds" \
        -rss_limit_mb=4096 -print_final_stats=1) >"$log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$log" | tr '\n' ' '; echo
  else
    tail -40 "$log"
    echo "== fuzz $t FOUND a failing input (fuzz/artifacts/$t/)"
    status=1
  fi
done
exit $status

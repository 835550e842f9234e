#!/usr/bin/env bash
# Sets up <repo>/.venv (once) and builds the extension in debug with `maturin develop`.
# Idempotent and quick on a warm machine: pip runs only when requirements-test.txt changed,
# and cargo rebuilds only what changed. run-tests.sh and apps/run-tests.sh start with it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="$repo/.venv"
py="$venv/bin/python"

if [ ! -x "$py" ]; then
  python3 -m venv "$venv"
  "$py" -m pip install --quiet --upgrade pip
fi

stamp="$venv/.tooljig-test-requirements"
if ! cmp -s "$here/requirements-test.txt" "$stamp" 2>/dev/null; then
  "$py" -m pip install --quiet --disable-pip-version-check -r "$here/requirements-test.txt"
  cp "$here/requirements-test.txt" "$stamp"
fi

# The extension links the system's SQLite (the one Python's `sqlite3` loads): its headers.
if [ ! -f /usr/include/sqlite3.h ]; then
  echo "== installing libsqlite3-dev (the extension links the SQLite Python uses)"
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q libsqlite3-dev >/dev/null
  else sudo apt-get install -y -q libsqlite3-dev >/dev/null; fi
fi

# Debug build into the workspace target dir, installed into the venv in editable mode (the
# first time; afterwards only the extension module is rebuilt in place).
export CARGO_TERM_COLOR=never
build_args=(develop --quiet -m "$here/Cargo.toml")
if "$py" -c "import tooljig" 2>/dev/null; then
  build_args+=(--skip-install)
fi
if ! log="$(VIRTUAL_ENV="$venv" "$venv/bin/maturin" "${build_args[@]}" 2>&1)"; then
  echo "$log"
  echo "maturin develop failed" >&2
  exit 1
fi


#!/usr/bin/env bash
# Benchmarks the Python package against plain asyncio.gather + pydantic and LangGraph's
# ToolNode. Installs the baselines into <repo>/.venv, builds the extension in release and runs
# bench.py (the tests' setup.sh puts the debug build back).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.9.4,<2" -r "$here/requirements.txt"
VIRTUAL_ENV="$venv" "$venv/bin/maturin" develop --quiet --release -m "$here/../Cargo.toml"
"$venv/bin/python" "$here/bench.py" "$@"

#!/usr/bin/env bash
# The seed apps' tests: each app's own tests, run in its directory (apps/README.md). The
# Python package comes from bindings-python/setup.sh (built once; quick when warm).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
bash "$repo/bindings-python/setup.sh"
py="$repo/.venv/bin/python"
status=0
for app in scheduling_assistant nvc_companion; do
  echo "== $app"
  (cd "$here/$app" && "$py" -m pytest -q -ra --color=no -p no:cacheprovider \
    -o asyncio_default_fixture_loop_scope=function .) || status=1
done
exit $status

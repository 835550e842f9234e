#!/usr/bin/env bash
# The seed apps' tests, each app's own, run in its directory (apps/README.md). The Python
# package comes from bindings-python/setup.sh and the Node one from bindings-node (built here
# when bindings-node/run-tests.sh has not run); both are quick when warm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
status=0

bash "$repo/bindings-python/setup.sh"
py="$repo/.venv/bin/python"
for app in scheduling_assistant nvc_companion crm_agents; do
  echo "== $app (Python)"
  (cd "$here/$app" && "$py" -m pytest -q -ra --color=no -p no:cacheprovider \
    -o asyncio_default_fixture_loop_scope=function .) || status=1
done

if ! ls "$repo"/bindings-node/*.node >/dev/null 2>&1; then
  (cd "$repo/bindings-node" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
    && npx napi build --platform --js index.js --dts index.d.ts)
fi
for app in org_assistant client_tools; do
  echo "== $app (Node)"
  (cd "$here/$app" \
    && { [ -e node_modules/tooljig ] && [ -d node_modules/zod ] \
         || npm install --ignore-scripts --no-package-lock --no-audit --no-fund --loglevel=error; } \
    && node --test test/) || status=1
done
exit $status

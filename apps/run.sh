#!/usr/bin/env bash
# Starts one seed app, after setting up what it needs (the Python package in .venv, the Node
# addon and the app's npm links):
#   bash apps/run.sh scheduling_assistant [state directory]
#   bash apps/run.sh nvc_companion            (Python; the Rust one: cargo run -p tooljig --example nvc_companion)
#   bash apps/run.sh org_assistant            (Node)
#   bash apps/run.sh client_tools             (Node)
#   bash apps/run.sh crm_agents [--serve]     (Python; Redis and PostgreSQL)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
app="${1:?which app? scheduling_assistant, nvc_companion, org_assistant, client_tools or crm_agents}"
shift
case "$app" in
  scheduling_assistant)
    bash "$repo/bindings-python/setup.sh"
    exec "$repo/.venv/bin/python" "$here/$app/app.py" "$@" ;;
  nvc_companion)
    bash "$repo/bindings-python/setup.sh"
    exec "$repo/.venv/bin/python" "$here/$app/companion.py" "$@" ;;
  crm_agents)
    bash "$repo/bindings-python/setup.sh"
    exec "$repo/.venv/bin/python" "$here/$app/app.py" "$@" ;;
  org_assistant|client_tools)
    if ! ls "$repo"/bindings-node/*.node >/dev/null 2>&1; then
      (cd "$repo/bindings-node" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
        && npx napi build --platform --js index.js --dts index.d.ts)
    fi
    cd "$here/$app"
    [ -e node_modules/tooljig ] || npm install --ignore-scripts --no-package-lock --no-audit --no-fund --loglevel=error
    exec node main.mjs "$@" ;;
  *) echo "no app named $app" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Starts one seed app, after setting up what it needs (the Python package in .venv):
#   bash apps/run.sh scheduling_assistant [state directory]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
app="${1:?which app? scheduling_assistant}"
shift
case "$app" in
  scheduling_assistant)
    bash "$repo/bindings-python/setup.sh"
    exec "$repo/.venv/bin/python" "$here/$app/app.py" "$@" ;;
  *) echo "no app named $app" >&2; exit 2 ;;
esac

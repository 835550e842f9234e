#!/usr/bin/env bash
# Starts one seed app, after setting up what it needs (the Python package in .venv):
#   bash apps/run.sh scheduling_assistant [state directory]
#   bash apps/run.sh nvc_companion            (Python; the Rust one: cargo run -p tooljig --example nvc_companion)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
app="${1:?which app? scheduling_assistant or nvc_companion}"
shift
case "$app" in
  scheduling_assistant)
    bash "$repo/bindings-python/setup.sh"
    exec "$repo/.venv/bin/python" "$here/$app/app.py" "$@" ;;
  nvc_companion)
    bash "$repo/bindings-python/setup.sh"
    exec "$repo/.venv/bin/python" "$here/$app/companion.py" "$@" ;;
  *) echo "no app named $app" >&2; exit 2 ;;
esac

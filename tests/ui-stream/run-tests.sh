#!/usr/bin/env bash
# Produces tooljig's UI message streams with the Rust example, then parses them with the real
# `ai` npm package under node --test.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"
if [ -f package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
else
  npm install --no-audit --no-fund --loglevel=error
fi
export UI_STREAM_OUT="$here/out"
rm -rf "$UI_STREAM_OUT"
(cd "$repo" && cargo run -q -p tooljig --all-features --example ui_message_stream -- "$UI_STREAM_OUT")
node --test test/

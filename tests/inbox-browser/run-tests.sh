#!/usr/bin/env bash
# The approval inbox in a real browser: Playwright (playwright-core from the npm registry)
# drives Debian's Chromium, installed here with apt-get when missing. The app and the
# `tooljig` bin are the Node package's, built by bindings-node/run-tests.sh (built here if
# that has not run); the seed-004 CRM app's test runs the Python package (bindings-python/setup.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
if [ ! -x /usr/bin/chromium ]; then
  echo "== installing Debian's chromium"
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q chromium >/dev/null || { apt-get update -q >/dev/null; apt-get install -y -q chromium >/dev/null; }
  else sudo apt-get install -y -q chromium >/dev/null; fi
fi
if ! ls "$repo"/bindings-node/*.node >/dev/null 2>&1; then
  (cd "$repo/bindings-node" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error && npx napi build --platform --js index.js --dts index.d.ts)
fi
# The CRM app's test (seed 004) runs the Python package's inbox.
bash "$repo/bindings-python/setup.sh"
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
rm -rf screenshots
node --test test/

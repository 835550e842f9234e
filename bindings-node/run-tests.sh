#!/usr/bin/env bash
# Sets up and runs the Node package's tests: installs the npm dev dependencies when missing or
# stale, builds the addon in debug with the napi CLI (workspace target dir), fails when the
# generated index.d.ts / index.js changed (they are committed, never edited by hand), then runs
# node's test runner. Idempotent; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"

# npm install when node_modules is missing or older than the lock file. Not `npm ci`: npm 11
# refuses it for @napi-rs/cli's per-platform optional packages even with a freshly made lock.
# --ignore-scripts: this package's own `install` script builds a release addon for end users;
# here we build debug.
stamp=node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  echo "== npm install"
  npm install --ignore-scripts --no-audit --no-fund
fi

echo "== cargo test -p tooljig-node (Rust unit tests of the binding)"
cargo test -p tooljig-node --quiet

echo "== napi build (debug)"
npx napi build --platform --js index.js --dts index.d.ts

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "== generated bindings are fresh"
  if ! git diff --exit-code -- index.d.ts index.js; then
    echo "index.d.ts / index.js changed when rebuilt: commit the regenerated files (never edit them by hand)" >&2
    exit 1
  fi
fi

# The examples import `tooljig` and `zod` as an app would; link them once.
if [ ! -e ../examples/node/node_modules/tooljig ] || [ ! -d ../examples/node/node_modules/zod ]; then
  echo "== npm install (examples/node)"
  (cd ../examples/node && npm install --ignore-scripts --no-package-lock --no-audit --no-fund)
fi

echo "== node --test"

node --test --test-concurrency=1 tests/

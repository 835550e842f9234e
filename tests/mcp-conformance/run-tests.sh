#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, from the npm registry)
# against tooljig's MCP server (every server scenario) and client (every scenario but OAuth,
# which the client does not do), with `expected-failures.yml` as the baseline. The suite needs
# Node >= 22; the npm registry's `node` package installs one here, never system-wide.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"
if [ ! -d node_modules/@modelcontextprotocol/conformance ] || [ package.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund --loglevel=error --no-package-lock
fi
node22="$here/node_modules/node/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
"$node22" --version

export CARGO_BUILD_TARGET="${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
(cd "$repo" && cargo build -q -p tooljig --all-features --example mcp_conformance)
subject="$repo/target/$CARGO_BUILD_TARGET/debug/examples/mcp_conformance"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

"$subject" server 127.0.0.1:0 > server.url 2> server.log &
server_pid=$!
for _ in $(seq 100); do [ -s server.url ] && break; sleep 0.1; done
url="$(head -n1 server.url)"
echo "== server scenarios against $url"
status=0
"$node22" "$suite" server --url "$url" --suite all --expected-failures "$here/expected-failures.yml" || status=1

for scenario in initialize tools_call elicitation-sep1034-client-defaults sse-retry; do
  echo "== client scenario $scenario"
  "$node22" "$suite" client --command "$subject client" --scenario "$scenario" \
    --expected-failures "$here/expected-failures.yml" || status=1
done
exit $status

#!/usr/bin/env bash
# A throwaway Redis Cluster for tests: three masters on free local ports, nothing saved.
#
#   scripts/redis-cluster.sh start DIR   starts it in DIR (made if missing); prints its URL,
#                                        redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
#   scripts/redis-cluster.sh stop DIR    stops it and removes DIR
#
# Exits 3 (saying why on stderr) when redis-server or redis-cli is missing, so a test can
# tell "cannot run here" from a failure. Used by the Rust, Python and Node tests alike.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

stop() {
  local pids=()
  for pidfile in "$dir"/*.pid; do
    [ -f "$pidfile" ] && pids+=("$(cat "$pidfile")")
  done
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for _ in $(seq 100); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.02
  done
  rm -rf "$dir"
}

if [ "$cmd" = stop ]; then
  stop
  exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

for tool in redis-server redis-cli; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 3; }
done
# Says why a start failed: the tail of each log.
why() {
  for log in "$dir"/*.log; do
    [ -f "$log" ] && { echo "== $log" >&2; tail -n 5 "$log" >&2; }
  done
}

# A port is free when nothing listens on it nor on its cluster bus port (+10000).
free() {
  ! (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && ! (echo >"/dev/tcp/127.0.0.1/$(($1 + 10000))") 2>/dev/null
}

# One attempt on fresh ports; another test may take a port between the check and the bind,
# so a failed attempt is retried on others.
attempt() {
  mkdir -p "$dir"
  ports=()
  while [ "${#ports[@]}" -lt 3 ]; do
    # Below the kernel's ephemeral range (32768 and up here) with its bus port too: an
    # outgoing connection holds its local port, which `free` cannot see and bind then fails on.
    p=$((20000 + RANDOM % 2700))
    if free "$p" && [[ " ${ports[*]-} " != *" $p "* ]]; then ports+=("$p"); fi
  done
  for p in "${ports[@]}"; do
    redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
      --cluster-config-file "$dir/nodes-$p.conf" --dir "$dir" --save '' --appendonly no \
      --daemonize yes --pidfile "$dir/$p.pid" --logfile "$dir/$p.log" >/dev/null || return 1
  done
  for p in "${ports[@]}"; do
    for _ in $(seq 100); do
      redis-cli -p "$p" ping 2>/dev/null | grep -q PONG && break
      sleep 0.05
    done
    redis-cli -p "$p" ping 2>/dev/null | grep -q PONG || return 1
  done
  nodes=()
  for p in "${ports[@]}"; do nodes+=("127.0.0.1:$p"); done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 || return 1
  for p in "${ports[@]}"; do
    for _ in $(seq 200); do
      redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break
      sleep 0.05
    done
    redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || return 1
  done
}

for try in 1 2 3; do
  if attempt; then
    echo "redis+cluster://$(IFS=,; echo "${nodes[*]}")"
    exit 0
  fi
  echo "attempt $try to start a Redis Cluster failed:" >&2
  why
  stop
done
exit 1

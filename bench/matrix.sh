#!/usr/bin/env bash
# matrix.sh: the `worker bench` matrix of bench/RESULTS.md. Runs each op on
# the zone, flock and mutex backends, and on Redis when redis-server is on
# PATH (this script starts its own on 127.0.0.1 and stops it), at -procs 1,2,
# and prints ops/s per backend/op/procs with zone's ratio to each other
# backend.
#
# Environment: DURATION (default 2s), KEYS (default 1000), PROCS (default
# 1,2), REDIS_PORT (default: a free port from 6390 up).
set -euo pipefail

DURATION=${DURATION:-2s}
KEYS=${KEYS:-1000}
PROCS=${PROCS:-1,2}
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
redis_pid=
cleanup() {
	if [ -n "$redis_pid" ]; then
		kill "$redis_pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$redis_pid" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

go build -o "$tmp/worker" ./cmd/worker

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

backends="zone flock mutex"
redis_addr=
if command -v redis-server >/dev/null; then
	port=${REDIS_PORT:-6390}
	for _ in $(seq 100); do port_free "$port" && break; port=$((port + 1)); done
	port_free "$port" || { echo "matrix.sh: no free port for redis" >&2; exit 1; }
	redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
		--dir "$tmp" --logfile "$tmp/redis.log" >/dev/null &
	redis_pid=$!
	for _ in $(seq 100); do
		redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.05
	done
	redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null
	redis_addr=127.0.0.1:$port
	backends="zone redis flock mutex"
	echo "# redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on $redis_addr"
else
	echo "# redis-server not on PATH: no redis rows"
fi

echo "# worker bench -procs $PROCS -keys $KEYS -duration $DURATION -json, $(date -u +%F), $(nproc) CPUs"
: >"$tmp/rows"
for op in incr get set req count; do
	for b in $backends; do
		case "$b/$op" in
		flock/req | flock/count | mutex/req | mutex/count) continue ;;
		esac
		args=(bench -backend "$b" -op "$op" -procs "$PROCS" -keys "$KEYS" -duration "$DURATION" -json)
		[ "$b" = redis ] && args+=(-redis "$redis_addr")
		"$tmp/worker" "${args[@]}" 2>/dev/null >"$tmp/out.json"
		jq -r --arg b "$b" --arg op "$op" \
			'.rows[] | [$op, $b, .procs, .ops_per_sec, .ns_per_op, .p99_ns] | @tsv' \
			"$tmp/out.json" >>"$tmp/rows"
	done
done

# One line per op/procs: ops/s of each backend, then zone over each other.
awk -F'\t' -v backends="$backends" '
function fmt(x) { return x >= 1e6 ? sprintf("%.2f M", x / 1e6) : sprintf("%.1f k", x / 1e3) }
BEGIN { nb = split(backends, bs, " ") }
{ k = $1 "/" $3; if (!(k in seen)) { seen[k] = 1; keys[++n] = k; opOf[k] = $1; prOf[k] = $3 }
  v[k, $2] = $4; ns[k, $2] = $5 }
END {
  h = "| op | procs |"; s = "|---|---:|"
  for (i = 1; i <= nb; i++) { h = h " " bs[i] " ops/s |"; s = s "---:|" }
  for (i = 2; i <= nb; i++) { h = h " zone/" bs[i] " |"; s = s "---:|" }
  print h; print s
  for (j = 1; j <= n; j++) {
    k = keys[j]; line = "| " opOf[k] " | " prOf[k] " |"
    for (i = 1; i <= nb; i++) line = line " " (((k, bs[i]) in v) ? fmt(v[k, bs[i]]) : "—") " |"
    for (i = 2; i <= nb; i++) {
      r = "—"
      if (((k, bs[i]) in v) && ((k, "zone") in v) && v[k, bs[i]] > 0) r = sprintf("%.1f×", v[k, "zone"] / v[k, bs[i]])
      line = line " " r " |"
    }
    print line
  }
}' "$tmp/rows"

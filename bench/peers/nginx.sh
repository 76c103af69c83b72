#!/usr/bin/env bash
# nginx.sh: nginx's lua_shared_dict against shmzone's dict, one process each.
# Starts nginx (bench/peers/nginx.conf, one worker) on a temporary prefix on
# 127.0.0.1 and a free port, asks it for ns/op of incr/get/set at 1,000 and
# 100,000 keys (N ops timed inside the worker, REPS runs, median), stops it,
# runs the same cases of `go test -bench BenchmarkOps ./dict` (REPS counts,
# median) and prints both with shmzone's ratio (nginx ns/op over zone ns/op).
#
# Needs nginx and the lua module (Debian: nginx-light libnginx-mod-http-lua).
# Environment: N (default 1000000), REPS (default 3), PORT (default: a free
# port from 8390 up), GO (default go).
set -euo pipefail

N=${N:-1000000}
REPS=${REPS:-3}
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

command -v nginx >/dev/null || { echo "nginx.sh: nginx not installed" >&2; exit 1; }
[ -e /usr/share/nginx/modules/ngx_http_lua_module.so ] ||
	{ echo "nginx.sh: ngx_http_lua_module not installed (libnginx-mod-http-lua)" >&2; exit 1; }

prefix=$(mktemp -d)
nginx_pid=
cleanup() {
	if [ -n "$nginx_pid" ]; then
		kill -QUIT "$nginx_pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$nginx_pid" 2>/dev/null || true
	fi
	rm -rf "$prefix"
}
trap cleanup EXIT INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=${PORT:-8390}
for _ in $(seq 100); do port_free "$port" && break; port=$((port + 1)); done
port_free "$port" || { echo "nginx.sh: no free port" >&2; exit 1; }

mkdir -p "$prefix/logs"
sed "s/__PORT__/$port/" "$here/nginx.conf" >"$prefix/nginx.conf"
nginx -p "$prefix" -c "$prefix/nginx.conf" -g "error_log $prefix/logs/error.log warn;" \
	2>>"$prefix/logs/stderr.log" &
nginx_pid=$!
up=
for _ in $(seq 100); do
	if curl -fsS "http://127.0.0.1:$port/bench?op=get&keys=1&n=1" >/dev/null 2>&1; then up=1; break; fi
	sleep 0.05
done
[ -n "$up" ] || { echo "nginx.sh: nginx did not start" >&2; cat "$prefix/logs/"* >&2; exit 1; }

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "# $(nginx -v 2>&1 | sed 's/.*: //'), lua_shared_dict 100m, 1 worker, N=$N, median of $REPS; $(date -u +%F), $(nproc) CPUs"
declare -A ng zo
for keys in 1000 100000; do
	for op in incr get set; do
		ng[$op/$keys]=$(for _ in $(seq "$REPS"); do
			curl -fsS --max-time 120 "http://127.0.0.1:$port/bench?op=$op&keys=$keys&n=$N"
		done | median)
	done
done
kill -QUIT "$nginx_pid"
wait "$nginx_pid" 2>/dev/null || true
nginx_pid=

echo "# cd $root && $GO test -run '^\$' -bench 'BenchmarkOps/op=(incr|get|set)/keys=(1000|100000)\$' -count $REPS ./dict"
out=$(cd "$root" && "$GO" test -run '^$' -bench 'BenchmarkOps/op=(incr|get|set)/keys=(1000|100000)$' -count "$REPS" ./dict)
for keys in 1000 100000; do
	for op in incr get set; do
		zo[$op/$keys]=$(awk -v name="BenchmarkOps/op=$op/keys=$keys" \
			'{ n = $1; sub(/-[0-9]+$/, "", n) } n == name { print $3 }' <<<"$out" | median)
	done
done

echo "| op | keys | nginx ns/op | zone ns/op | zone speed-up (nginx/zone) |"
echo "|---|---:|---:|---:|---:|"
for keys in 1000 100000; do
	for op in incr get set; do
		awk -v op="$op" -v k="$keys" -v a="${ng[$op/$keys]}" -v b="${zo[$op/$keys]}" \
			'BEGIN { printf "| %s | %d | %.1f | %.1f | %.2f× |\n", op, k, a, b, (b > 0 ? a / b : 0) }'
	done
done

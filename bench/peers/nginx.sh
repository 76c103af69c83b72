#!/usr/bin/env bash
# nginx.sh: nginx's lua_shared_dict against shmzone's dict, in one process
# and in two at once.
#
# Starts nginx (bench/peers/nginx.conf, two workers, one per CPU) on a
# temporary prefix on 127.0.0.1 and a free port, and asks it, REPS times
# each (median):
#   - one worker: ns/op of incr/get/set at 1,000 and 100,000 keys
#     ("key:%011d", int values), N ops timed inside the worker, and the loop
#     overhead: the same loop and key stepping without the dict call
#     (op=loop; it is part of every nginx figure);
#   - two workers at once: incr and get, each worker on its own 1,000 keys
#     ("p<i>:key:%08d"), N ops each, started together at a barrier.
# It checks that every timed loop was compiled by LuaJIT (traces completed in
# the loop's function, none aborted) and that both workers (two pids) ran.
# Then it stops nginx and runs, REPS counts each (median):
#   go test -bench 'BenchmarkOps/op=(incr|get|set)/keys=(1000|100000)$' ./dict
#   go test -bench 'BenchmarkProcs/op=(incr|get)/keys=(own|shared)/procs=2$' ./dict
# BenchmarkProcs' incr keys=own case is the two-worker incr match: each
# process has its own 1,000 keys, drawn at random with no regard to shards.
# Its get case reads 1,000 keys that both processes share; nginx has one
# lock per lua_shared_dict, which every worker shares whatever the keys.
#
# Output (FORMAT=markdown, the default): a comment line, the one-process
# table (nginx ns/op, zone ns/op, ratio), the loop overhead and JIT check,
# and the two-process table.
#
# Output with FORMAT=tsv, for programs; every line is one of:
#   op<TAB>keys<TAB>workers<TAB>nginx_ns_per_op<TAB>zone_ns_per_op
#       op: incr, get or set; keys: the keys per process (1000 or 100000);
#       workers: processes running at once (1 or 2; 2 only for incr and get
#       at 1000). ns/op is per process: the time one process takes for one
#       operation (workers=2: the slower worker's time for its N operations
#       over N; zone: 2 s / BenchmarkProcs' ops/s). Decimal, one digit after
#       the point. Rows come in the order incr get set at 1000, the same at
#       100000, then incr get at 1000 with workers=2.
#   # NAME<TAB>VALUE[<TAB>VALUE...]   metadata, one of:
#       # nginx<TAB>1.22.1            nginx version
#       # ngx_lua<TAB>0.10.23         lua-nginx-module version
#       # luajit<TAB>LuaJIT 2.1.0-beta3 (jit.version)
#       # luajit_package<TAB>libluajit2-5.1-2 2.1-20230119-1 (dpkg, if any)
#       # resty_core_shdict<TAB>true  FFI shdict methods in use
#       # N<TAB>1000000               operations per timed run and process
#       # REPS<TAB>3                  runs per figure (median)
#       # cpus<TAB>2                  nproc
#       # date<TAB>2026-11-22T10:00:00Z (UTC, when the run started)
#       # loadavg<TAB>0.10 0.20 0.30  /proc/loadavg when nginx started: other
#                                     load on the machine skews every figure
#       # jit_check<TAB>ok|FAILED     every timed loop traced, no aborts
#       # loop_ns_per_op<TAB>KEYS<TAB>NS   nginx loop overhead, one worker
#       # ops_per_s<TAB>OP<TAB>KEYS<TAB>WORKERS<TAB>NGINX<TAB>ZONE
#                                     aggregate ops/s of both processes
#       # worker_pids<TAB>PID PID     the nginx workers that ran the loops
# Metadata lines come first, then the data rows. Nothing else is printed on
# stdout; progress and errors go to stderr. The exit status is non-zero if a
# run failed; then stdout is empty.
#
# Needs nginx and the lua module (Debian: nginx-light libnginx-mod-http-lua).
# Environment: N (default 1000000), REPS (default 3), PORT (default: a free
# port from 8390 up), GO (default go), FORMAT (markdown or tsv).
set -euo pipefail

N=${N:-1000000}
REPS=${REPS:-3}
GO=${GO:-go}
FORMAT=${FORMAT:-markdown}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

case $FORMAT in markdown | tsv) ;; *) echo "nginx.sh: FORMAT must be markdown or tsv" >&2; exit 2 ;; esac
command -v nginx >/dev/null || { echo "nginx.sh: nginx not installed" >&2; exit 1; }
[ -e /usr/share/nginx/modules/ngx_http_lua_module.so ] ||
	{ echo "nginx.sh: ngx_http_lua_module not installed (libnginx-mod-http-lua)" >&2; exit 1; }

prefix=$(mktemp -d)
nginx_pid=
stop_nginx() {
	[ -n "$nginx_pid" ] || return 0
	local workers
	workers=$(pgrep -P "$nginx_pid" || true)
	kill -QUIT "$nginx_pid" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$nginx_pid" 2>/dev/null; then
		kill -KILL "$nginx_pid" 2>/dev/null || true
		for w in $workers; do kill -KILL "$w" 2>/dev/null || true; done
	fi
	wait "$nginx_pid" 2>/dev/null || true
	nginx_pid=
}
cleanup() {
	stop_nginx
	rm -rf "$prefix"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=${PORT:-8390}
for _ in $(seq 100); do port_free "$port" && break; port=$((port + 1)); done
port_free "$port" || { echo "nginx.sh: no free port" >&2; exit 1; }
url=http://127.0.0.1:$port
started=$(date -u +%FT%TZ)

mkdir -p "$prefix/logs"
sed "s/__PORT__/$port/" "$here/nginx.conf" >"$prefix/nginx.conf"
nginx -p "$prefix" -c "$prefix/nginx.conf" -g "error_log $prefix/logs/error.log warn;" \
	2>>"$prefix/logs/stderr.log" &
nginx_pid=$!
up=
for _ in $(seq 100); do
	if curl -fsS "$url/info" >/dev/null 2>&1; then up=1; break; fi
	sleep 0.05
done
[ -n "$up" ] || { echo "nginx.sh: nginx did not start" >&2; cat "$prefix/logs/"* >&2; exit 1; }

info=$(curl -fsS "$url/info")
infoval() { awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print }' <<<"$info"; }
nginx_version=$(nginx -v 2>&1 | sed 's/.*nginx\///')
ngx_lua=$(infoval ngx_lua)
luajit=$(infoval luajit)
resty_core=$(infoval resty_core_shdict)
# The package of the LuaJIT library the lua module is linked with, if dpkg
# knows it: Debian's libluajit2 is OpenResty's LuaJIT branch.
luajit_pkg=
lib=$(ldd /usr/share/nginx/modules/ngx_http_lua_module.so 2>/dev/null | awk '/luajit/ { print $3; exit }' || true)
if [ -n "$lib" ] && pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null); then
	luajit_pkg=$(dpkg-query -W -f '${Package} ${Version}' "${pkg%%: *}" 2>/dev/null || true)
fi
loadavg=$(cut -d' ' -f1-3 /proc/loadavg)

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# One worker: /bench answers "NS_PER_OP TRACES ABORTS".
jit_check=ok
declare -A ng zo ng2 zo2 ops2n ops2z loopns
for keys in 1000 100000; do
	for op in incr get set loop; do
		echo "nginx.sh: nginx $op keys=$keys workers=1" >&2
		runs=$(for _ in $(seq "$REPS"); do
			curl -fsS --max-time 600 "$url/bench?op=$op&keys=$keys&n=$N"
		done)
		if awk '$2 < 1 || $3 != 0 { bad = 1 } END { exit !bad }' <<<"$runs"; then
			jit_check=FAILED
			echo "nginx.sh: $op keys=$keys: a timed loop was not traced or aborted: $runs" >&2
		fi
		v=$(awk '{ print $1 }' <<<"$runs" | median)
		if [ "$op" = loop ]; then loopns[$keys]=$v; else ng[$op/$keys]=$v; fi
	done
done

# Two workers: /start, then poll /result until both workers have answered
# "WORKER PID NS".
pids=
for op in incr get; do
	echo "nginx.sh: nginx $op keys=1000 workers=2" >&2
	slowest=()
	for _ in $(seq "$REPS"); do
		gen=$(curl -fsS "$url/start?op=$op&keys=1000&n=$N&workers=2")
		res=
		deadline=$((SECONDS + 600))
		while [ "$SECONDS" -lt "$deadline" ]; do
			code=$(curl -sS --max-time 600 -o "$prefix/result" -w '%{http_code}' "$url/result?gen=$gen")
			if [ "$code" = 200 ]; then res=$(cat "$prefix/result"); break; fi
			[ "$code" = 204 ] || { echo "nginx.sh: /result: HTTP $code" >&2; exit 1; }
			sleep 0.1
		done
		[ -n "$res" ] || { echo "nginx.sh: two-worker run $gen did not finish" >&2; exit 1; }
		if ! awk 'NF != 3 || $1 != NR - 1 { bad = 1 } END { exit bad || NR != 2 }' <<<"$res" ||
			[ "$(awk '{ print $2 }' <<<"$res" | sort -u | wc -l)" -ne 2 ]; then
			echo "nginx.sh: two-worker run $gen did not run in two workers: $res" >&2
			exit 1
		fi
		pids=$(awk '{ print $2 }' <<<"$res" | sort -n | xargs)
		slowest+=("$(awk '$3 > m { m = $3 } END { print m }' <<<"$res")")
	done
	s=$(printf '%s\n' "${slowest[@]}" | median)
	ng2[$op]=$(awk -v s="$s" -v n="$N" 'BEGIN { printf "%.4f", s / n }')
	ops2n[$op]=$(awk -v s="$s" -v n="$N" 'BEGIN { printf "%.0f", 2 * n / s * 1e9 }')
done
stop_nginx

gocmd1="$GO test -run '^\$' -bench 'BenchmarkOps/op=(incr|get|set)/keys=(1000|100000)\$' -count $REPS ./dict"
gocmd2="$GO test -run '^\$' -bench 'BenchmarkProcs/op=(incr|get)/keys=(own|shared)/procs=2\$' -count $REPS ./dict"
echo "nginx.sh: $gocmd1" >&2
out=$(cd "$root" && "$GO" test -run '^$' -bench 'BenchmarkOps/op=(incr|get|set)/keys=(1000|100000)$' -count "$REPS" ./dict)
for keys in 1000 100000; do
	for op in incr get set; do
		zo[$op/$keys]=$(awk -v name="BenchmarkOps/op=$op/keys=$keys" \
			'{ n = $1; sub(/-[0-9]+$/, "", n) } n == name { print $3 }' <<<"$out" | median)
	done
done
echo "nginx.sh: $gocmd2" >&2
out=$(cd "$root" && "$GO" test -run '^$' -bench 'BenchmarkProcs/op=(incr|get)/keys=(own|shared)/procs=2$' -count "$REPS" ./dict)
declare -A zkeys=([incr]=own [get]=shared)
for op in incr get; do
	o=$(awk -v name="BenchmarkProcs/op=$op/keys=${zkeys[$op]}/procs=2" \
		'{ n = $1; sub(/-[0-9]+$/, "", n) } n == name { for (i = 2; i <= NF; i++) if ($i == "ops/s") print $(i - 1) }' \
		<<<"$out" | median)
	[ -n "$o" ] || { echo "nginx.sh: no BenchmarkProcs result for $op" >&2; exit 1; }
	ops2z[$op]=$(awk -v o="$o" 'BEGIN { printf "%.0f", o }')
	zo2[$op]=$(awk -v o="$o" 'BEGIN { printf "%.4f", 2e9 / o }')
done

if [ "$FORMAT" = tsv ]; then
	printf '# nginx\t%s\n' "$nginx_version"
	printf '# ngx_lua\t%s\n' "$ngx_lua"
	printf '# luajit\t%s\n' "$luajit"
	[ -z "$luajit_pkg" ] || printf '# luajit_package\t%s\n' "$luajit_pkg"
	printf '# resty_core_shdict\t%s\n' "$resty_core"
	printf '# N\t%s\n# REPS\t%s\n# cpus\t%s\n# date\t%s\n' "$N" "$REPS" "$(nproc)" "$started"
	printf '# loadavg\t%s\n' "$loadavg"
	printf '# jit_check\t%s\n' "$jit_check"
	for keys in 1000 100000; do
		printf '# loop_ns_per_op\t%s\t%.1f\n' "$keys" "${loopns[$keys]}"
	done
	for op in incr get; do
		printf '# ops_per_s\t%s\t1000\t2\t%s\t%s\n' "$op" "${ops2n[$op]}" "${ops2z[$op]}"
	done
	printf '# worker_pids\t%s\n' "$pids"
	for keys in 1000 100000; do
		for op in incr get set; do
			printf '%s\t%s\t1\t%.1f\t%.1f\n' "$op" "$keys" "${ng[$op/$keys]}" "${zo[$op/$keys]}"
		done
	done
	for op in incr get; do
		printf '%s\t1000\t2\t%.1f\t%.1f\n' "$op" "${ng2[$op]}" "${zo2[$op]}"
	done
	exit 0
fi

echo "# nginx $nginx_version, ngx_lua $ngx_lua, $luajit${luajit_pkg:+ ($luajit_pkg)}, lua_shared_dict 100m; N=$N, median of $REPS; $started, $(nproc) CPUs, load $loadavg"
echo "# cd $root && $gocmd1"
echo
echo "| op | keys | nginx ns/op | zone ns/op | zone speed-up (nginx/zone) |"
echo "|---|---:|---:|---:|---:|"
for keys in 1000 100000; do
	for op in incr get set; do
		awk -v op="$op" -v k="$keys" -v a="${ng[$op/$keys]}" -v b="${zo[$op/$keys]}" \
			'BEGIN { printf "| %s | %d | %.1f | %.1f | %.2f× |\n", op, k, a, b, (b > 0 ? a / b : 0) }'
	done
done
echo
printf 'nginx loop overhead (same loop and key stepping, no dict call; part of every nginx figure): %.1f ns/op at 1000 keys, %.1f at 100000.\n' \
	"${loopns[1000]}" "${loopns[100000]}"
echo "nginx JIT check (every timed loop compiled by LuaJIT, no trace aborts; resty.core FFI shdict: $resty_core): $jit_check."
echo
echo "# two processes at once, 1000 keys each: nginx workers $pids; cd $root && $gocmd2"
echo
echo "| op | keys | workers | nginx ns/op per worker | nginx ops/s (both) | zone ns/op per process | zone ops/s (both) | zone speed-up (nginx/zone) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for op in incr get; do
	awk -v op="$op" -v a="${ng2[$op]}" -v b="${zo2[$op]}" -v oa="${ops2n[$op]}" -v ob="${ops2z[$op]}" \
		'BEGIN { printf "| %s | 1000 | 2 | %.1f | %.2f M | %.1f | %.2f M | %.2f× |\n", op, a, oa / 1e6, b, ob / 1e6, (b > 0 ? a / b : 0) }'
done

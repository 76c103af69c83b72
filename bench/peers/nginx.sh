#!/usr/bin/env bash
# nginx.sh: nginx's lua_shared_dict against shmzone's dict, and
# lua-resty-limit-traffic's resty.limit.req and resty.limit.count against
# package limiter's Req and Count, in one process and in two at once.
#
# Starts nginx (bench/peers/nginx.conf, two workers, one per CPU, the Lua
# libraries from REF, a lua_shared_dict of ZONE_MIB MiB) on a temporary
# prefix on 127.0.0.1 and a free port, and asks it, REPS times each
# (median):
#   - one worker: ns/op of incr/get/set at 1,000 and 100,000 keys
#     ("key:%011d", int values), N ops timed inside the worker, and the loop
#     overhead: the same loop and key stepping without the dict call
#     (op=loop; it is part of every nginx figure);
#   - one worker: ns/op of req and count, lim:incoming(key, true) on 1,000
#     client keys, N decisions, and of reqhot, the same call of a req
#     limiter at 1 request a second on the 4 hot keys, N decisions;
#   - two workers at once: incr and get, each worker on its own 1,000 keys
#     ("p<i>:key:%08d"), req and count, each worker on its own 1,000
#     client keys, and reqhot, both workers on the same 4 hot keys, N ops
#     each, started together at a barrier.
# It checks that every timed loop was compiled by LuaJIT (traces completed in
# the loop's function, none aborted there) and that both workers (two pids)
# ran. Then it stops nginx and runs, REPS counts each (median), with
# SHMZONE_BENCH_ZONE_MIB=ZONE_MIB so that every zone is the size of the
# lua_shared_dict:
#   go test -bench 'BenchmarkOps/op=(incr|get|set)/keys=(1000|100000)$' ./dict
#   go test -bench 'BenchmarkProcs/op=(incr|get)/keys=(own|shared)/procs=2$' ./dict
#   SHMZONE_SEED=SEED go test -bench 'BenchmarkLimiter/op=(req|count)/keys=(own|hot)/procs=(1|2)$' ./limiter
# BenchmarkProcs' incr keys=own case is the two-worker incr match: each
# process has its own 1,000 keys, drawn at random with no regard to shards.
# Its get case reads 1,000 keys that both processes share; nginx has one
# lock per lua_shared_dict, which every worker shares whatever the keys.
#
# The limiters: both sides decide for the same clients. Process or worker i
# has the 1,000 client addresses ("203.0.113.7:51234") of
# BenchmarkLimiter's process i at SHMZONE_SEED=SEED; bench/peers/clientaddrs
# writes them for nginx. Each key gets its first decision before the timed
# loop, on both sides. The Go processes pick their clients at random; an
# nginx worker steps through its clients in order. The limits are
# BenchmarkLimiter's, which reject no decision, so that every decision
# writes:
#   - req: rate 1e9 per second, burst 1e9 (Lua: resty.limit.req.new("bench",
#     1e9, 1e9); Go: NewReq(d, "t", 1e9, 1e9));
#   - count: limit 2^53 a window of one hour (Lua:
#     resty.limit.count.new("bench", 2^53, 3600); Go: NewCount(d, "t",
#     1<<53, time.Hour)).
# reqhot is BenchmarkLimiter's keys=hot case, a flood on a few keys that
# every process hammers, as when one client floods a server: rate 1 per
# second, burst 0 (Lua: resty.limit.req.new("bench", 1, 0); Go: NewReq(d,
# "hot", 1, 0)), on the 4 keys "203.0.113.7", "198.51.100.23",
# "192.0.2.146" and "203.0.113.250" (the Go side's hotKeys), which every
# worker and process shares, seeds aside. Each worker and process gives
# each key its first decision before the timed loop (admitted for the first
# to decide, else rejected); after it nearly every decision is a rejection
# (Lua: incoming answers nil, "rejected"), which reads the key and writes
# nothing. The loop counts a rejection as a decision like any other; only
# another error fails the run. An nginx worker steps through the 4 keys in
# order; a Go process picks them at random.
# nginx's clock is the worker's cached ngx.now(), which stands still
# during a loop; the zone's advances. Neither changes a decision of req or
# count; for reqhot, the zone admits a key again a second after its last
# admission, a few decisions in millions, where a worker's loop, its clock
# standing still, keeps rejecting.
#
# Output (FORMAT=markdown, the default): a comment line, the one-process
# table (nginx ns/op, zone ns/op, ratio), the loop overhead and JIT check,
# the two-process table and the limiters' table.
#
# Output with FORMAT=tsv, for programs; every line is one of:
#   op<TAB>keys<TAB>workers<TAB>nginx_ns_per_op<TAB>zone_ns_per_op
#       op: incr, get, set, req, count or reqhot; keys: the keys per
#       process (1000 or 100000; reqhot: 4, the hot keys every process
#       shares); workers: processes running at once (1 or 2; 2 only for
#       incr, get, req and count at 1000 and reqhot at 4). ns/op is per
#       process: the time one process takes for one operation (workers=2:
#       the slower worker's time for its N operations over N; zone: 2 s /
#       BenchmarkProcs' or BenchmarkLimiter's ops/s; req, count and reqhot
#       at workers=1: 1 s / BenchmarkLimiter's procs=1 ops/s). Decimal, one
#       digit after the point. Rows come in the order incr get set at 1000,
#       the same at 100000, req count at 1000, reqhot at 4, then incr get
#       req count at 1000 and reqhot at 4 with workers=2.
#   # NAME<TAB>VALUE[<TAB>VALUE...]   metadata, one of:
#       # nginx<TAB>1.22.1            nginx version
#       # ngx_lua<TAB>0.10.23         lua-nginx-module version
#       # luajit<TAB>LuaJIT 2.1.0-beta3 (jit.version)
#       # luajit_package<TAB>libluajit2-5.1-2 2.1-20230119-1 (dpkg, if any)
#       # resty_core_shdict<TAB>true  FFI shdict methods in use
#       # limit_traffic<TAB>0.09      lua-resty-limit-traffic version, from REF
#       # limits<TAB>req rate 1e9/s burst 1e9; count 2^53 per 3600 s; reqhot rate 1/s burst 0 on 4 shared keys
#       # zone_mib<TAB>64             the lua_shared_dict's size and the zones', MiB
#       # seed<TAB>12345              SHMZONE_SEED of the limiters' client keys
#       # N<TAB>1000000               operations per timed run and process
#       # REPS<TAB>3                  runs per figure (median)
#       # cpus<TAB>2                  nproc
#       # date<TAB>2026-11-22T10:00:00Z (UTC, when the run started)
#       # loadavg<TAB>0.10 0.20 0.30  /proc/loadavg when nginx started: other
#                                     load on the machine skews every figure
#       # jit_check<TAB>ok|FAILED     every timed loop traced, no aborts in it
#       # jit_other_aborts<TAB>OP<TAB>KEYS<TAB>WORKERS<TAB>COUNT<TAB>WHY
#                                     traces that aborted in other functions
#                                     while a timed loop ran (the loop's own
#                                     trace is jit_check's), summed over the
#                                     REPS runs; WHY lists each reason once,
#                                     "; " between them. Only runs with some.
#       # loop_ns_per_op<TAB>KEYS<TAB>NS   nginx loop overhead, one worker
#       # ops_per_s<TAB>OP<TAB>KEYS<TAB>WORKERS<TAB>NGINX<TAB>ZONE
#                                     aggregate ops/s of both processes
#       # worker_pids<TAB>PID PID     the nginx workers that ran the loops
# Metadata lines come first, then the data rows. Nothing else is printed on
# stdout; progress and errors go to stderr. The exit status is non-zero if a
# run failed; then stdout is empty.
#
# Needs nginx, the lua module and lua-resty-core (Debian: nginx-light
# libnginx-mod-http-lua lua-resty-core; make bench-deps installs them), and
# lua-resty-limit-traffic's sources under REF.
# Environment: N (default 1000000), REPS (default 3), PORT (default: a free
# port from 8390 up), GO (default go), FORMAT (markdown or tsv), REF
# (default: ../shared/reference beside the repository, the Lua sources),
# SEED (default: a random one, printed as the seed metadata), ZONE_MIB
# (default 64, the zone the README recommends for a server).
set -euo pipefail

N=${N:-1000000}
REPS=${REPS:-3}
ZONE_MIB=${ZONE_MIB:-64}
export SHMZONE_BENCH_ZONE_MIB=$ZONE_MIB
GO=${GO:-go}
FORMAT=${FORMAT:-markdown}
SEED=${SEED:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
REF=${REF:-$root/../shared/reference}

case $FORMAT in markdown | tsv) ;; *) echo "nginx.sh: FORMAT must be markdown or tsv" >&2; exit 2 ;; esac
command -v nginx >/dev/null || { echo "nginx.sh: nginx not installed" >&2; exit 1; }
[ -e /usr/share/nginx/modules/ngx_http_lua_module.so ] ||
	{ echo "nginx.sh: ngx_http_lua_module not installed (libnginx-mod-http-lua)" >&2; exit 1; }
[ -e "$REF/lua-resty-limit-traffic/lib/resty/limit/req.lua" ] &&
	[ -e "$REF/lua-resty-limit-traffic/lib/resty/limit/count.lua" ] ||
	{ echo "nginx.sh: no lua-resty-limit-traffic under REF=$REF" >&2; exit 1; }
REF=$(cd "$REF" && pwd)
[ -n "$SEED" ] || SEED=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
case $SEED in '' | *[!0-9]*) echo "nginx.sh: SEED must be a decimal number" >&2; exit 2 ;; esac

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

# The limiters' client keys, one file per worker: those of
# BenchmarkLimiter's processes at SHMZONE_SEED=SEED.
mkdir -p "$prefix/logs" "$prefix/keys"
echo "nginx.sh: client keys of seed $SEED" >&2
for i in 0 1; do
	(cd "$root" && "$GO" run ./bench/peers/clientaddrs -seed "$SEED" -stream "$i" -n 1000) >"$prefix/keys/$i.txt"
done
sed -e "s|__PORT__|$port|" -e "s|__REF__|$REF|g" -e "s|__ZONE_MIB__|$ZONE_MIB|g" "$here/nginx.conf" >"$prefix/nginx.conf"
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
limit_traffic=$(infoval limit_traffic)
# The package of the LuaJIT library the lua module is linked with, if dpkg
# knows it: Debian's libluajit2 is OpenResty's LuaJIT branch.
luajit_pkg=
lib=$(ldd /usr/share/nginx/modules/ngx_http_lua_module.so 2>/dev/null | awk '/luajit/ { print $3; exit }' || true)
if [ -n "$lib" ] && pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null); then
	luajit_pkg=$(dpkg-query -W -f '${Package} ${Version}' "${pkg%%: *}" 2>/dev/null || true)
fi
loadavg=$(cut -d' ' -f1-3 /proc/loadavg)

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# jit notes the trace counts of the runs of a case, "TRACES ABORTS OTHER"
# in fields f to f+2 of each line and the reasons after a tab: it fails
# jit_check unless every loop was traced with no abort in it, and keeps
# the other aborts and their reasons for a jit_other_aborts line.
jit_check=ok
other_aborts=()
jit() {
	local what=$1 f=$2 runs=$3 n why
	if awk -v f="$f" '$f < 1 || $(f + 1) != 0 { bad = 1 } END { exit !bad }' <<<"$runs"; then
		jit_check=FAILED
		echo "nginx.sh: $what: a timed loop was not traced or aborted: $runs" >&2
	fi
	n=$(awk -v f="$f" '{ s += $(f + 2) } END { print s + 0 }' <<<"$runs")
	[ "$n" -gt 0 ] || return 0
	why=$(awk -F'\t' 'NF > 1 { k = split($2, a, "; "); for (i = 1; i <= k; i++) if (!(a[i] in seen)) { seen[a[i]]; o = o (o == "" ? "" : "; ") a[i] } } END { print o }' <<<"$runs")
	other_aborts+=("$(printf '%s\t%s\t%s' "${what// /$'\t'}" "$n" "$why")")
}

# One worker: /bench answers "NS_PER_OP TRACES ABORTS OTHER[<TAB>WHY]".
declare -A ng zo ng2 zo2 ops2n ops2z loopns
one() {
	local op=$1 keys=$2 runs
	echo "nginx.sh: nginx $op keys=$keys workers=1" >&2
	runs=$(for _ in $(seq "$REPS"); do
		curl -fsS --max-time 600 "$url/bench?op=$op&keys=$keys&n=$N"
	done)
	jit "$op $keys 1" 2 "$runs"
	v=$(awk '{ print $1 }' <<<"$runs" | median)
	if [ "$op" = loop ]; then loopns[$keys]=$v; else ng[$op/$keys]=$v; fi
}
for keys in 1000 100000; do
	for op in incr get set loop; do one "$op" "$keys"; done
done
for op in req count; do one "$op" 1000; done
one reqhot 4

# Two workers: /start, then poll /result until both workers have answered
# "WORKER PID NS TRACES ABORTS OTHER[<TAB>WHY]".
pids=
declare -A nkeys=([incr]=1000 [get]=1000 [req]=1000 [count]=1000 [reqhot]=4)
for op in incr get req count reqhot; do
	k=${nkeys[$op]}
	echo "nginx.sh: nginx $op keys=$k workers=2" >&2
	slowest=()
	all=
	for _ in $(seq "$REPS"); do
		gen=$(curl -fsS "$url/start?op=$op&keys=$k&n=$N&workers=2")
		res=
		deadline=$((SECONDS + 600))
		while [ "$SECONDS" -lt "$deadline" ]; do
			code=$(curl -sS --max-time 600 -o "$prefix/result" -w '%{http_code}' "$url/result?gen=$gen")
			if [ "$code" = 200 ]; then res=$(cat "$prefix/result"); break; fi
			[ "$code" = 204 ] || { echo "nginx.sh: /result: HTTP $code" >&2; exit 1; }
			sleep 0.1
		done
		[ -n "$res" ] || { echo "nginx.sh: two-worker run $gen did not finish" >&2; exit 1; }
		if ! awk -F'\t' '{ split($1, f, " ") } f[6] == "" || f[7] != "" || f[1] != NR - 1 { bad = 1 } END { exit bad || NR != 2 }' <<<"$res" ||
			[ "$(awk '{ print $2 }' <<<"$res" | sort -u | wc -l)" -ne 2 ]; then
			echo "nginx.sh: two-worker run $gen did not run in two workers: $res" >&2
			exit 1
		fi
		pids=$(awk '{ print $2 }' <<<"$res" | sort -n | xargs)
		slowest+=("$(awk '$3 > m { m = $3 } END { print m }' <<<"$res")")
		all+=$res$'\n'
	done
	jit "$op $k 2" 4 "${all%$'\n'}"
	s=$(printf '%s\n' "${slowest[@]}" | median)
	ng2[$op]=$(awk -v s="$s" -v n="$N" 'BEGIN { printf "%.4f", s / n }')
	ops2n[$op]=$(awk -v s="$s" -v n="$N" 'BEGIN { printf "%.0f", 2 * n / s * 1e9 }')
done
stop_nginx

gocmd1="SHMZONE_BENCH_ZONE_MIB=$ZONE_MIB $GO test -run '^\$' -bench 'BenchmarkOps/op=(incr|get|set)/keys=(1000|100000)\$' -count $REPS ./dict"
gocmd2="SHMZONE_BENCH_ZONE_MIB=$ZONE_MIB $GO test -run '^\$' -bench 'BenchmarkProcs/op=(incr|get)/keys=(own|shared)/procs=2\$' -count $REPS ./dict"
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
gocmd3="SHMZONE_BENCH_ZONE_MIB=$ZONE_MIB SHMZONE_SEED=$SEED $GO test -run '^\$' -bench 'BenchmarkLimiter/op=(req|count)/keys=(own|hot)/procs=(1|2)\$' -count $REPS ./limiter"
echo "nginx.sh: $gocmd3" >&2
out=$(cd "$root" && SHMZONE_SEED=$SEED "$GO" test -run '^$' -bench 'BenchmarkLimiter/op=(req|count)/keys=(own|hot)/procs=(1|2)$' -count "$REPS" ./limiter)
# The Go case of each limiter op: req and count are keys=own, reqhot is
# req's keys=hot.
declare -A gocase=([req]=req/keys=own [count]=count/keys=own [reqhot]=req/keys=hot)
for op in req count reqhot; do
	k=${nkeys[$op]}
	for procs in 1 2; do
		o=$(awk -v name="BenchmarkLimiter/op=${gocase[$op]}/procs=$procs" \
			'{ n = $1; sub(/-[0-9]+$/, "", n) } n == name { for (i = 2; i <= NF; i++) if ($i == "ops/s") print $(i - 1) }' \
			<<<"$out" | median)
		[ -n "$o" ] || { echo "nginx.sh: no BenchmarkLimiter result for $op procs=$procs" >&2; exit 1; }
		ns=$(awk -v o="$o" -v p="$procs" 'BEGIN { printf "%.4f", p * 1e9 / o }')
		if [ "$procs" = 1 ]; then
			zo[$op/$k]=$ns
		else
			ops2z[$op]=$(awk -v o="$o" 'BEGIN { printf "%.0f", o }')
			zo2[$op]=$ns
		fi
	done
done

if [ "$FORMAT" = tsv ]; then
	printf '# nginx\t%s\n' "$nginx_version"
	printf '# ngx_lua\t%s\n' "$ngx_lua"
	printf '# luajit\t%s\n' "$luajit"
	[ -z "$luajit_pkg" ] || printf '# luajit_package\t%s\n' "$luajit_pkg"
	printf '# resty_core_shdict\t%s\n' "$resty_core"
	printf '# limit_traffic\t%s\n' "$limit_traffic"
	printf '# limits\treq rate 1e9/s burst 1e9; count 2^53 per 3600 s; reqhot rate 1/s burst 0 on 4 shared keys\n'
	printf '# seed\t%s\n' "$SEED"
	printf '# zone_mib\t%s\n' "$ZONE_MIB"
	printf '# N\t%s\n# REPS\t%s\n# cpus\t%s\n# date\t%s\n' "$N" "$REPS" "$(nproc)" "$started"
	printf '# loadavg\t%s\n' "$loadavg"
	printf '# jit_check\t%s\n' "$jit_check"
	for a in "${other_aborts[@]}"; do printf '# jit_other_aborts\t%s\n' "$a"; done
	for keys in 1000 100000; do
		printf '# loop_ns_per_op\t%s\t%.1f\n' "$keys" "${loopns[$keys]}"
	done
	for op in incr get req count reqhot; do
		printf '# ops_per_s\t%s\t%s\t2\t%s\t%s\n' "$op" "${nkeys[$op]}" "${ops2n[$op]}" "${ops2z[$op]}"
	done
	printf '# worker_pids\t%s\n' "$pids"
	for keys in 1000 100000; do
		for op in incr get set; do
			printf '%s\t%s\t1\t%.1f\t%.1f\n' "$op" "$keys" "${ng[$op/$keys]}" "${zo[$op/$keys]}"
		done
	done
	for op in req count reqhot; do
		k=${nkeys[$op]}
		printf '%s\t%s\t1\t%.1f\t%.1f\n' "$op" "$k" "${ng[$op/$k]}" "${zo[$op/$k]}"
	done
	for op in incr get req count reqhot; do
		printf '%s\t%s\t2\t%.1f\t%.1f\n' "$op" "${nkeys[$op]}" "${ng2[$op]}" "${zo2[$op]}"
	done
	exit 0
fi

echo "# nginx $nginx_version, ngx_lua $ngx_lua, $luajit${luajit_pkg:+ ($luajit_pkg)}, lua_shared_dict and zones ${ZONE_MIB} MiB; N=$N, median of $REPS; $started, $(nproc) CPUs, load $loadavg"
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
echo "nginx JIT check (every timed loop compiled by LuaJIT, no trace aborted in it; resty.core FFI shdict: $resty_core): $jit_check."
echo
echo "# two processes at once, 1000 keys each: nginx workers $pids; cd $root && $gocmd2"
echo
echo "| op | keys | workers | nginx ns/op per worker | nginx ops/s (both) | zone ns/op per process | zone ops/s (both) | zone speed-up (nginx/zone) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for op in incr get; do
	awk -v op="$op" -v a="${ng2[$op]}" -v b="${zo2[$op]}" -v oa="${ops2n[$op]}" -v ob="${ops2z[$op]}" \
		'BEGIN { printf "| %s | 1000 | 2 | %.1f | %.2f M | %.1f | %.2f M | %.2f× |\n", op, a, oa / 1e6, b, ob / 1e6, (b > 0 ? a / b : 0) }'
done
echo
echo "# limiters: lua-resty-limit-traffic $limit_traffic against package limiter; req and count: each process on its own 1000 client keys (seed $SEED); reqhot: req at 1/s, burst 0, every process on the same 4 keys, nearly every decision a rejection; cd $root && $gocmd3"
echo
echo "| limiter | keys | processes | nginx ns/op per worker | zone ns/op per process | zone speed-up (nginx/zone) |"
echo "|---|---|---:|---:|---:|---:|"
declare -A keysays=([req]="1000 own" [count]="1000 own" [reqhot]="4 shared")
for op in req count reqhot; do
	k=${nkeys[$op]}
	awk -v op="$op" -v ks="${keysays[$op]}" -v a="${ng[$op/$k]}" -v b="${zo[$op/$k]}" \
		'BEGIN { printf "| %s | %s | 1 | %.1f | %.1f | %.2f× |\n", op, ks, a, b, (b > 0 ? a / b : 0) }'
	awk -v op="$op" -v ks="${keysays[$op]}" -v a="${ng2[$op]}" -v b="${zo2[$op]}" \
		'BEGIN { printf "| %s | %s | 2 | %.1f | %.1f | %.2f× |\n", op, ks, a, b, (b > 0 ? a / b : 0) }'
done
[ "${#other_aborts[@]}" -eq 0 ] || {
	echo
	echo "Traces that aborted in functions the timed loops call (op, keys, workers, count, why):"
	printf -- '- %s\n' "${other_aborts[@]//$'\t'/ }"
}

#!/usr/bin/env bash
# luaparity.sh: package limiter and redistier against the real Lua modules
# they follow, lua-resty-limit-traffic 0.09 (req, count, conn) and
# lua-resty-redis-ratelimit 0.03, running in nginx, call by call.
#
# Starts a redis-server and nginx (bench/peers/luaparity.conf, one worker,
# the Lua libraries from REF) on temporary ports and prefixes, and runs
# bench/peers/luaparity (go run), which replays random call sequences
# through both sides on fake clocks and compares every decision and the
# stored state after every call; see its doc for what it checks. The req
# and conn sequences call set_rate, set_burst and set_conn between calls.
# Prints its report ("KIND: S sequences, C checks, D differences" per
# kind, notes on "#" lines, then "N passed, M failed") and exits non-zero
# on any difference.
#
# Needs nginx with the lua module and lua-resty-core, lua-resty-redis (as
# resty.redis, or Debian's lua-nginx-redis as nginx.redis) and
# redis-server. Debian: nginx-light libnginx-mod-http-lua lua-resty-core
# lua-nginx-redis lua-cjson redis-server.
#
# Environment: REF (default: ../shared/reference beside the repository, the
# Lua sources), SEED (default: a random one, printed), N (sequences of each
# kind, default 200), GO (default go).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
REF=${REF:-$root/../shared/reference}
N=${N:-200}
SEED=${SEED:-0}
GO=${GO:-go}

command -v nginx >/dev/null || { echo "luaparity.sh: nginx not installed" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "luaparity.sh: redis-server not installed" >&2; exit 1; }
[ -e /usr/share/nginx/modules/ngx_http_lua_module.so ] ||
	{ echo "luaparity.sh: ngx_http_lua_module not installed (libnginx-mod-http-lua)" >&2; exit 1; }
[ -e "$REF/lua-resty-limit-traffic/lib/resty/limit/req.lua" ] &&
	[ -e "$REF/lua-resty-redis-ratelimit/lib/resty/redis/ratelimit.lua" ] ||
	{ echo "luaparity.sh: no Lua libraries under REF=$REF" >&2; exit 1; }
REF=$(cd "$REF" && pwd)

prefix=$(mktemp -d)
nginx_pid=
redis_pid=
cleanup() {
	if [ -n "$nginx_pid" ]; then
		kill -QUIT "$nginx_pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$nginx_pid" 2>/dev/null || true
		wait "$nginx_pid" 2>/dev/null || true
	fi
	if [ -n "$redis_pid" ]; then
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
	rm -rf "$prefix"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
	local p=$1
	for _ in $(seq 200); do port_free "$p" && { echo "$p"; return; }; p=$((p + 1)); done
	echo "luaparity.sh: no free port from $1" >&2
	exit 1
}

rport=$(free_port 8490)
redis-server --port "$rport" --bind 127.0.0.1 --dir "$prefix" --save "" --appendonly no \
	--daemonize no --logfile "$prefix/redis.log" &
redis_pid=$!
for _ in $(seq 100); do
	[ "$(redis-cli -p "$rport" ping 2>/dev/null)" = PONG ] && break
	sleep 0.05
done
[ "$(redis-cli -p "$rport" ping 2>/dev/null)" = PONG ] ||
	{ echo "luaparity.sh: redis-server did not start" >&2; cat "$prefix/redis.log" >&2; exit 1; }

nport=$(free_port 8590)
mkdir -p "$prefix/logs"
sed -e "s|__PORT__|$nport|" -e "s|__REDIS_PORT__|$rport|" -e "s|__REF__|$REF|g" \
	"$here/luaparity.conf" >"$prefix/nginx.conf"
nginx -p "$prefix" -c "$prefix/nginx.conf" -g "error_log $prefix/logs/error.log warn;" \
	2>>"$prefix/logs/stderr.log" &
nginx_pid=$!
url=http://127.0.0.1:$nport
up=
for _ in $(seq 100); do
	if curl -sS -o /dev/null --data-binary $'at 0\n' "$url/replay" 2>/dev/null; then up=1; break; fi
	sleep 0.05
done
[ -n "$up" ] || { echo "luaparity.sh: nginx did not start" >&2; cat "$prefix/logs/"* >&2; exit 1; }

echo "# nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), Lua libraries from $REF, redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
status=0
(cd "$root" && "$GO" run ./bench/peers/luaparity -nginx "$url" -redis "127.0.0.1:$rport" -seed "$SEED" -n "$N") || status=$?
if [ "$status" -ne 0 ] && [ -s "$prefix/logs/error.log" ]; then
	echo "luaparity.sh: nginx's error.log:" >&2
	tail -20 "$prefix/logs/error.log" >&2
fi
exit "$status"

#!/bin/sh
# zoneab.sh BASE [ROUNDS]: dict Incr and Get on 1,000 keys in zones of 10,
# 64 and 256 MiB, this checkout against commit BASE. bench/zoneprobe times
# each, built once from each tree, in processes of its own. The two sides
# alternate in every round. For each size and operation the script prints
# both sides' median ns/op and the median of the rounds' speed ratios,
# BASE's ns/op over this checkout's: above 1 is faster than BASE.
#
# Run it on a quiet machine: nothing else should build or measure.
set -eu

usage() {
	echo "usage: bench/zoneab.sh BASE [ROUNDS]" >&2
	exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
base=$1
rounds=${2:-5}
case $rounds in
'' | *[!0-9]*) echo "zoneab: ROUNDS $rounds: want a number of at least 1" >&2; exit 2 ;;
esac
[ "$rounds" -ge 1 ] || { echo "zoneab: ROUNDS must be at least 1" >&2; exit 2; }
top=$(git rev-parse --show-toplevel)
git -C "$top" rev-parse --verify --quiet "$base^{commit}" >/dev/null ||
	{ echo "zoneab: $base is no commit of this repository" >&2; exit 2; }

tmp=$(mktemp -d)
cleanup() {
	git -C "$top" worktree remove --force "$tmp/base" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

echo "zoneab: building bench/zoneprobe at $base and at this checkout" >&2
git -C "$top" worktree add --quiet --detach "$tmp/base" "$base"
mkdir -p "$tmp/base/bench/zoneprobe"
cp "$top/bench/zoneprobe/main.go" "$tmp/base/bench/zoneprobe/"
(cd "$tmp/base" && go build -o "$tmp/probe-base" ./bench/zoneprobe)
(cd "$top" && go build -o "$tmp/probe-head" ./bench/zoneprobe)

for r in $(seq "$rounds"); do
	echo "zoneab: round $r of $rounds" >&2
	for mib in 10 64 256; do
		for op in incr get; do
			b=$("$tmp/probe-base" -size "$mib" -op "$op")
			h=$("$tmp/probe-head" -size "$mib" -op "$op")
			echo "$mib $op $b $h"
		done
	done
done >"$tmp/runs"

# median prints the median of the numbers on its input, one a line.
median() {
	sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
printf '| zone | op | %s ns/op | this ns/op | speed over %s |\n|---:|---|---:|---:|---:|\n' "$base" "$base"
for mib in 10 64 256; do
	for op in incr get; do
		b=$(awk -v m="$mib" -v o="$op" '$1 == m && $2 == o {print $3}' "$tmp/runs" | median)
		h=$(awk -v m="$mib" -v o="$op" '$1 == m && $2 == o {print $4}' "$tmp/runs" | median)
		x=$(awk -v m="$mib" -v o="$op" '$1 == m && $2 == o {print $3 / $4}' "$tmp/runs" | median)
		printf '| %d MiB | %s | %.2f | %.2f | %.2f× |\n' "$mib" "$op" "$b" "$h" "$x"
	done
done

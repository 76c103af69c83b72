package limiter

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// limiterProcs runs req and count decisions in procs real OS processes at
// once on one zone, as dict's BenchmarkProcs does: each process makes b.N
// decisions, so ns/op is one process's decision and ops/s the throughput of
// all of them. Every process has its own 1,000 keys: with keys=distinct
// they hash to shards no other process uses (process i takes keys whose
// shard is i mod procs), with keys=shared-shards they spread over every
// shard, so the processes share shard locks and cache lines.
func limiterProcs(b *testing.B) {
	for _, op := range []string{"req", "count"} {
		for _, keys := range []string{"distinct", "shared-shards"} {
			for _, procs := range []int{1, 2} {
				name := fmt.Sprintf("op=%s/keys=%s/procs=%d", op, keys, procs)
				b.Run(name, func(b *testing.B) { benchProcs(b, op, keys, procs) })
			}
		}
	}
}

func benchProcs(b *testing.B, op, keys string, procs int) {
	path := filepath.Join(b.TempDir(), "procs.zone")
	d, err := dict.Open(path, dict.Options{Size: benchZoneSize})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	testutil.BenchProcs(b, procs, "bench-procs", func(i int) []string {
		return []string{path, op, keys, strconv.Itoa(i), strconv.Itoa(b.N), strconv.Itoa(procs)}
	}, b.N)
	if err := d.Check(); err != nil {
		b.Fatal(err)
	}
}

// shardOf returns the shard of key in d's zone: the low bits of the key's
// XXH64 with the zone's seed (dict's package doc).
func shardOf(d *dict.Dict, key string) int {
	h := d.Header()
	x := xxhash.NewWithSeed(h.Seed)
	x.WriteString(key)
	return int(x.Sum64() & uint64(h.Shards-1))
}

// helperBenchProcs is a limiterProcs process: path op keys id n procs. It
// opens the zone, makes its keys, says "ready", waits for stdin to close,
// makes n decisions and prints how long they took in nanoseconds.
func helperBenchProcs(args []string) error {
	if len(args) != 6 {
		return fmt.Errorf("want path op keys id n procs, got %q", args)
	}
	path, op, keys := args[0], args[1], args[2]
	id, _ := strconv.Atoi(args[3])
	n, _ := strconv.Atoi(args[4])
	procs, _ := strconv.Atoi(args[5])
	d, err := dict.Open(path, dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	fn, err := benchOps[op](d)
	if err != nil {
		return err
	}
	var ks []string
	for i := 0; len(ks) < 1000; i++ {
		k := fmt.Sprintf("p%dkey:%011d", id, i)
		if keys == "distinct" && shardOf(d, k)%procs != id {
			continue
		}
		ks = append(ks, k)
	}
	ctx := context.Background()
	for _, k := range ks {
		if err := fn(ctx, k); err != nil {
			return err
		}
	}
	return testutil.BenchChild(func() error {
		for i := 0; i < n; i++ {
			if err := fn(ctx, ks[i%len(ks)]); err != nil {
				return err
			}
		}
		return nil
	})
}

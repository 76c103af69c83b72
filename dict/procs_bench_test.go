package dict

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

// BenchmarkProcs runs the same operation in procs real OS processes at once
// on one zone: each process does b.N operations, so ns/op is the time of one
// process's operation and ops/s the throughput of all of them together. Every
// process has its own 1,000 keys: with keys=distinct they hash to shards no
// other process uses (process i takes keys whose shard is i mod procs), with
// keys=shared-shards they spread over all shards, so the processes share
// shard locks, and with keys=hot every process hits one key.
func BenchmarkProcs(b *testing.B) {
	for _, op := range []string{"incr", "get"} {
		for _, keys := range []string{"distinct", "shared-shards", "hot"} {
			for _, procs := range []int{1, 2} {
				name := fmt.Sprintf("op=%s/keys=%s/procs=%d", op, keys, procs)
				b.Run(name, func(b *testing.B) { benchProcs(b, op, keys, procs) })
			}
		}
	}
}

func benchProcs(b *testing.B, op, keys string, procs int) {
	path := filepath.Join(b.TempDir(), "procs.zone")
	d, err := Open(path, Options{Size: benchZoneSize})
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

// HelperBenchProcs is a BenchmarkProcs process (registered in
// multiproc_test.go's TestHelperProcess): it opens the zone, makes its keys,
// says "ready", waits for stdin to close, runs its operations and prints how
// long they took in nanoseconds.
func HelperBenchProcs(args []string) error {
	if len(args) != 6 {
		return fmt.Errorf("want path op keys id n procs, got %q", args)
	}
	path, op, keys := args[0], args[1], args[2]
	id, _ := strconv.Atoi(args[3])
	n, _ := strconv.Atoi(args[4])
	procs, _ := strconv.Atoi(args[5])
	d, err := Open(path, Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	ks := []string{"hot"}
	if keys != "hot" {
		ks = ks[:0]
		for i := 0; len(ks) < 1000; i++ {
			k := fmt.Sprintf("p%d:key:%08d", id, i)
			if keys == "distinct" && int(hashKey(d.seed, k)&d.mask)%procs != id {
				continue
			}
			ks = append(ks, k)
		}
	}
	for _, k := range ks {
		if _, _, err := d.IncrInit(k, 0, 0, 0); err != nil {
			return err
		}
	}
	return testutil.BenchChild(func() error {
		for i := 0; i < n; i++ {
			k := ks[i%len(ks)]
			var err error
			switch op {
			case "incr":
				_, err = d.Incr(k, 1)
			case "get":
				_, _, err = d.Get(k)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

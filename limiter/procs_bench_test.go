package limiter

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/clients"
	"github.com/shmzone/shmzone/internal/testutil"
)

// procsKeys is the number of client keys of each limiterProcs process.
const procsKeys = 1000

// limiterProcs runs req and count decisions in procs real OS processes at
// once on one zone, as dict's BenchmarkProcs does: each process makes b.N
// decisions, so ns/op is one process's decision and ops/s the throughput of
// all of them. Each process decides for its own 1,000 clients (keys=own):
// keys that look like client addresses, drawn at random with no regard to
// shards (clients.Addrs, stream i for process i, so SHMZONE_SEED
// replays them), which it then visits in a pseudo-random order. Before the
// start each process makes the first decision for each of its clients, in
// turns with the others, in the order the clients would arrive at a server
// (clients.Arrivals, clients.Turns), as a server's processes do.
func limiterProcs(b *testing.B) {
	seed := testutil.Seed(b)
	for _, op := range []string{"req", "count"} {
		for _, procs := range []int{1, 2} {
			name := fmt.Sprintf("op=%s/keys=own/procs=%d", op, procs)
			b.Run(name, func(b *testing.B) { benchProcs(b, op, procs, seed) })
		}
	}
}

func benchProcs(b *testing.B, op string, procs int, seed uint64) {
	path := filepath.Join(b.TempDir(), "procs.zone")
	d, err := dict.Open(path, dict.Options{Size: benchZoneSize})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	seedArg := strconv.FormatUint(seed, 10)
	testutil.BenchProcs(b, procs, "bench-procs", func(i int) []string {
		return []string{path, op, strconv.Itoa(i), strconv.Itoa(procs), strconv.Itoa(b.N), seedArg}
	}, b.N)
	if err := d.Check(); err != nil {
		b.Fatal(err)
	}
	// One more entry: the limiter's record of its parameters (inspect.go).
	if got, want := d.Stats().Entries, int64(procs*procsKeys+1); got != want {
		b.Fatalf("zone holds %d entries, want %d processes × %d clients and a record", got, procs, procsKeys)
	}
}

// helperBenchProcs is a limiterProcs process: path op id procs n seed. It
// opens the zone, makes the first decision for each of its clients in its
// turns, says "ready", waits for stdin to close, makes n decisions for
// clients picked at random and prints how long they took in nanoseconds.
func helperBenchProcs(args []string) error {
	if len(args) != 6 {
		return fmt.Errorf("want path op id procs n seed, got %q", args)
	}
	path, op := args[0], args[1]
	id, err1 := strconv.ParseUint(args[2], 10, 32)
	procs, err2 := strconv.Atoi(args[3])
	n, err3 := strconv.Atoi(args[4])
	seed, err4 := strconv.ParseUint(args[5], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("bad arguments %q: %w", args, err)
	}
	mk, ok := benchOps[op]
	if !ok {
		return fmt.Errorf("unknown op %q", op)
	}
	d, err := dict.Open(path, dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	fn, err := mk(d)
	if err != nil {
		return err
	}
	ks := clients.Addrs(seed, id, procsKeys)
	ctx := context.Background()
	err = clients.CreateInTurns(path+".turns", seed, int(id), procs, procsKeys, func(i int) error {
		return fn(ctx, ks[i])
	})
	if err != nil {
		return err
	}
	pick := testutil.NewPicker(seed ^ (id+1)*0x9e3779b97f4a7c15)
	return testutil.BenchChild(func() error {
		for i := 0; i < n; i++ {
			if err := fn(ctx, ks[pick.Next(len(ks))]); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestLimiterProcsRuns runs limiterProcs's cases for a few decisions: make
// test runs no benchmark, and their helpers and turns would otherwise be
// run by make bench alone.
func TestLimiterProcsRuns(t *testing.T) {
	t.Parallel()
	testutil.RunBenchmarks(t, "^BenchmarkLimiter$/./^keys=own$", 50, 4)
}

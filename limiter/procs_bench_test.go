package limiter

import (
	"context"
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

// procsMax is the most processes limiterProcs runs: the benchmark creates
// the states of that many processes' clients.
const procsMax = 2

// limiterProcs runs req and count decisions in procs real OS processes at
// once on one zone, as dict's BenchmarkProcs does: each process makes b.N
// decisions, so ns/op is one process's decision and ops/s the throughput of
// all of them. Each process decides for its own 1,000 clients (keys=own):
// keys that look like client addresses, drawn at random with no regard to
// shards (clients.Addrs, stream i for process i, so SHMZONE_SEED
// replays them), which it then visits in a pseudo-random order. Before the
// start the benchmark makes the first decision for the clients of two
// processes, in the order they would arrive at a server
// (clients.Arrivals): mixed, so that each process's states lie among the
// other's in the zone's pages, as a server's do. With procs=1, process 0
// decides alone among them.
func limiterProcs(b *testing.B) {
	seed := testutil.Seed(b)
	for _, op := range []string{"req", "count"} {
		for procs := 1; procs <= procsMax; procs++ {
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
	fn, err := benchOps[op](d)
	if err != nil {
		b.Fatal(err)
	}
	sets := make([][]string, procsMax)
	for i := range sets {
		sets[i] = clients.Addrs(seed, uint64(i), procsKeys)
	}
	for _, a := range clients.Arrivals(seed, procsMax, procsKeys) {
		if err := fn(context.Background(), sets[a.Proc][a.I]); err != nil {
			b.Fatal(err)
		}
	}
	seedArg := strconv.FormatUint(seed, 10)
	testutil.BenchProcs(b, procs, "bench-procs", func(i int) []string {
		return []string{path, op, strconv.Itoa(i), strconv.Itoa(b.N), seedArg}
	}, b.N)
	if err := d.Check(); err != nil {
		b.Fatal(err)
	}
	if got, want := d.Stats().Entries, int64(procsMax*procsKeys); got != want {
		b.Fatalf("zone holds %d entries, want %d processes × %d clients", got, procsMax, procsKeys)
	}
}

// helperBenchProcs is a limiterProcs process: path op id n seed. It opens
// the zone, makes one more decision for each of its clients (whose states
// the benchmark created), says "ready", waits
// for stdin to close, makes n decisions for clients picked at random and
// prints how long they took in nanoseconds.
func helperBenchProcs(args []string) error {
	if len(args) != 5 {
		return fmt.Errorf("want path op id n seed, got %q", args)
	}
	path, op := args[0], args[1]
	id, err1 := strconv.ParseUint(args[2], 10, 32)
	n, err2 := strconv.Atoi(args[3])
	seed, err3 := strconv.ParseUint(args[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return fmt.Errorf("bad arguments %q", args)
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
	for _, k := range ks {
		if err := fn(ctx, k); err != nil {
			return err
		}
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

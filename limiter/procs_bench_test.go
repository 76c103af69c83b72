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
//
// keys=hot is a flood on a few keys: a Req of 1 request a second and no
// burst over hotKeys, which every process hammers. Nearly every decision
// is a rejection.
func limiterProcs(b *testing.B) {
	seed := testutil.Seed(b)
	for _, op := range []string{"req", "count"} {
		for _, procs := range []int{1, 2} {
			name := fmt.Sprintf("op=%s/keys=own/procs=%d", op, procs)
			b.Run(name, func(b *testing.B) { benchProcs(b, op, procs, seed) })
		}
	}
	for _, procs := range []int{1, 2} {
		name := fmt.Sprintf("op=req/keys=hot/procs=%d", procs)
		b.Run(name, func(b *testing.B) { benchProcs(b, hotOp, procs, seed) })
	}
}

// hotOp is the op of keys=hot, and hotKeys its keys. BenchmarkLimiter
// runs it on 1,000 keys too: after each key's first request, every
// decision is a rejection.
const hotOp = "req-reject"

var hotKeys = []string{"203.0.113.7", "198.51.100.23", "192.0.2.146", "203.0.113.250"}

func init() {
	benchOps[hotOp] = func(d *dict.Dict) (func(context.Context, string) error, error) {
		l, err := NewReq(d, "hot", 1, 0)
		return commitOp(l), err
	}
}

func benchProcs(b *testing.B, op string, procs int, seed uint64) {
	path := filepath.Join(b.TempDir(), "procs.zone")
	d, err := dict.Open(path, dict.Options{Size: benchZone(b)})
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
	want := int64(procs*procsKeys + 1)
	if op == hotOp {
		want = int64(len(hotKeys) + 1)
	}
	if got := d.Stats().Entries; got != want {
		b.Fatalf("zone holds %d entries, want %d: %d processes' clients and a record", got, want, procs)
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
	ks, err := procsClients(fn, path, op, seed, int(id), procs)
	if err != nil {
		return err
	}
	ctx := context.Background()
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

// procsClients returns the keys of process id of procs, after its first
// decision on each: its own clients, made in turns with the others, or
// hotKeys, which every process shares.
func procsClients(fn func(context.Context, string) error, path, op string, seed uint64, id, procs int) ([]string, error) {
	ctx := context.Background()
	if op == hotOp {
		for _, k := range hotKeys {
			if err := fn(ctx, k); err != nil {
				return nil, err
			}
		}
		return hotKeys, nil
	}
	ks := clients.Addrs(seed, uint64(id), procsKeys)
	err := clients.CreateInTurns(path+".turns", seed, id, procs, procsKeys, func(i int) error {
		return fn(ctx, ks[i])
	})
	return ks, err
}

// TestLimiterProcsRuns runs limiterProcs's cases for a few decisions: make
// test runs no benchmark, and their helpers and turns would otherwise be
// run by make bench alone.
func TestLimiterProcsRuns(t *testing.T) {
	t.Parallel()
	testutil.RunBenchmarks(t, "^BenchmarkLimiter$/./^keys=(own|hot)$", 50, 6)
}

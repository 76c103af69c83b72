package dict

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shmzone/shmzone/internal/clients"
	"github.com/shmzone/shmzone/internal/testutil"
)

// procsKeys is the number of keys of BenchmarkProcs's own and shared cases.
const procsKeys = 1000

// procsMax is the most processes BenchmarkProcs runs: keys=mixed creates
// the keys of that many.
const procsMax = 2

// sharedStream is the random stream (clients.Addrs) of the keys
// every process reads in keys=shared; process i's own keys are stream i.
const sharedStream = 1 << 32

// BenchmarkProcs runs the same operation in procs real OS processes at once
// on one zone: each process does b.N operations, so ns/op is the time of one
// process's operation and ops/s the throughput of all of them together. Keys
// are picked as a server picks them, with no regard to shards: they look like
// client addresses, drawn at random, and each process visits its keys in a
// pseudo-random order.
//
//   - op=incr/keys=own: each process increments its own 1,000 keys; no
//     other process touches them. Before the start each process creates
//     its keys itself, in turns with the others, in the order their clients
//     would arrive at a server (clients.Arrivals, clients.Turns): a server's
//     processes create their clients' entries as those arrive, mixed in
//     time, and where the entries go is the zone's choice.
//   - op=incr/keys=mixed: keys=own whose entries the benchmark's own
//     process created, those of two processes in the order of their
//     arrival, as after a restore from a snapshot or once clients move
//     between processes: each process's entries lie among the other's in
//     the slab's pages. With procs=1, process 0 works alone
//     among them.
//   - op=incr/keys=apart: keys=own with a zone file for each process, which
//     holds that process's keys alone, so that the processes share no
//     memory at all: what this machine gives processes that share nothing,
//     the ceiling of keys=own.
//   - op=get/keys=shared: every process reads the same 1,000 keys, which the
//     benchmark creates before starting the processes.
//   - keys=hot: every process works on one key, created by the benchmark.
//
// The keys are drawn from testutil.Seed, so SHMZONE_SEED replays them.
func BenchmarkProcs(b *testing.B) {
	seed := testutil.Seed(b)
	for _, c := range []struct{ op, keys string }{
		{"incr", "own"}, {"incr", "mixed"}, {"incr", "apart"}, {"get", "shared"}, {"incr", "hot"}, {"get", "hot"},
	} {
		for procs := 1; procs <= procsMax; procs++ {
			name := fmt.Sprintf("op=%s/keys=%s/procs=%d", c.op, c.keys, procs)
			b.Run(name, func(b *testing.B) { benchProcs(b, c.op, c.keys, procs, seed) })
		}
	}
}

func benchProcs(b *testing.B, op, keys string, procs int, seed uint64) {
	dir := b.TempDir()
	// zone is process i's zone file: one for all, or one each (keys=apart).
	zone := func(i int) string {
		if keys == "apart" {
			return filepath.Join(dir, "procs"+strconv.Itoa(i)+".zone")
		}
		return filepath.Join(dir, "procs.zone")
	}
	ds := make([]*Dict, 1, procs)
	if keys == "apart" {
		ds = ds[:procs]
	}
	for i := range ds {
		d, err := Open(zone(i), Options{Size: benchZone(b)})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		ds[i] = d
	}
	switch keys {
	case "own": // the processes create them
	case "mixed":
		sets := make([][]string, procsMax)
		for i := range sets {
			sets[i] = procsKeySet(keys, seed, uint64(i))
		}
		for _, a := range clients.Arrivals(seed, procsMax, procsKeys) {
			if _, _, err := ds[0].IncrInit(sets[a.Proc][a.I], 0, 0, 0); err != nil {
				b.Fatal(err)
			}
		}
	case "apart":
		for i, d := range ds {
			for _, k := range procsKeySet(keys, seed, uint64(i)) {
				if _, _, err := d.IncrInit(k, 0, 0, 0); err != nil {
					b.Fatal(err)
				}
			}
		}
	default:
		for _, k := range procsKeySet(keys, seed, sharedStream) {
			if _, _, err := ds[0].IncrInit(k, 0, 0, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	seedArg := strconv.FormatUint(seed, 10)
	testutil.BenchProcs(b, procs, "bench-procs", func(i int) []string {
		return []string{zone(i), op, keys, strconv.Itoa(i), strconv.Itoa(procs), strconv.Itoa(b.N), seedArg}
	}, b.N)
	var sum int64
	for _, d := range ds {
		if err := d.Check(); err != nil {
			b.Fatal(err)
		}
	}
	if perProcess(keys) { // process i's keys, in its zone
		for i := 0; i < procs; i++ {
			sum += procsSum(b, ds[i%len(ds)], procsKeySet(keys, seed, uint64(i)))
		}
	} else {
		sum = procsSum(b, ds[0], procsKeySet(keys, seed, sharedStream))
	}
	if want := int64(procs) * int64(b.N); op == "incr" && sum != want {
		b.Fatalf("the keys hold %d increments, want %d processes × %d", sum, procs, b.N)
	}
}

// procsSum returns the sum of the numbers under keys in d: with
// increments, the count of those that landed.
func procsSum(b *testing.B, d *Dict, keys []string) int64 {
	var sum int64
	for _, k := range keys {
		v, _, err := d.Get(k)
		if err != nil {
			b.Fatalf("Get(%q) = %v", k, err)
		}
		sum += v.Int()
	}
	return sum
}

// perProcess reports whether each process of a BenchmarkProcs case has
// keys of its own, stream i for process i.
func perProcess(keys string) bool { return keys == "own" || keys == "mixed" || keys == "apart" }

// procsKeySet returns the keys of a BenchmarkProcs case: "hot" alone, or
// procsKeys client addresses from seed's stream.
func procsKeySet(keys string, seed, stream uint64) []string {
	if keys == "hot" {
		return []string{"hot"}
	}
	return clients.Addrs(seed, stream, procsKeys)
}

// HelperBenchProcs is a BenchmarkProcs process (registered in
// multiproc_test.go's TestHelperProcess), with arguments path op keys id
// procs n seed: it opens the zone, creates its own keys in its turns
// (keys=own) or checks that the benchmark created them, says "ready", waits
// for stdin to close, runs n operations on keys picked at random and prints
// how long they took in nanoseconds.
func HelperBenchProcs(args []string) error {
	if len(args) != 7 {
		return fmt.Errorf("want path op keys id procs n seed, got %q", args)
	}
	path, op, keys := args[0], args[1], args[2]
	id, err1 := strconv.ParseUint(args[3], 10, 32)
	procs, err2 := strconv.Atoi(args[4])
	n, err3 := strconv.Atoi(args[5])
	seed, err4 := strconv.ParseUint(args[6], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("bad arguments %q: %w", args, err)
	}
	if op != "incr" && op != "get" {
		return fmt.Errorf("unknown op %q", op)
	}
	d, err := Open(path, Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	stream := uint64(sharedStream)
	if perProcess(keys) {
		stream = id
	}
	ks := procsKeySet(keys, seed, stream)
	if keys == "own" {
		err := clients.CreateInTurns(path+".turns", seed, int(id), procs, procsKeys, func(i int) error {
			_, _, err := d.IncrInit(ks[i], 0, 0, 0)
			return err
		})
		if err != nil {
			return err
		}
	}
	for _, k := range ks {
		if _, _, err := d.Get(k); err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
	}
	pick := testutil.NewPicker(seed ^ (id+1)*0x9e3779b97f4a7c15)
	return testutil.BenchChild(func() error {
		var err error
		for i := 0; i < n; i++ {
			k := ks[pick.Next(len(ks))]
			if op == "incr" {
				_, err = d.Incr(k, 1)
			} else {
				_, _, err = d.Get(k)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// TestBenchProcsRuns runs every case of BenchmarkProcs for a few
// operations: make test runs no benchmark, and this one's helpers, turns
// and sums would otherwise be run by make bench alone.
func TestBenchProcsRuns(t *testing.T) {
	t.Parallel()
	testutil.RunBenchmarks(t, "^BenchmarkProcs$", 50, 6*procsMax)
}

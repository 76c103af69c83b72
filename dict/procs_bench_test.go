package dict

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

// procsKeys is the number of keys of BenchmarkProcs's own and shared cases.
const procsKeys = 1000

// sharedStream is the random stream (testutil.ClientAddrs) of the keys
// every process reads in keys=shared; process i's own keys are stream i.
const sharedStream = 1 << 32

// BenchmarkProcs runs the same operation in procs real OS processes at once
// on one zone: each process does b.N operations, so ns/op is the time of one
// process's operation and ops/s the throughput of all of them together. Keys
// are picked as a server picks them, with no regard to shards: they look like
// client addresses, drawn at random, and each process visits its keys in a
// pseudo-random order.
//
//   - op=incr/keys=own: each process increments its own 1,000 keys, which
//     it creates before the start; no other process touches them.
//   - op=get/keys=shared: every process reads the same 1,000 keys, which the
//     benchmark creates before starting the processes.
//   - keys=hot: every process works on one key, created by the benchmark.
//
// The keys are drawn from testutil.Seed, so SHMZONE_SEED replays them.
func BenchmarkProcs(b *testing.B) {
	seed := testutil.Seed(b)
	for _, c := range []struct{ op, keys string }{
		{"incr", "own"}, {"get", "shared"}, {"incr", "hot"}, {"get", "hot"},
	} {
		for _, procs := range []int{1, 2} {
			name := fmt.Sprintf("op=%s/keys=%s/procs=%d", c.op, c.keys, procs)
			b.Run(name, func(b *testing.B) { benchProcs(b, c.op, c.keys, procs, seed) })
		}
	}
}

func benchProcs(b *testing.B, op, keys string, procs int, seed uint64) {
	path := filepath.Join(b.TempDir(), "procs.zone")
	d, err := Open(path, Options{Size: benchZoneSize})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	ks := procsKeySet(keys, seed, sharedStream)
	if keys != "own" {
		for _, k := range ks {
			if _, _, err := d.IncrInit(k, 0, 0, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	seedArg := strconv.FormatUint(seed, 10)
	testutil.BenchProcs(b, procs, "bench-procs", func(i int) []string {
		return []string{path, op, keys, strconv.Itoa(i), strconv.Itoa(b.N), seedArg}
	}, b.N)
	if err := d.Check(); err != nil {
		b.Fatal(err)
	}
	if op == "incr" {
		checkProcsSum(b, d, keys, procs, seed)
	}
}

// checkProcsSum checks that the increments of procs processes, b.N each,
// all landed on the keys of their case: each process's own keys, or the
// one hot key.
func checkProcsSum(b *testing.B, d *Dict, keys string, procs int, seed uint64) {
	sets := [][]string{procsKeySet(keys, seed, 0)}
	for i := 1; keys == "own" && i < procs; i++ {
		sets = append(sets, procsKeySet(keys, seed, uint64(i)))
	}
	var sum int64
	for _, ks := range sets {
		for _, k := range ks {
			v, _, err := d.Get(k)
			if err != nil {
				b.Fatalf("Get(%q) = %v", k, err)
			}
			sum += v.Int()
		}
	}
	if want := int64(procs) * int64(b.N); sum != want {
		b.Fatalf("the keys hold %d increments, want %d processes × %d", sum, procs, b.N)
	}
}

// procsKeySet returns the keys of a BenchmarkProcs case: "hot" alone, or
// procsKeys client addresses from seed's stream.
func procsKeySet(keys string, seed, stream uint64) []string {
	if keys == "hot" {
		return []string{"hot"}
	}
	return testutil.ClientAddrs(seed, stream, procsKeys)
}

// HelperBenchProcs is a BenchmarkProcs process (registered in
// multiproc_test.go's TestHelperProcess), with arguments path op keys id n
// seed: it opens the zone, creates its own keys (keys=own) or checks that
// the benchmark's exist, says "ready", waits for stdin to close, runs n
// operations on keys picked at random and prints how long they took in
// nanoseconds.
func HelperBenchProcs(args []string) error {
	if len(args) != 6 {
		return fmt.Errorf("want path op keys id n seed, got %q", args)
	}
	path, op, keys := args[0], args[1], args[2]
	id, err1 := strconv.ParseUint(args[3], 10, 32)
	n, err2 := strconv.Atoi(args[4])
	seed, err3 := strconv.ParseUint(args[5], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return fmt.Errorf("bad arguments %q", args)
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
	if keys == "own" {
		stream = id
	}
	ks := procsKeySet(keys, seed, stream)
	for _, k := range ks {
		if keys == "own" {
			_, _, err = d.IncrInit(k, 0, 0, 0)
		} else {
			_, _, err = d.Get(k)
		}
		if err != nil {
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

package limiter

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// zoneSizes are the zones BenchmarkZoneSize opens, as dict's
// BenchmarkZoneSize: the benchmarks' 10 MiB, and 64 and 256 MiB.
var zoneSizes = []struct {
	name string
	size int64
}{
	{"10MiB", 10 << 20},
	{"64MiB", 64 << 20},
	{"256MiB", 256 << 20},
}

// zoneSizeOps are the decisions of BenchmarkZoneSize, made by benchOps.
var zoneSizeOps = []string{"req", "count", "gcra", "sliding"}

// zoneSizeKeys are BenchmarkZoneSize's key counts.
var zoneSizeKeys = []int{1000, 100000}

// BenchmarkZoneSize measures one decision, as BenchmarkLimiter makes it, on
// the same keys in zones of each of zoneSizes. Each case opens its own
// zone, makes every key's first decision before the timer starts, and
// closes the zone when it ends.
func BenchmarkZoneSize(b *testing.B) {
	for _, op := range zoneSizeOps {
		for _, keys := range zoneSizeKeys {
			for _, z := range zoneSizes {
				name := "op=" + op + "/keys=" + strconv.Itoa(keys) + "/zone=" + z.name
				b.Run(name, func(b *testing.B) { benchZoneSizeCase(b, op, keys, z.size) })
			}
		}
	}
}

// benchZoneSizeCase is one case of BenchmarkZoneSize. It fails if the
// first decisions evicted anything: the timed decisions would then find
// keys missing, and measure a smaller set than the case names.
func benchZoneSizeCase(b *testing.B, op string, keys int, size int64) {
	d, err := dict.Open(filepath.Join(b.TempDir(), "bench.zone"), dict.Options{Size: size})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	fn, err := benchOps[op](d)
	if err != nil {
		b.Fatal(err)
	}
	ks := benchKeyNames("", keys)
	ctx := context.Background()
	for _, k := range ks {
		if err := fn(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
	if ev := d.Stats().Evictions; ev > 0 {
		b.Fatalf("%s on %d keys in a %d MiB zone: %d evictions while filling", op, keys, size>>20, ev)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := fn(ctx, ks[i%keys]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestZoneSizeRuns runs BenchmarkZoneSize's 10 MiB cases for a few
// decisions: make test runs no benchmark, and only make bench would
// otherwise run this code.
func TestZoneSizeRuns(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		// Filling 100,000 keys takes seconds under the race detector;
		// the run without it checks that they fit.
		testutil.RunBenchmarks(t, "^BenchmarkZoneSize$/./^keys=1000$/^zone=10MiB$", 50, 4)
		return
	}
	testutil.RunBenchmarks(t, "^BenchmarkZoneSize$/././^zone=10MiB$", 50, 8)
}

package dict

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
)

// zoneSizes are the zones BenchmarkZoneSize opens: the benchmarks' 10 MiB,
// and 64 and 256 MiB, the sizes of zones in use. A bigger zone has more
// shards and bigger indexes, so the same hot keys touch more pages and
// cache lines.
var zoneSizes = []struct {
	name string
	size int64
}{
	{"10MiB", 10 << 20},
	{"64MiB", 64 << 20},
	{"256MiB", 256 << 20},
}

// zoneSizeKeys are BenchmarkZoneSize's key counts: a small hot set, and one
// that a 10 MiB zone still holds.
var zoneSizeKeys = []int{1000, 100000}

// BenchmarkZoneSize measures incr and get, as BenchmarkOps does, on the same
// keys in zones of each of zoneSizes. Each case opens its own zone, which
// it closes when it ends.
func BenchmarkZoneSize(b *testing.B) {
	for _, bo := range benchOps[:2] {
		for _, keys := range zoneSizeKeys {
			for _, z := range zoneSizes {
				name := "op=" + bo.name + "/keys=" + strconv.Itoa(keys) + "/zone=" + z.name
				b.Run(name, func(b *testing.B) {
					d, ks := zoneSizeDict(b, z.size, keys)
					defer d.Close()
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if err := bo.op(d, ks[i%keys], i); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// zoneSizeDict opens a zone of size and fills it with ints under the
// 16-byte keys of benchDict. It fails the benchmark if the keys did not all
// fit: an eviction would measure misses, not the zone.
func zoneSizeDict(b *testing.B, size int64, keys int) (*Dict, []string) {
	b.Helper()
	d, err := Open(filepath.Join(b.TempDir(), "bench.zone"), Options{Size: size})
	if err != nil {
		b.Fatal(err)
	}
	ks := make([]string, keys)
	for i := range ks {
		ks[i] = fmt.Sprintf("key:%011d", i)
		if _, err := d.Set(ks[i], Int(int64(i)), 0, 0); err != nil {
			d.Close()
			b.Fatal(err)
		}
	}
	if ev := d.Stats().Evictions; ev > 0 {
		d.Close()
		b.Fatalf("%d keys in a %d MiB zone: %d evictions while filling", keys, size>>20, ev)
	}
	return d, ks
}

package dict

import (
	"fmt"
	"testing"
)

// A 10 MiB zone with the default shard count holds about 163,000 counters
// with 16-byte keys before its first eviction (DESIGN.md: about 64 bytes
// per counter, index slot and traces included; nginx spends 128). The page
// lock word at the start of each slab page costs no counter: a page of
// 56-byte chunks had 8 bytes to spare. The traces of evicted keys take a
// twentieth of each shard. How many exactly depends on the zone's random
// hash seed, which decides how evenly the keys spread over the shards: the
// first shard to fill ends the count, about 1.3% either side. The test
// holds every seed to a floor below that range. make bench judges the
// least of its runs against 160,000.
func TestDensity(t *testing.T) {
	const (
		size = 10 << 20
		want = 158_000
	)
	d, _ := openTest(t, Options{Size: size})
	n := 0
	for ; n < 4*want; n++ {
		key := fmt.Sprintf("k%015d", n)
		forcible, err := d.Set(key, Int(int64(n)), 0, 0)
		if err != nil {
			t.Fatalf("Set(%q) = %v after %d counters", key, err, n)
		}
		if forcible {
			break
		}
		if n%1000 == 0 {
			if ev := d.Stats().Evictions; ev > 0 {
				t.Fatalf("Stats().Evictions = %d after %d counters, but no Set reported forcible", ev, n)
			}
		}
	}
	st := d.Stats()
	if st.Evictions == 0 {
		t.Fatalf("no eviction after %d counters: the test did not fill the zone", n)
	}
	t.Logf("%d counters before the first eviction: %d shards, %.1f bytes per counter of the zone",
		n, st.Shards, float64(size)/float64(n))
	for _, c := range d.SlabStats() {
		t.Logf("slab class %d: %d pages, %d used, %d free", c.Size, c.Pages, c.Used, c.Free)
	}
	if n < want {
		t.Fatalf("%d counters fit before the first eviction, want at least %d", n, want)
	}
	// Every counter that was not evicted reads back.
	missing := 0
	for i := 0; i < n; i++ {
		v, _, err := d.Get(fmt.Sprintf("k%015d", i))
		if err != nil {
			missing++
			continue
		}
		if v.Int() != int64(i) {
			t.Fatalf("Get(k%015d) = %d, want %d", i, v.Int(), i)
		}
	}
	if uint64(missing) > st.Evictions {
		t.Fatalf("%d counters missing, %d evicted", missing, st.Evictions)
	}
}

package counter

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// newInternal returns a Counter that syncs by hand and sweeps every
// sweepEvery syncs, over a new 4 MiB zone; the test closes both.
func newInternal(t *testing.T, sweepEvery uint64) (*Counter, *dict.Dict) {
	t.Helper()
	d, _ := zonetest.Open(t, dict.Options{Size: 4 << 20})
	c, err := New(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.sweepEvery = sweepEvery
	t.Cleanup(func() { c.Close() })
	return c, d
}

// zoneCount returns key's count in d, 0 when absent.
func zoneCount(t *testing.T, d *dict.Dict, key string) int64 {
	t.Helper()
	v, _, err := d.Get(key)
	if err != nil && err != dict.ErrNotFound {
		t.Fatalf("dict Get(%q) = %v", key, err)
	}
	return v.Int()
}

func mustSyncI(t *testing.T, c *Counter) {
	t.Helper()
	if err := c.Sync(); err != nil {
		t.Fatalf("Sync() = %v", err)
	}
}

// TestRetire shows that idle keys leave memory, busy and pinned ones stay,
// and a retired key counts again from its next Incr.
func TestRetire(t *testing.T) {
	c, d := newInternal(t, 2)
	h := c.Key("pinned")
	c.Incr("idle", 1)
	h.Add(1)
	for i := 0; i < 6; i++ {
		c.Incr("busy", 1)
		mustSyncI(t, c)
	}
	st := c.Stats()
	if st.Retired != 1 || st.Keys != 2 || c.idx.load("idle") != nil {
		t.Fatalf("Stats() = %+v after 6 syncs, idle in index: %v; want idle retired, 2 keys", st, c.idx.load("idle") != nil)
	}
	c.Incr("idle", 5)
	h.Add(1)
	mustSyncI(t, c)
	for k, want := range map[string]int64{"idle": 6, "busy": 6, "pinned": 2} {
		if got := zoneCount(t, d, k); got != want {
			t.Errorf("dict Get(%q) = %d, want %d", k, got, want)
		}
	}
}

// TestRetireLateAdd plays a goroutine that found an entry in the index
// just before its retirement and adds to it just after: the add moves to
// the key's new entry and the next Sync writes it.
func TestRetireLateAdd(t *testing.T) {
	c, d := newInternal(t, 1)
	c.Incr("k", 1)
	mustSyncI(t, c)
	stale := c.idx.load("k")
	mustSyncI(t, c) // the sweep of an idle sync retires k
	if stale.state.Load() != dead || c.idx.load("k") != nil {
		t.Fatalf("k not retired: state %d", stale.state.Load())
	}
	stale.add(41)
	if e := c.idx.load("k"); e == nil && len(c.idx.fresh) == 0 {
		t.Fatal("the late add made no new entry for k")
	}
	mustSyncI(t, c)
	if got := zoneCount(t, d, "k"); got != 42 {
		t.Errorf("dict Get(k) = %d, want 42", got)
	}
}

// TestConcurrent has goroutines increment keys, some often and most
// rarely, by Incr and through one shared Handle, while another goroutine
// syncs without pause: Close leaves the exact totals in the zone. With a
// sweep at every sync, entries retire while increments reach them. Run it
// with -race. The seed fixes each worker's increments, not how the
// workers and the syncer interleave.
func TestConcurrent(t *testing.T) {
	const (
		workers = 4
		ops     = 30_000
		keys    = 2000
	)
	tests := []struct {
		name       string
		sweepEvery uint64
	}{
		{"sweep every 64 syncs", sweepEvery},
		{"sweep every sync", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seed := testutil.Seed(t) // worker w draws stream w
			c, d := newInternal(t, tt.sweepEvery)
			hot := c.Key("hot")
			stop := make(chan struct{})
			var syncer sync.WaitGroup
			syncer.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := c.Sync(); err != nil {
						t.Errorf("Sync() = %v", err)
						return
					}
				}
			})
			want := make([][keys]int64, workers)
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(w)))
					for i := 0; i < ops; i++ {
						k := r.IntN(keys)
						if i%2 == 0 {
							k %= 10 // half the increments go to ten hot keys
						}
						n := int64(r.IntN(5)) - 1
						want[w][k] += n
						c.Incr(fmt.Sprintf("k%04d", k), n)
						hot.Add(1)
					}
				})
			}
			wg.Wait()
			close(stop)
			syncer.Wait()
			retired := c.Stats().Retired
			if err := c.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			for k := 0; k < keys; k++ {
				var sum int64
				for w := range want {
					sum += want[w][k]
				}
				if got := zoneCount(t, d, fmt.Sprintf("k%04d", k)); got != sum {
					t.Errorf("dict Get(k%04d) = %d, want %d", k, got, sum)
				}
			}
			if got := zoneCount(t, d, "hot"); got != workers*ops {
				t.Errorf("dict Get(hot) = %d, want %d", got, workers*ops)
			}
			t.Logf("%d entries retired while the workers ran", retired)
		})
	}
}

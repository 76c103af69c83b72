package counter_test

import (
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shmzone/shmzone/counter"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

const benchKeys = 1000

// benchCounter returns a Counter that syncs by hand, over a zone that holds
// benchKeys keys, and the keys, each incremented once so that the Counter
// holds them.
func benchCounter(b *testing.B) (*counter.Counter, []string) {
	b.Helper()
	c, _ := newCounter(b)
	ks := make([]string, benchKeys)
	for i := range ks {
		ks[i] = key(i)
		c.Incr(ks[i], 1)
	}
	// Two syncs leave both pending lists with room for every key.
	mustSync(b, c)
	for _, k := range ks {
		c.Incr(k, 1)
	}
	mustSync(b, c)
	return c, ks
}

// BenchmarkCounter measures the increment paths, their scaling over
// goroutines, Sync per dirty key, and the process memory a key costs.
func BenchmarkCounter(b *testing.B) {
	b.Run("op=incr/keys="+strconv.Itoa(benchKeys), func(b *testing.B) {
		c, ks := benchCounter(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N { // b.N read once: a load in the loop would follow each atomic add
			c.Incr(ks[i%benchKeys], 1)
		}
		reportOpsPerSec(b, b.N, b.Elapsed())
	})
	b.Run("op=handle-add", func(b *testing.B) {
		c, _ := benchCounter(b)
		h := c.Key("hot")
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			h.Add(1)
		}
		reportOpsPerSec(b, b.N, b.Elapsed())
	})
	for _, g := range []int{1, 2} {
		b.Run("op=incr-parallel/goroutines="+strconv.Itoa(g), func(b *testing.B) {
			benchParallel(b, g)
		})
	}
	b.Run("op=sync/dirty="+strconv.Itoa(benchKeys), func(b *testing.B) {
		c, ks := benchCounter(b)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			for _, k := range ks {
				c.Incr(k, 1)
			}
			b.StartTimer()
			if err := c.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchKeys), "ns/key")
	})
	b.Run("op=key-memory/keys="+strconv.Itoa(memKeys), benchKeyMemory)
}

// memKeys is the key count of the key-memory benchmark: enough that the
// Counter's fixed costs vanish in the quotient.
const memKeys = 100_000

// benchKeyMemory reports B/key: the Go heap that a Counter holding memKeys
// 16-byte keys keeps live, over memKeys. Each op is a new Counter whose keys
// are made, incremented once by one goroutine, synced, incremented and
// synced again, so that both pending lists have held every key, as in a
// Counter that has run for a while; the heap is measured after a GC before
// the Counter is made and after its second Sync, and the key strings count
// because the Counter keeps them. A key that more goroutines increment can
// take more cells (one per stripe it is added on); the stripe count follows
// GOMAXPROCS, the benchmark name's suffix.
func benchKeyMemory(b *testing.B) {
	d, _ := zonetest.Open(b, dict.Options{Size: 32 << 20})
	var bytes uint64
	for range b.N {
		b.StopTimer()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		c, err := counter.New(d, 0)
		if err != nil {
			b.Fatal(err)
		}
		for pass := 0; pass < 2; pass++ {
			for i := range memKeys {
				c.Incr(key(i), 1)
			}
			mustSync(b, c)
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		if after.HeapAlloc > before.HeapAlloc {
			bytes += after.HeapAlloc - before.HeapAlloc
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(bytes)/float64(b.N*memKeys), "B/key")
}

// benchParallel runs b.N Incr calls split over g goroutines, each walking
// the same benchKeys keys from its own offset: the goroutines share every
// key, as a server's request goroutines share their counters. ns/op is wall
// time per Incr, so ops/s compares directly across g.
func benchParallel(b *testing.B, g int) {
	c, ks := benchCounter(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < g; w++ {
		n := b.N / g
		if w < b.N%g {
			n++
		}
		off := w * benchKeys / g
		wg.Go(func() {
			for i := 0; i < n; i++ {
				c.Incr(ks[(off+i)%benchKeys], 1)
			}
		})
	}
	wg.Wait()
	reportOpsPerSec(b, b.N, time.Since(start))
}

func reportOpsPerSec(b *testing.B, ops int, d time.Duration) {
	b.ReportMetric(float64(ops)/d.Seconds(), "ops/s")
}

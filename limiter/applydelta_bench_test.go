package limiter

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// BenchmarkApplyDelta measures a change of a Count's limit on a zone of
// 64 MiB that holds 100,000 keys, 1,000 of them the Count's open windows.
// One op is one applyDelta: the zone's scan and the windows' increments.
// A goroutine decides meanwhile on a key of another limiter. The metric
// max-decision-ns is its slowest decision: how long the scan kept it
// waiting.
//
// The metric max-hold-ns is the slowest Incr of this process while
// KeysWithPrefix walks the zone.
//
// op=get is the baseline: the same loop with a Get of a window per op,
// for the slowest decision a busy machine gives without a scan.
func BenchmarkApplyDelta(b *testing.B) {
	for _, op := range []string{"applydelta", "get"} {
		benchApplyDelta(b, op)
	}
}

func benchApplyDelta(b *testing.B, op string) {
	const keys, windows = 100_000, 1_000
	b.Run(fmt.Sprintf("op=%s/keys=%d/windows=%d/size=64M", op, keys, windows), func(b *testing.B) {
		d, err := dict.Open(filepath.Join(b.TempDir(), "z"), dict.Options{Size: 64 << 20})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		c, err := NewCount(d, "t", 1<<40, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		other, err := NewCount(d, "o", 1<<40, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for i := range windows {
			if _, err := c.Incoming(ctx, fmt.Sprint("client", i), true); err != nil {
				b.Fatal(err)
			}
		}
		for i := range keys - windows {
			if err := d.SafeSet(fmt.Sprint("session:", i), dict.Bytes(make([]byte, 100)), 0, 0); err != nil {
				b.Fatal(err)
			}
		}
		var stop atomic.Bool
		var worst atomic.Int64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				start := time.Now()
				if _, err := other.Incoming(ctx, fmt.Sprint("k", i%64), true); err != nil {
					b.Error(err)
					return
				}
				if ns := time.Since(start).Nanoseconds(); ns > worst.Load() {
					worst.Store(ns)
				}
			}
		}()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			delta := int64(1)
			if i%2 == 1 {
				delta = -1
			}
			if op == "get" {
				if _, _, err := d.Get(zoneKey(c, fmt.Sprint("client", i%windows))); err != nil {
					b.Fatal(err)
				}
				continue
			}
			if err := applyDelta(d, kindCount, "t", delta); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		stop.Store(true)
		wg.Wait()
		b.ReportMetric(float64(worst.Load()), "max-decision-ns")
		b.ReportMetric(float64(maxPrefixHold(b, d)), "max-hold-ns")
		b.ReportMetric(float64(d.Header().Shards), "shards")
	})
}

// maxPrefixHold returns the longest time a goroutine of this process
// waited for a shard's lock while KeysWithPrefix walked the zone, in
// nanoseconds, over a few walks. It bounds how long a walk held one lock.
func maxPrefixHold(b *testing.B, d *dict.Dict) int64 {
	var worst atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			start := time.Now()
			if _, err := d.Incr(fmt.Sprint("probe", i%1024), 1); err != nil && !errors.Is(err, dict.ErrNotFound) {
				b.Error(err)
				return
			}
			if ns := time.Since(start).Nanoseconds(); ns > worst.Load() {
				worst.Store(ns)
			}
		}
	}()
	for range 5 {
		if _, err := d.KeysWithPrefix("count|t|"); err != nil {
			b.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	return worst.Load()
}

package redistier

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
)

// reportLatency reports the p50 and p99 of lat, the decisions' latencies.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkDecision measures one decision's latency over loopback for each
// Redis limiter (one goroutine, one key), and a Tiered decision in the zone
// while a flusher runs every 100 ms.
func BenchmarkDecision(b *testing.B) {
	_, c := newClient(b)
	huge := 1e9
	mk := map[string]func() (limiter.Limiter, error){
		"req":     func() (limiter.Limiter, error) { return NewReq(c, "b-req", "1000000r/s", huge, 0, Options{}) },
		"count":   func() (limiter.Limiter, error) { return NewCount(c, "b-count", 1<<40, time.Hour, Options{}) },
		"sliding": func() (limiter.Limiter, error) { return NewSlidingWindow(c, "b-sw", 1<<30, time.Hour, Options{}) },
		"gcra":    func() (limiter.Limiter, error) { return NewGCRA(c, "b-gcra", 1e6, 1e9, Options{}) },
		"tiered": func() (limiter.Limiter, error) {
			d, err := dict.Open(testutil.TempZone(b), dict.Options{Size: 1 << 20})
			if err != nil {
				return nil, err
			}
			b.Cleanup(func() { d.Close() })
			l, err := NewTiered(d, c, "b-tier", 1<<40, time.Hour, 100*time.Millisecond, Options{})
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithCancel(context.Background())
			b.Cleanup(cancel)
			go l.Run(ctx)
			return l, nil
		},
	}
	for _, op := range []string{"req", "count", "sliding", "gcra", "tiered"} {
		b.Run("op="+op+"/backend=redis-loopback", func(b *testing.B) {
			l, err := mk[op]()
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				d, err := l.Incoming(ctx, "k", true)
				lat = append(lat, time.Since(start))
				if err != nil || !d.Allowed {
					b.Fatalf("Incoming = %+v, %v", d, err)
				}
			}
			b.StopTimer()
			reportLatency(b, lat)
		})
	}
}

// BenchmarkTieredFlush measures one Flush of a host with 10,000 and
// 100,000 active keys (client addresses, one request each in the current
// window) to a redis-server on loopback and to a 3-node cluster on
// loopback: ns/op is the time of a flush, keys/s its rate. A host that
// flushes every interval needs a rate of at least its keys over the
// interval: 25,000 keys/s for 2,500 keys every 100 ms. The servers start
// once; each run counts its keys in a zone of its own, under a prefix of
// its own.
func BenchmarkTieredFlush(b *testing.B) {
	_, single := newClient(b)
	_, cluster := newClusterClient(b)
	runs := 0
	for _, keys := range []int{10_000, 100_000} {
		for _, backend := range []string{"redis-loopback", "cluster-loopback"} {
			c := map[string]redis.UniversalClient{"redis-loopback": single, "cluster-loopback": cluster}[backend]
			b.Run(fmt.Sprintf("keys=%d/backend=%s", keys, backend), func(b *testing.B) {
				runs++
				l, _, _ := activeTiered(b, c, new(testutil.Clock), fmt.Sprintf("b-flush%d", runs), keys, 100*time.Millisecond, Options{Timeout: callTimeout})
				ctx := context.Background()
				if _, err := l.Flush(ctx); err != nil { // loads the script
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if ok, err := l.Flush(ctx); !ok || err != nil {
						b.Fatalf("Flush = %v, %v", ok, err)
					}
				}
				b.ReportMetric(float64(keys)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
			})
		}
	}
}

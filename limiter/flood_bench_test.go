package limiter

import (
	"context"
	"sync"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// floodBenchKeys are the flood's keys for BenchmarkFlood: 2^18 of them,
// 52 s of injected flood, after which they come round again long after
// their states expired and were evicted.
var floodBenchKeys = sync.OnceValue(func() []string {
	ks := make([]string, 1<<18)
	buf := make([]byte, 0, 40)
	for i := range ks {
		ks[i] = floodKey(buf, i)
	}
	return ks
})

// BenchmarkFlood measures decisions in the flood of TestFloodHeldClients,
// through one limiter in one process: a 256 KiB zone, 200 clients held at
// their limit, each retrying every 100 ms of injected time, after 2 s of
// them alone; with traffic=flood, 5,000 new one-request keys arrive every
// 100 ms as well, 50 between each pair of held decisions. Every decision is
// an op; decisions/s is their rate, evictions/op the zone's live entries
// evicted per decision.
func BenchmarkFlood(b *testing.B) {
	const held, perMs = 200, 2 // held decisions per ms of injected time
	for _, k := range floodKinds {
		for _, traffic := range []string{"quiet", "flood"} {
			b.Run("kind="+k.name+"/traffic="+traffic, func(b *testing.B) {
				flood := 0 // flood decisions per ms
				if traffic == "flood" {
					flood = 5000 / floodTick
				}
				keys := floodBenchKeys()
				d, clk := zonetest.Open(b, dict.Options{Size: floodFullPlan.zone})
				l, err := k.new(d)
				if err != nil {
					b.Fatal(err)
				}
				hk := make([]string, held)
				for i := range hk {
					hk[i] = heldKey(i)
				}
				ctx := context.Background()
				at := int64(0)
				for ; at < floodFullPlan.warm; at++ {
					clk.SetMilli(at)
					for j := range perMs {
						if _, err := l.Incoming(ctx, hk[int(at%floodTick)*perMs+j], true); err != nil {
							b.Fatal(err)
						}
					}
				}
				clk.SetMilli(at)
				ev := d.Stats().Evictions
				j, f := 0, 0
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if j == perMs+flood {
						j = 0
						at++
						clk.SetMilli(at)
					}
					key := ""
					if j < perMs {
						key = hk[int(at%floodTick)*perMs+j]
					} else {
						key = keys[f%len(keys)]
						f++
					}
					j++
					if _, err := l.Incoming(ctx, key, true); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
				b.ReportMetric(float64(d.Stats().Evictions-ev)/float64(b.N), "evictions/op")
			})
		}
	}
}

package redistier

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// roundTrips returns the script runs the servers at addrs have served since
// the last CONFIG RESETSTAT, from INFO commandstats (EVALSHA plus EVAL, one
// per round trip of a flush; the commands run inside the script are counted
// apart).
func roundTrips(t *testing.T, addrs []string) int64 {
	t.Helper()
	var n int64
	for _, addr := range addrs {
		info, err := testutil.RedisDo(addr, "INFO", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		n += scriptRuns(info)
	}
	return n
}

func scriptRuns(info string) int64 {
	var n int64
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
				v, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
				n += v
			}
		}
	}
	return n
}

func TestTiered(t *testing.T) {
	r, c := newClient(t)
	testTiered(t, c, []string{r.Addr})
}

// testTiered simulates 3 hosts (3 zones) of 2 processes each (2 dict handles
// per zone, each with its own Tiered) sharing one Redis, under a global limit
// of 1,000 per 10 s window, on a fake clock in 1 ms steps: every process
// offers requests at an even rate and calls Flush every 100 ms. The hosts
// together must admit at least the limit and at most the documented bound,
// and Redis must serve at most hosts × keys × (window / interval) + a small
// constant script runs, at 3× and at 30× overload alike.
func testTiered(t *testing.T, c redis.UniversalClient, addrs []string) {
	const (
		hosts, procs = 3, 2
		limit        = 1000
		window       = 10 * time.Second
		interval     = 100 * time.Millisecond
	)
	for _, overload := range []int64{3, 30} {
		t.Run(fmt.Sprintf("overload=%d", overload), func(t *testing.T) {
			clk := newFakeClock() // t0 starts a 10 s window
			for _, addr := range addrs {
				if _, err := testutil.RedisDo(addr, "CONFIG", "RESETSTAT"); err != nil {
					t.Fatal(err)
				}
			}
			prefix := fmt.Sprintf("tier%d", overload)
			var ls []*Tiered
			for h := 0; h < hosts; h++ {
				path := testutil.TempZone(t)
				for p := 0; p < procs; p++ {
					d, err := dict.Open(path, dict.Options{Size: 1 << 20, Clock: func() int64 { return clk.Now().UnixMilli() }})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { d.Close() })
					l, err := NewTiered(d, c, prefix, limit, window, interval, Options{Now: clk.Now})
					if err != nil {
						t.Fatal(err)
					}
					ls = append(ls, l)
				}
			}
			// Each process offers overload·limit/(hosts·procs) requests per window.
			every := window.Milliseconds() * hosts * procs / (overload * limit)
			perMs := int64(1)
			if every == 0 {
				every, perMs = 1, overload*limit/(hosts*procs*window.Milliseconds())
			}
			ctx := context.Background()
			var allowed, offered int64
			for ms := int64(0); ms < window.Milliseconds(); ms++ {
				clk.Set(time.Duration(ms) * time.Millisecond)
				for i, l := range ls {
					if ms%interval.Milliseconds() == 0 {
						if _, err := l.Flush(ctx); err != nil {
							t.Fatalf("Flush at +%d ms: %v", ms, err)
						}
					}
					if (ms+int64(i)*3)%every != 0 {
						continue
					}
					for k := int64(0); k < perMs; k++ {
						offered++
						if incoming(t, l, "api", true).Allowed {
							allowed++
						}
					}
				}
			}
			hostRate := float64(offered) / hosts / window.Seconds()
			bound := limit + int64(2*hosts*hostRate*interval.Seconds())
			trips := roundTrips(t, addrs)
			maxTrips := int64(hosts*1*window/interval) + 6
			t.Logf("offered %d, allowed %d (limit %d, bound %d); Redis script runs %d (bound %d)", offered, allowed, limit, bound, trips, maxTrips)
			if allowed < limit || allowed > bound {
				t.Errorf("allowed %d of %d, want within [%d, %d]", allowed, offered, limit, bound)
			}
			if trips > maxTrips {
				t.Errorf("Redis served %d script runs, want ≤ %d", trips, maxTrips)
			}
			var flushes uint64
			for _, l := range ls {
				flushes += l.flushes.Load()
			}
			if want := uint64(hosts * window / interval); flushes != want {
				t.Errorf("%d flushes, want %d: one process per host at a time", flushes, want)
			}
		})
	}
}

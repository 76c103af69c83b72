package limiter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// How big a zone must be for N active clients, measured (README, "A zone
// under a key flood"): for each kind and zone size, the largest number of
// clients held at their limit that a flood of one-request keys never makes
// lose state, found by bisection.

// Sizing's scenario, in injected time: every held client retries every
// tick at its limit (one request a second); after the warm-up, each tick
// also brings sizingFlood new keys, each of one request. A tick of 100 ms
// divides the limit's second, so the request a client is allowed comes
// when its last state ends; one of 130 ms does not, and the allowed
// request comes after (sizingTicks).
var sizingTickLens = []time.Duration{100 * time.Millisecond, 130 * time.Millisecond}

const (
	sizingFlood  = 5000 // new keys per tick
	sizingWarmup = 20   // ticks of held clients alone
	sizingTicks  = 30   // ticks of flood
)

// sizingKinds builds each kind's limiter over d, at one request a second.
var sizingKinds = []struct {
	name string
	new  func(d *dict.Dict) (sizingLimiter, error)
}{
	{"Req", func(d *dict.Dict) (sizingLimiter, error) { return NewReq(d, "sz", 1, 0) }},
	{"Count", func(d *dict.Dict) (sizingLimiter, error) { return NewCount(d, "sz", 1, time.Second) }},
	{"GCRA", func(d *dict.Dict) (sizingLimiter, error) { return NewGCRA(d, "sz", 1, 1) }},
	{"SlidingWindow", func(d *dict.Dict) (sizingLimiter, error) { return NewSlidingWindow(d, "sz", 1, time.Second) }},
}

type sizingLimiter interface {
	Limiter
	Stats() Stats
}

// sizingKey is client i's key, an IPv6 /64 of fixed width: held clients
// and the flood take entries of one size.
func sizingKey(flood bool, i int) string {
	net := 0xdb9
	if flood {
		net = 0xdb8
	}
	return fmt.Sprintf("2001:%x:%04x:%04x::/64", net, i>>16&0xffff, i&0xffff)
}

// sizingRun is one trial's result.
type sizingRun struct {
	wrong   int    // held decisions that differ from the twin's
	errs    int    // decisions that returned an error
	evicted uint64 // the held clients' limiter's Stats().Evicted
	lost    uint64 // the zone's Stats().Lost
}

// sizingTrial holds n clients at their limit in a zone of size bytes while
// the flood arrives, ticks of tick apart, and decides every held request a
// second time on a twin limiter over a zone that never evicts: a held
// decision that differs from the twin's found its client's state lost. The
// trial stops at the first.
func sizingTrial(t *testing.T, kind int, size int64, n int, tick time.Duration) sizingRun {
	t.Helper()
	var clk testutil.Clock
	// Not zonetest.Open: a bisection runs many trials in one test, and
	// each trial's zones, its twin's of 64 MiB, close when it ends.
	open := func(size int64) *dict.Dict {
		d, err := dict.Open(testutil.TempZone(t), dict.Options{Size: size, Clock: clk.UnixMilli})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, twinZone := open(size), open(64<<20)
	defer d.Close()
	defer twinZone.Close()
	// The held clients and the flood go through limiters of their own, of
	// one kind and name: one namespace, but Stats of their own, so that
	// Evicted counts only held clients' states.
	l, err1 := sizingKinds[kind].new(d)
	fl, err2 := sizingKinds[kind].new(d)
	twin, err3 := sizingKinds[kind].new(twinZone)
	if err := errorsJoin(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var r sizingRun
	flood := 0
	for i := 0; i < sizingWarmup+sizingTicks && r.wrong == 0; i++ {
		start := clk.Since()
		floods := 0
		if i >= sizingWarmup {
			floods = sizingFlood
		}
		// The tick's requests, held and flood interleaved evenly, each
		// at its own moment of the tick.
		ops := n + floods
		h, f := 0, 0
		for j := 0; j < ops && r.wrong == 0; j++ {
			clk.Set(start + time.Duration(j)*tick/time.Duration(ops))
			if f < floods && (h == n || f*n <= h*floods) {
				if _, err := fl.Incoming(ctx, sizingKey(true, flood), true); err != nil {
					r.errs++
				}
				f++
				flood++
				continue
			}
			key := sizingKey(false, h)
			got, err := l.Incoming(ctx, key, true)
			want, err2 := twin.Incoming(ctx, key, true)
			switch {
			case err != nil || err2 != nil:
				r.errs++
			case got.Allowed != want.Allowed:
				r.wrong++
			}
			h++
		}
		clk.Set(start + tick)
	}
	r.evicted = l.Stats().Evicted
	r.lost = d.Stats().Lost
	return r
}

// sizingCapacity returns how many held clients' states a zone of size
// bytes holds before its first eviction: the bisection's upper bound.
func sizingCapacity(t *testing.T, kind int, size int64) int {
	t.Helper()
	d, err := dict.Open(testutil.TempZone(t), dict.Options{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l, err := sizingKinds[kind].new(d)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := l.Incoming(context.Background(), sizingKey(false, i), true); err != nil {
			t.Fatal(err)
		}
		if l.Stats().Forcible > 0 {
			return i
		}
	}
}

// TestZoneSizing measures, for each kind, zone size and tick length, the
// largest number of held clients that keep their state through the flood,
// and logs the table (go test -run TestZoneSizing -v ./limiter/). Under
// the race detector it measures the 128 KiB zone at the first tick length
// only, so that the package fits its time on a loaded machine. It asserts
// what must hold: no decision fails, the held clients' limiter counts
// Evicted only in a trial where some client's state was lost, a larger
// zone keeps no fewer clients, and every zone keeps them up to the
// protected segment's cap.
func TestZoneSizing(t *testing.T) {
	sizes, tickLens := []int64{128 << 10, 256 << 10, 1 << 20}, sizingTickLens
	if raceEnabled {
		sizes, tickLens = sizes[:1], tickLens[:1]
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| kind | zone | states it holds |")
	for _, tick := range tickLens {
		fmt.Fprintf(&table, " kept, retries every %v | zone bytes per client |", tick)
	}
	fmt.Fprintf(&table, "\n|---|---|---:|%s\n", strings.Repeat("---:|---:|", len(tickLens)))
	for k, kind := range sizingKinds {
		prev := make([]int, len(tickLens))
		for _, size := range sizes {
			capacity := sizingCapacity(t, k, size)
			fmt.Fprintf(&table, "| %s | %d KiB | %d |", kind.name, size>>10, capacity)
			for ti, tick := range tickLens {
				check := func(n int) bool {
					r := sizingTrial(t, k, size, n, tick)
					if r.errs > 0 {
						t.Errorf("%s, %d KiB, %d held, %v: %d decisions failed", kind.name, size>>10, n, tick, r.errs)
					}
					if r.evicted > 0 && r.wrong == 0 {
						t.Errorf("%s, %d KiB, %d held, %v: Stats().Evicted = %d, but no held client's decision changed", kind.name, size>>10, n, tick, r.evicted)
					}
					t.Logf("%s, %d KiB, %d held, %v: wrong %v, Evicted %d, zone Lost %d", kind.name, size>>10, n, tick, r.wrong > 0, r.evicted, r.lost)
					return r.wrong == 0
				}
				// Bisection on [lo, hi): lo held clients keep their
				// state, hi do not (a zone cannot keep more than it
				// holds).
				lo, hi := 0, capacity+1
				for hi-lo > max(1, capacity/64) {
					mid := (lo + hi) / 2
					if check(mid) {
						lo = mid
					} else {
						hi = mid
					}
				}
				if lo < prev[ti] {
					t.Errorf("%s, %v: %d KiB keeps %d held clients, fewer than a smaller zone's %d", kind.name, tick, size>>10, lo, prev[ti])
				}
				// The protected segment's cap is seven eighths of the
				// entries: the zone keeps held clients up to it, less the
				// bisection's step, whatever the flood.
				if lo < capacity*7/8-capacity/32 {
					t.Errorf("%s, %v: %d KiB keeps %d held clients of the %d states it holds, want about seven eighths", kind.name, tick, size>>10, lo, capacity)
				}
				prev[ti] = lo
				per := "-"
				if lo > 0 {
					per = fmt.Sprint(size / int64(lo))
				}
				fmt.Fprintf(&table, " %d (%d%%) | %s |", lo, 100*lo/capacity, per)
			}
			fmt.Fprintln(&table)
		}
	}
	t.Log(table.String())
}

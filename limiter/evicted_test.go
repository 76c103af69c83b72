package limiter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// Stats.Evicted counts a decision when, and only when, the key's state had
// been evicted while it still meant something. The tests hold clients with
// a Req of 0.91 r/s and no burst, retrying every 100 ms: a client is
// admitted every 1,100 ms and its state's TTL (drainedAfter) ends exactly
// then, so at every retry that finds the state live it rejects, where a
// fresh state admits. A lost live state therefore always changes the
// decision, and a state found drained never does: Evicted may count only
// decisions that diverge from a twin on a zone that never evicts, and a
// zone too small for its clients must count some (TestEvictedCounts).

// lossRate is the held clients' rate: 1e6/910 ms to drain, ceil 1,099, and
// a millisecond more: the TTL ends on the retry at +1,100 ms.
const lossRate = 0.91

// lossPlan is one run of evictedRun: held clients retrying every floodTick
// ms in a zone of zone bytes, from start for span ms (pause, when not 0,
// stops them from pauseAt for pause ms); perTick flood keys every floodTick
// from floodFrom to floodTo.
type lossPlan struct {
	zone               int64
	held               int
	span               int64
	pauseAt, pause     int64
	perTick            int
	floodFrom, floodTo int64
}

// lossResult is what evictedRun saw.
type lossResult struct {
	decisions int
	evicted   uint64 // summed over the clients' limiters
	diverged  int    // decisions that differ from the twin's
	uncounted int    // of them, those Evicted did not count
	clients   int    // clients with a diverged decision
	bad       []string
	twinRej   int // the twin's rejections: the clients were held
	zone      dict.Stats
	during    dict.Stats // the zone's at the end of the pause
	drained   int        // held clients whose state had expired by then
}

// evictedRun plays p. Each held client decides through a limiter of its
// own (all of the same kind and name: one namespace) so that its
// Stats().Evicted is its own. Its twin keeps its state under key#gen in a
// big zone: on a divergence the held client started afresh, so the twin
// moves to a new generation, a fresh state, and must then decide as the
// held client did.
func evictedRun(t *testing.T, p lossPlan) lossResult {
	t.Helper()
	small, clk := zonetest.Open(t, dict.Options{Size: p.zone})
	big, _ := zonetest.Open(t, dict.Options{Size: twinZoneSize, Clock: clk.UnixMilli})
	newReq := func(d *dict.Dict) *Req {
		l, err := NewReq(d, floodName, lossRate, 0)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	twin, flood := newReq(big), newReq(small)
	held := make([]*Req, p.held)
	keys := make([]string, p.held)
	gen := make([]int, p.held)
	lost := make([]bool, p.held)
	byMs := make([][]int, floodTick)
	for i := range held {
		held[i], keys[i] = newReq(small), heldKey(i)
		m := int64(i) * floodTick / int64(p.held)
		byMs[m] = append(byMs[m], i)
	}
	var r lossResult
	bad := func(format string, args ...any) {
		if len(r.bad) < 5 {
			r.bad = append(r.bad, fmt.Sprintf(format, args...))
		}
	}
	ctx := context.Background()
	twinKey := func(i int) string { return keys[i] + "#" + strconv.Itoa(gen[i]) }
	kb := make([]byte, 0, 40)
	floodKeys := 0
	for at := int64(0); at < p.span; at++ {
		clk.SetMilli(at)
		m := at % floodTick
		paused := at >= p.pauseAt && at < p.pauseAt+p.pause
		if paused && at == p.pauseAt+p.pause-1 {
			r.during = small.Stats()
			for i := range keys {
				if _, err := small.TTL(zoneKey(held[i], keys[i])); errors.Is(err, dict.ErrNotFound) {
					r.drained++
				}
			}
		}
		for _, i := range byMs[m] {
			if paused {
				break
			}
			before := held[i].Stats().Evicted
			got, err := held[i].Incoming(ctx, keys[i], true)
			if err != nil {
				t.Fatalf("client %s at +%d ms: %v", keys[i], at, err)
			}
			counted := held[i].Stats().Evicted - before
			want, err := twin.Incoming(ctx, twinKey(i), true)
			if err != nil {
				t.Fatalf("twin: client %s at +%d ms: %v", keys[i], at, err)
			}
			r.decisions++
			if !want.Allowed {
				r.twinRej++
			}
			switch {
			case counted > 1:
				bad("client %s at +%d ms: one decision counted %d times in Evicted", keys[i], at, counted)
			case got == want && counted == 1:
				bad("client %s at +%d ms: Evicted counted a decision that is the twin's (%+v): the state lost meant nothing", keys[i], at, got)
			case got != want:
				r.diverged++
				if counted == 0 {
					r.uncounted++
				}
				if !lost[i] {
					lost[i] = true
					r.clients++
				}
				gen[i]++
				fresh, err := twin.Incoming(ctx, twinKey(i), true)
				if err != nil {
					t.Fatalf("twin: client %s at +%d ms: %v", keys[i], at, err)
				}
				if got != fresh {
					bad("client %s at +%d ms: Incoming = %+v, twin = %+v, and on a fresh state %+v: a divergence that is not a lost state", keys[i], at, got, want, fresh)
				}
			}
		}
		if at < p.floodFrom || at >= p.floodTo {
			continue
		}
		lo, hi := int(m)*p.perTick/floodTick, int(m+1)*p.perTick/floodTick
		for j := lo; j < hi; j++ {
			key := floodKey(kb, floodKeys)
			floodKeys++
			if _, err := flood.Incoming(ctx, key, true); err != nil {
				t.Fatalf("flood key %s at +%d ms: %v", key, at, err)
			}
		}
	}
	for _, l := range held {
		r.evicted += l.Stats().Evicted
	}
	r.zone = small.Stats()
	t.Logf("%d held clients, %d decisions (the twin rejected %d), %d flood keys; zone: %d entries, %d evictions, %d expirations reclaimed; Evicted %d; %d decisions of %d clients diverged from the twin, %d of them not counted",
		p.held, r.decisions, r.twinRej, floodKeys, r.zone.Entries, r.zone.Evictions, r.zone.Expirations, r.evicted, r.diverged, r.clients, r.uncounted)
	if len(r.bad) > 0 {
		t.Errorf("Evicted and the decisions disagree:\n\t%s", strings.Join(r.bad, "\n\t"))
	}
	if r.twinRej == 0 {
		t.Errorf("the twin rejected nothing: the plan holds no client at its limit")
	}
	return r
}

// minZone is the smallest zone, one shard of 64 KiB: it holds 758 of the
// held clients' Req states.
const minZone = 68 << 10

// TestEvictedCounts checks Stats.Evicted against a twin that never evicts,
// decision by decision (evictedRun): every decision counted differs from
// the twin's, and every decision that differs is a fresh state's. The
// converse, that every such decision is counted, does not hold: a shard
// remembers only its last few live entries evicted (dict.Outcome's Lost
// errs toward false), and a zone too small for its clients evicts many of
// them between a client's loss and its return, a page's worth at a time.
// So a zone too small must count (Evicted > 0, and at most the decisions
// that diverged); the uncounted losses are logged.
func TestEvictedCounts(t *testing.T) {
	t.Run("zone=too-small", func(t *testing.T) {
		r := evictedRun(t, lossPlan{zone: minZone, held: 790, span: 5000})
		if r.evicted == 0 || r.diverged == 0 {
			t.Errorf("Evicted = %d with %d decisions diverged from the twin, want both above 0: a zone too small for its clients loses their states", r.evicted, r.diverged)
		}
		if r.evicted > uint64(r.diverged) {
			t.Errorf("Evicted = %d, above the %d decisions that diverged from the twin", r.evicted, r.diverged)
		}
	})
	// The same clients in a zone big enough for them, while one-request
	// keys make it evict: nothing of theirs is lost.
	t.Run("zone=big-enough/flood", func(t *testing.T) {
		r := evictedRun(t, lossPlan{zone: 256 << 10, held: 790, span: 5000, perTick: 5000, floodFrom: 1000, floodTo: 5000})
		if r.zone.Evictions+r.zone.Expirations == 0 {
			t.Errorf("the flood reclaimed no entry: the zone was never full")
		}
		if r.evicted != 0 || r.diverged != 0 {
			t.Errorf("Evicted = %d with %d decisions of %d clients diverged from the twin, want 0 and 0", r.evicted, r.diverged, r.clients)
		}
	})
	// Clients that pause far longer than their state's TTL, while a flood
	// turns the zone over many times and stops before they come back: their
	// states drained and were reclaimed, which loses nothing.
	t.Run("zone=too-small/paused", func(t *testing.T) {
		r := evictedRun(t, lossPlan{zone: minZone, held: 200, span: 9000, pauseAt: 2000, pause: 5000, perTick: 2000, floodFrom: 2500, floodTo: 6500})
		if n := r.during.Evictions + r.during.Expirations; n < 10*uint64(r.during.Entries) {
			t.Errorf("the flood reclaimed %d entries of a zone of %d: it did not turn the zone over", n, r.during.Entries)
		}
		// Every client's state means nothing by the end of the pause
		// (expired, or gone): a client that comes back has lost nothing,
		// and Evicted must not count it, whatever became of its entry.
		if r.drained != 200 {
			t.Errorf("%d of the 200 clients' states had expired by the end of the pause, want all: the test did not pause them long enough", r.drained)
		}
		if r.evicted != 0 || r.diverged != 0 {
			t.Errorf("Evicted = %d with %d decisions of %d clients diverged from the twin, want 0 and 0: drained states lose nothing", r.evicted, r.diverged, r.clients)
		}
	})
}

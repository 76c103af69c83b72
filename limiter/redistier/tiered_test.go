package redistier

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
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
	r, _ := newClient(t)
	testTiered(t, false, []string{r.Addr})
}

// testTiered runs 3 hosts (3 zones) of 2 helper processes each (real OS
// processes, each with its own client and Tiered) sharing one Redis, or a
// cluster, under a global limit of 1,000 per 10 s window. The processes
// share a fake clock that the test moves one 100 ms interval per step
// (testutil.Lockstep); within a step each walks it in 1 ms steps, calls
// Flush at the interval's start and offers requests at an even rate. The
// hosts together must admit at least the limit and at most the documented
// bound, and Redis must serve at most hosts × keys × (window / interval) + a
// small constant script runs, at 3× and at 30× overload alike. Each host's
// zone must pass Check once its processes have exited.
func testTiered(t *testing.T, cluster bool, addrs []string) {
	const (
		hosts, procs = 3, 2
		limit        = 1000
		window       = 10 * time.Second
		interval     = 100 * time.Millisecond
	)
	for _, overload := range []int64{3, 30} {
		t.Run(fmt.Sprintf("overload=%d", overload), func(t *testing.T) {
			for _, addr := range addrs {
				if _, err := testutil.RedisDo(addr, "CONFIG", "RESETSTAT"); err != nil {
					t.Fatal(err)
				}
			}
			// Each process offers overload·limit/(hosts·procs) requests per window.
			every := window.Milliseconds() * hosts * procs / (overload * limit)
			perMs := int64(1)
			if every == 0 {
				every, perMs = 1, overload*limit/(hosts*procs*window.Milliseconds())
			}
			var (
				mu                        sync.Mutex
				allowed, offered, flushes int64
				ps                        []*testutil.Proc
				zones                     []string
				ls                        = testutil.NewLockstep(t)
			)
			for h := 0; h < hosts; h++ {
				zone := testutil.TempZone(t)
				zones = append(zones, zone)
				for p := 0; p < procs; p++ {
					tp := tieredProc{
						Cluster: cluster, Addrs: addrs, Zone: zone, Prefix: fmt.Sprintf("tier%d", overload),
						Limit: limit, Window: window, Interval: interval,
						Index: int64(h*procs + p), Every: every, PerMs: perMs,
					}
					ps = append(ps, ls.Start(testutil.Helper(t, "tiered", tp.args()...), func(line string) {
						var a, o, f int64
						if _, err := fmt.Sscan(line, &a, &o, &f); err != nil {
							t.Errorf("helper line %q: %v", line, err)
							return
						}
						mu.Lock()
						allowed, offered, flushes = allowed+a, offered+o, flushes+f
						mu.Unlock()
					}))
				}
			}
			for step := int64(0); step < int64(window/interval); step++ {
				ls.Step(step)
			}
			ls.Close()
			for _, p := range ps {
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
			}
			hostRate := float64(offered) / hosts / window.Seconds()
			bound := limit + int64(2*hosts*hostRate*interval.Seconds())
			trips := roundTrips(t, addrs)
			maxTrips := int64(hosts*1*window/interval) + 6
			t.Logf("%d processes: offered %d, allowed %d (limit %d, bound %d); Redis script runs %d (bound %d)", len(ps), offered, allowed, limit, bound, trips, maxTrips)
			if want := overload * limit; offered != want {
				t.Errorf("offered %d, want %d", offered, want)
			}
			if allowed < limit || allowed > bound {
				t.Errorf("allowed %d of %d, want within [%d, %d]", allowed, offered, limit, bound)
			}
			if trips > maxTrips {
				t.Errorf("Redis served %d script runs, want ≤ %d", trips, maxTrips)
			}
			if want := int64(hosts * window / interval); flushes != want {
				t.Errorf("%d flushes, want %d: one process per host at a time", flushes, want)
			}
			for _, zone := range zones {
				d, err := dict.Open(zone, dict.Options{})
				if err != nil {
					t.Fatal(err)
				}
				err = d.Check()
				d.Close()
				if err != nil {
					t.Errorf("host zone %s: Check() = %v", zone, err)
				}
			}
		})
	}
}

// TestTieredAllocs: a decision allocates once, for its keys' name (the
// window's part of it is kept); it never reaches Redis.
func TestTieredAllocs(t *testing.T) {
	_, c := newClient(t)
	d, err := dict.Open(testutil.TempZone(t), dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	l, err := NewTiered(d, c, "allocs", 1<<40, time.Hour, 100*time.Millisecond, Options{})
	if err != nil {
		t.Fatal(err)
	}
	incoming(t, l, "k", true) // lists the key
	calls := l.Stats().Calls
	for _, commit := range []bool{true, false} {
		if n := testing.AllocsPerRun(1000, func() { l.Incoming(context.Background(), "k", commit) }); n > 1 {
			t.Errorf("Incoming(commit %v) allocates %v times, want ≤ 1", commit, n)
		}
	}
	if l.Stats().Calls != calls {
		t.Errorf("decisions called Redis")
	}
}

// TestTieredFlood: a flood of new keys fills the zone, and the window's key
// list with it, and a list never evicts: a new key's decision then stands on
// the host's count, with no error, counted in Stats.Unlisted, and the keys
// listed before the flood still reach Redis and the other hosts.
func TestTieredFlood(t *testing.T) {
	_, c := newClient(t)
	clk := new(testutil.Clock)
	host := func() *Tiered {
		d, _ := zonetest.Open(t, dict.Options{Size: 256 << 10, Clock: clk.UnixMilli})
		l, err := NewTiered(d, c, "flood", 5, 10*time.Second, 100*time.Millisecond, fake(clk))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	h1, h2 := host(), host()
	const held, late = "198.51.100.7", "198.51.100.8"
	for range 3 {
		if d := incoming(t, h1, held, true); !d.Allowed {
			t.Fatalf("held client's first requests: %+v", d)
		}
	}
	const flood = 50_000
	for i := range flood {
		key := fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255)
		if d := incoming(t, h1, key, true); !d.Allowed {
			t.Fatalf("flood key %d: %+v", i, d)
		}
	}
	unlisted := h1.Stats().Unlisted
	if unlisted == 0 || unlisted > flood {
		t.Fatalf("Unlisted = %d after %d new keys in a 256 KiB zone, want some, at most one each", unlisted, flood)
	}
	// A client whose first request comes during the flood is limited by
	// the host's count.
	allowed := 0
	for range 7 {
		if incoming(t, h1, late, true).Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Errorf("a client new during the flood: %d of 7 requests allowed, want the limit, 5", allowed)
	}
	if _, err := h1.Flush(decisionCtx()); err != nil {
		t.Fatalf("flush after the flood: %v", err)
	}
	// The other host sees the held client's 3 requests: with its own 1,
	// its next request leaves 0, the one after is rejected.
	incoming(t, h2, held, true)
	if _, err := h2.Flush(decisionCtx()); err != nil {
		t.Fatal(err)
	}
	if d := incoming(t, h2, held, true); !d.Allowed || d.Remaining != 0 {
		t.Errorf("second host, held client: %+v, want allowed with 0 remaining (3 requests on the first host)", d)
	}
	if d := incoming(t, h2, held, true); d.Allowed {
		t.Errorf("second host, held client beyond the limit: %+v, want a rejection", d)
	}
}

// TestTieredListEvicted: a zone shared with other users, full and
// evicting: between flushes the others write new keys and use each twice
// (a local limiter's clients), and one Tiered client is active all along.
// The zone evicts the window's list of keys while the client's count and
// mark stay, so no decision lists it again; every flush must still carry
// the host's count of it to Redis.
func TestTieredListEvicted(t *testing.T) {
	_, c := newClient(t)
	d, clk := zonetest.Open(t, dict.Options{Shards: 1})
	const window, interval, flushes = time.Hour, 100 * time.Millisecond, 200
	l, err := NewTiered(d, c, "ev", 1<<30, window, interval, fake(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	win := clk.Now().UnixMilli() / window.Milliseconds()
	rkey, zkey := fmt.Sprintf("ev:held:%d", win), fmt.Sprintf("tier|ev|%d|held|c", win)
	n, behind := 0, 0
	var last string
	for f := 1; f <= flushes; f++ {
		for i := range 400 {
			k := fmt.Sprintf("other:%d", n)
			n++
			d.Set(k, dict.Int(1), 0, 0)
			d.Get(k)
			if i%4 == 0 {
				incoming(t, l, "held", true)
			}
		}
		clk.Set(time.Duration(f) * interval)
		if _, err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cnt, _, _ := d.Get(zkey)
		host, _, _ := d.Get("tier|ev|host")
		h, _ := c.HGetAll(ctx, rkey).Result()
		if got := h[fmt.Sprint(host.Int())]; got != fmt.Sprint(cnt.Int()) {
			behind++
			last = fmt.Sprintf("after flush %d: zone count %d, Redis %s", f, cnt.Int(), got)
		}
	}
	if behind > 0 {
		t.Errorf("%d of %d flushes left the host's Redis count behind its zone count; last: %s (%+v)", behind, flushes, last, l.Stats())
	}
	if st := d.Stats(); st.Evictions == 0 {
		t.Errorf("the zone evicted nothing (%+v): the test tests nothing", st)
	}
	if l.Stats().Relisted == 0 {
		t.Errorf("Stats().Relisted = 0, want the client listed again after its list's evictions")
	}
}

// TestTieredListLost: the window's list of keys is lost (deleted here, as
// an eviction would) between two flushes while the keys' counts and marks
// stay. The next flush must find it, in the same window or in the next
// (which pops it), whether the list is gone or newer keys created it
// again, and carry every key's count to Redis; a key whose count went with
// the list (its mark stayed) must be listed when it counts again.
func TestTieredListLost(t *testing.T) {
	_, c := newClient(t)
	for _, tc := range []struct {
		name      string
		recreate  bool // a new key creates the list again before the flush
		nextWin   bool // the flush is the next window's first
		countGone bool // one key's count goes with the list, its mark stays
	}{
		{name: "gone"},
		{name: "recreated", recreate: true},
		{name: "next window", nextWin: true},
		{name: "next window recreated", recreate: true, nextWin: true},
		{name: "count gone", countGone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := new(testutil.Clock)
			const interval = 100 * time.Millisecond
			prefix := "lost" + strconv.Itoa(len(tc.name))
			l, d, keys := activeTiered(t, c, clk, prefix, 5, interval, Options{Timeout: callTimeout})
			ctx := context.Background()
			// The flushes come an interval apart (the lease holds) near
			// the window's end.
			win := clk.Now().UnixMilli() / time.Hour.Milliseconds()
			end := time.Duration((win+1)*time.Hour.Milliseconds()-t0.UnixMilli()) * time.Millisecond
			clk.Set(end - 2*interval)
			if _, err := l.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			zk := func(key, suffix string) string { return fmt.Sprintf("tier|%s|%d|%s%s", prefix, win, key, suffix) }
			if err := d.Delete(zk("keys", "")); err != nil {
				t.Fatal(err)
			}
			want := map[string]int64{}
			for i, k := range keys {
				incoming(t, l, k, true)
				want[k] = 2
				if tc.countGone && i == 0 {
					if err := d.Delete(zk(k, "|c")); err != nil {
						t.Fatal(err)
					}
					want[k] = 0
				}
			}
			if tc.recreate {
				incoming(t, l, "198.51.100.1", true)
				want["198.51.100.1"] = 1
			}
			if tc.nextWin {
				clk.Set(end + interval/2)
			} else {
				clk.Set(end - interval)
			}
			if _, err := l.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.countGone {
				// Its next request creates its count again: the key
				// must be listed and flushed.
				incoming(t, l, keys[0], true)
				incoming(t, l, keys[0], true)
				want[keys[0]] = 2
				clk.Set(end - interval/2)
				if _, err := l.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			host, _, err := d.Get("tier|" + prefix + "|host")
			if err != nil {
				t.Fatal(err)
			}
			for k, n := range want {
				got, err := c.HGet(ctx, fmt.Sprintf("%s:%s:%d", prefix, k, win), strconv.FormatInt(host.Int(), 10)).Result()
				if err != nil || got != strconv.FormatInt(n, 10) {
					t.Errorf("Redis holds the host's count of %s as %q, %v; want %d", k, got, err, n)
				}
			}
			wantRelisted := uint64(len(keys))
			if tc.countGone && !tc.nextWin {
				wantRelisted-- // listed by its decision, not by the flush
			}
			if got := l.Stats().Relisted; got != wantRelisted {
				t.Errorf("Stats().Relisted = %d, want %d", got, wantRelisted)
			}
		})
	}
}

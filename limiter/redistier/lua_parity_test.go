package redistier

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/internal/testutil"
)

// The tests of this file hold Req to lua-resty-redis-ratelimit 0.03 call by
// call: a plain Go rendering of its arithmetic (what new() computes, what
// its script computes, with Lua's tostring and cjson rounding numbers to 14
// significant digits on the way), and luaRules (compat_test.go) standing in
// for an OpenResty node that shares the keys.

// g14 is a number after Lua's tostring or cjson's encoding and a read back:
// rounded to 14 significant digits.
func g14(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 14, 64), 64)
	return v
}

// luaRRVal is a key's stored value: [excess, last, forbidden].
type luaRRVal struct {
	excess, last float64
	forbidden    bool
}

// luaRR is the module's arithmetic over a map of keys: rate and burst as the
// script reads its arguments. monotonic renders the package's documented
// difference: a now before the stored time leaks nothing.
type luaRR struct {
	rate, burst float64
	duration    int64
	vals        map[string]luaRRVal
	monotonic   bool
}

// newLuaRR renders new(zone, rate, burst, duration) for "n r/s" (per 1) or
// "n r/m" (per 60).
func newLuaRR(n, per, burst float64, duration int64, monotonic bool) *luaRR {
	return &luaRR{
		rate:      g14(math.Floor(n * 1000 / per)),
		burst:     g14(burst * 1000),
		duration:  duration,
		vals:      map[string]luaRRVal{},
		monotonic: monotonic,
	}
}

// incoming renders one run of the script at now ms; commit false (a dry
// run, the package's addition) writes nothing. It returns the reply: the
// code and the excess as Redis turns a Lua number into an integer.
func (l *luaRR) incoming(key string, now float64, commit bool) (code int, excess int64) {
	v, found := l.vals[key]
	e := 0.0
	if found {
		if v.forbidden {
			return 3, int64(v.excess)
		}
		ms := math.Abs(now - v.last)
		if l.monotonic && now < v.last {
			ms, now = 0, v.last
		}
		e = v.excess - l.rate*ms/1000 + 1000
		if e < 0 {
			e = 0
		}
		if e > l.burst {
			if l.duration > 0 && commit {
				l.vals[key] = luaRRVal{g14(e), now, true}
			}
			return 2, int64(e)
		}
	}
	if commit {
		l.vals[key] = luaRRVal{g14(e), now, false}
	}
	return 1, int64(e)
}

// storedRR reads key's value; found false when absent.
func storedRR(t *testing.T, c redis.UniversalClient, key string) (luaRRVal, bool) {
	t.Helper()
	raw, err := c.Get(context.Background(), key).Result()
	if err == redis.Nil {
		return luaRRVal{}, false
	}
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	var v []float64
	if err := json.Unmarshal([]byte(raw), &v); err != nil || len(v) != 3 {
		t.Fatalf("GET %s = %s, want a JSON array of 3 numbers (%v)", key, raw, err)
	}
	return luaRRVal{v[0], v[1], v[2] == 1}, true
}

// luaNode runs luaRules as the Lua module calls its script at now ms: its
// arguments as tostring writes them.
func luaNode(t *testing.T, c redis.UniversalClient, key string, l *luaRR, now int64) (int, int64) {
	t.Helper()
	r, err := luaRules.Run(context.Background(), c, []string{key},
		strconv.FormatFloat(l.rate, 'g', 14, 64), strconv.FormatFloat(l.burst, 'g', 14, 64),
		now, l.duration).Int64Slice()
	if err != nil {
		t.Fatalf("Lua rules on %s: %v", key, err)
	}
	return int(r[0]), r[1]
}

// TestLuaParityReqRandom replays random sequences, each call made by this
// package's Req or by an OpenResty node (luaRules) on the same key, and
// requires each reply and the stored value after each call to be the Lua
// module's. Sequences whose clock goes back are held to the rendering with
// the documented difference, and their Lua node calls are left out: the
// module leaks |now − last| there.
func TestLuaParityReqRandom(t *testing.T) {
	_, c := newClient(t)
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	clk := new(testutil.Clock)
	for seq := range 150 {
		per := []float64{1, 60}[r.IntN(2)]
		unit := map[float64]string{1: "r/s", 60: "r/m"}[per]
		var n float64
		switch r.IntN(3) {
		case 0:
			n = float64(1 + r.IntN(100))
		case 1:
			n = float64(1+r.IntN(5000)) / 1000 * per
		default:
			n = 0.1 + r.Float64()*30
		}
		burst := []float64{0, 1.9995, float64(r.IntN(6)), float64(r.IntN(60)) / 10, r.Float64() * 4}[r.IntN(5)]
		duration := []int64{0, 0, 100}[r.IntN(3)] // 100 s outlives the test: TTLs are the server's
		back := seq%4 == 3
		rate := strconv.FormatFloat(n, 'g', -1, 64) + unit
		l, err := NewReq(c, fmt.Sprintf("par%d", seq), rate, burst, time.Duration(duration)*time.Second, fake(clk))
		if err != nil {
			t.Fatalf("NewReq(%q, %v): %v", rate, burst, err)
		}
		lua := newLuaRR(n, per, burst, duration, back)
		at := int64(r.IntN(1000))
		for i := range 30 {
			at += []int64{0, r.Int64N(50), r.Int64N(int64(1e6/lua.rate) + 1), r.Int64N(3000)}[r.IntN(4)]
			now := at
			if back && r.IntN(3) == 0 {
				now -= r.Int64N(2000)
			}
			clk.Set(time.Duration(now) * time.Millisecond)
			nowMs := t0.UnixMilli() + now
			key := []string{"a", "b"}[r.IntN(2)]
			rkey := fmt.Sprintf("par%d:%s", seq, key)
			what := fmt.Sprintf("seq %d (%s, burst %v, duration %d, earlier stamps %v) call %d at +%d ms", seq, rate, burst, duration, back, i, now)
			var code, wantCode int
			var excess, wantExcess int64
			if !back && r.IntN(2) == 0 {
				wantCode, wantExcess = lua.incoming(rkey, float64(nowMs), true)
				code, excess = luaNode(t, c, rkey, lua, nowMs)
				what += " (OpenResty node)"
			} else {
				commit := r.IntN(5) > 0
				wantCode, wantExcess = lua.incoming(rkey, float64(nowMs), commit)
				d := incoming(t, l, key, commit)
				// A Decision does not tell 2 from 3: both reject.
				code, excess = 2, int64(math.Round(d.State*1000))
				if wantCode == 3 {
					code = 3
				}
				if d.Allowed {
					code = 1
					// The module's delay: the reply's excess over its rate.
					if want := time.Duration(math.Round(float64(excess) / lua.rate * 1e9)); d.Delay != want {
						t.Fatalf("%s: Delay %v, Lua %v", what, d.Delay, want)
					}
				}
				what += fmt.Sprintf(" (Go, commit %v)", commit)
			}
			if code != wantCode || excess != wantExcess {
				t.Fatalf("%s: reply [%d %d], Lua [%d %d]", what, code, excess, wantCode, wantExcess)
			}
			got, found := storedRR(t, c, rkey)
			want, wantFound := lua.vals[rkey]
			if found != wantFound || got != want {
				t.Fatalf("%s: stored %+v (found %v), Lua %+v (found %v)", what, got, found, want, wantFound)
			}
		}
	}
}

// TestLuaParityReqFractionalBurst is the case seen to differ: rate 1r/m
// (16 milli-requests per second), burst 1.9995 (the module sends 1999.5),
// calls at 0, 0 and 50 ms. The third finds 1000 − 16·50/1000 + 1000 =
// 1999.2, within the burst, and stores it. The writers take turns in every
// order: Go and the OpenResty node must leave the same value.
func TestLuaParityReqFractionalBurst(t *testing.T) {
	_, c := newClient(t)
	clk := new(testutil.Clock)
	l, err := NewReq(c, "frac", "1r/m", 1.9995, 0, fake(clk))
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range []string{"GGG", "LLL", "GLG", "LGL", "GGL", "LLG"} {
		t.Run(order, func(t *testing.T) {
			lua := newLuaRR(1, 60, 1.9995, 0, false)
			key := "frac:" + order
			for i, at := range []int64{0, 0, 50} {
				clk.Set(time.Duration(at) * time.Millisecond)
				now := t0.UnixMilli() + at
				wantCode, wantExcess := lua.incoming(key, float64(now), true)
				var allowed bool
				if order[i] == 'L' {
					code, _ := luaNode(t, c, key, lua, now)
					allowed = code == 1
				} else {
					allowed = incoming(t, l, order, true).Allowed
				}
				if allowed != (wantCode == 1) {
					t.Fatalf("call %d (%c) at +%d ms: allowed %v, Lua [%d %d]", i, order[i], at, allowed, wantCode, wantExcess)
				}
				got, _ := storedRR(t, c, key)
				if want := lua.vals[key]; got != want {
					t.Fatalf("call %d (%c): stored %+v, Lua %+v", i, order[i], got, want)
				}
			}
			if got, _ := storedRR(t, c, key); got.excess != 1999.2 {
				t.Errorf("stored excess %v, want 1999.2 (the third call admitted)", got.excess)
			}
		})
	}
}

// TestReqEarlierStampsDoNotDrain sends calls stamped in random order within
// one second, one after another, as callers whose clocks are read before
// their calls reach Redis. The Lua module leaks |now − last| on every step
// back and admits what the bucket never allowed; Req leaks nothing for an
// earlier stamp, so at 10r/s and burst 0 a second admits at most
// 1 + 10 = 11.
func TestReqEarlierStampsDoNotDrain(t *testing.T) {
	_, c := newClient(t)
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	clk := new(testutil.Clock)
	l, err := NewReq(c, "back", "10r/s", 0, 0, fake(clk))
	if err != nil {
		t.Fatal(err)
	}
	lua := newLuaRR(10, 1, 0, 0, false)
	admitted, luaAdmitted := 0, 0
	var last float64
	for range 200 {
		at := r.Int64N(1001)
		clk.Set(time.Duration(at) * time.Millisecond)
		if incoming(t, l, "k", true).Allowed {
			admitted++
		}
		if code, _ := lua.incoming("k", float64(t0.UnixMilli()+at), true); code == 1 {
			luaAdmitted++
		}
		v, _ := storedRR(t, c, "back:k")
		if v.last < last {
			t.Fatalf("stored time went back from %v to %v", last, v.last)
		}
		last = v.last
	}
	if admitted > 11 {
		t.Errorf("admitted %d of 200 calls stamped within 1 s at 10r/s, burst 0; want at most 11", admitted)
	}
	if luaAdmitted <= 11 {
		t.Errorf("the Lua module's |now − last| admitted %d: the sequence does not show what it over-admits", luaAdmitted)
	}
	t.Logf("admitted %d; the Lua module's arithmetic admits %d", admitted, luaAdmitted)
}

// TestReqCallerClockConcurrent is the default clock, the caller's, under 64
// goroutines on one key: their stamps reach Redis out of order. Whatever
// the order, the admissions stay within what the bucket allows over the
// span of the stamps the calls carried: 1 + (burst + rate·span)/1.
func TestReqCallerClockConcurrent(t *testing.T) {
	_, c := newClient(t)
	var lo, hi atomic.Int64
	lo.Store(math.MaxInt64)
	now := func() time.Time {
		tm := time.Now()
		ms := tm.UnixMilli()
		for v := lo.Load(); ms < v && !lo.CompareAndSwap(v, ms); v = lo.Load() {
		}
		for v := hi.Load(); ms > v && !hi.CompareAndSwap(v, ms); v = hi.Load() {
		}
		return tm
	}
	const rate, burst = 100, 5
	l, err := NewReq(c, "conc", fmt.Sprintf("%dr/s", rate), burst, 0, Options{Timeout: callTimeout, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	// bound is what the bucket admits over the stamps' span.
	bound := func() int64 {
		span := float64(hi.Load() - lo.Load())
		return int64(1 + (burst*1000+rate*1000*span/1000)/1000)
	}
	var admitted, calls atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// At least a second, and twice the calls the bucket admits.
			for time.Since(start) < time.Second || calls.Load() <= 2*bound() {
				if time.Since(start) > 30*time.Second {
					return
				}
				d, err := l.Incoming(context.Background(), "k", true)
				if err != nil {
					t.Error(err)
					return
				}
				calls.Add(1)
				if d.Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	span, most := hi.Load()-lo.Load(), bound()
	t.Logf("%d goroutines: %d calls, %d admitted over %d ms of stamps; bound %d", 64, calls.Load(), admitted.Load(), span, most)
	if admitted.Load() > most {
		t.Errorf("admitted %d over %d ms of stamps at %dr/s, burst %d; want at most %d", admitted.Load(), span, rate, burst, most)
	}
	if calls.Load() <= most {
		t.Errorf("only %d calls: the bucket was never full", calls.Load())
	}
}

package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// The differential tests of this file replay random call sequences through
// Req, Count and Conn and through a plain Go rendering of the arithmetic of
// lua-resty-limit-traffic 0.09 (req.lua, count.lua, conn.lua) over a model
// of ngx.shared.DICT, and require the same decisions and the same stored
// state, bit for bit, after every call, but that a Req record that has
// drained may be gone from the zone (its TTL). Only the arithmetic is
// rendered here, written from the Lua sources' reading, not copied; the
// deliberate differences (doc.go: an earlier stamp leaks nothing, a drained
// state expires) are a flag of the rendering, off for the sequences whose
// clock never goes back.

// luaNow is ngx.now() * 1000 at Unix ms: ngx.now() is sec + msec/1000.0 in
// double precision, so near the epoch it is a hair off (1000.9999999999999
// for 1001).
func luaNow(ms int64) float64 {
	sec, msec := ms/1000, ms%1000
	return (float64(sec) + float64(msec)/1000.0) * 1000
}

// luaU64 is LuaJIT's store of a number into a uint64_t field: truncation.
func luaU64(x float64) uint64 { return uint64(x) }

// luaDelay is a delay the Lua modules return in seconds, as a Duration: to
// the nearest ns.
func luaDelay(sec float64) time.Duration { return time.Duration(math.Round(sec * 1e9)) }

// luaReq is resty.limit.req: rate and burst as new() keeps them (times
// 1000), and its records.
type luaReq struct {
	rate, burst float64
	recs        map[string]reqState
	monotonic   bool // the package's documented differences: the following two
	// expiry is each record's TTL as Req sets it (drainedAfter), in Unix
	// ms, when monotonic: a record that has drained is gone, so a call
	// stamped earlier than it finds none, where the Lua module's would
	// find it again.
	expiry map[string]int64
}

func newLuaReq(rate, burst float64, monotonic bool) *luaReq {
	return &luaReq{rate: rate * 1000, burst: burst * 1000, recs: map[string]reqState{}, monotonic: monotonic, expiry: map[string]int64{}}
}

// lookup returns key's record at ms: with the monotonic differences, none
// once it has expired.
func (l *luaReq) lookup(key string, ms int64) (reqState, bool) {
	rec, found := l.recs[key]
	if found && l.monotonic && ms >= l.expiry[key] {
		return reqState{}, false
	}
	return rec, found
}

// setExpiry records the TTL Req gives key's record written at ms.
func (l *luaReq) setExpiry(key string, ms int64) {
	rec := l.recs[key]
	at := int64(rec.last) + int64(math.Ceil((float64(rec.excess)+1000)*1000/l.rate)) + 1
	l.expiry[key] = ms + max(at-ms, 1)
}

// setRate is req.lua's set_rate at Unix ms. With the monotonic
// differences, a lowered rate gives each record the TTL it drains in at
// the new rate, as applyLowerRate does.
func (l *luaReq) setRate(rate float64, ms int64) {
	lower := rate*1000 < l.rate
	l.rate = rate * 1000
	if !lower || !l.monotonic {
		return
	}
	for key := range l.recs {
		if _, found := l.lookup(key, ms); found {
			l.setExpiry(key, ms)
		}
	}
}

// incoming is req.lua's incoming(key, commit) at Unix ms: the delay in
// seconds, the excess in requests, and whether it rejected.
func (l *luaReq) incoming(key string, commit bool, ms int64) (delay, excess float64, rejected bool) {
	now := luaNow(ms)
	rec, found := l.lookup(key, ms)
	e := 0.0
	if found {
		elapsed := now - float64(uint64(rec.last))
		if l.monotonic && elapsed < 0 {
			elapsed = 0
		}
		e = math.Max(float64(rec.excess)-l.rate*math.Abs(elapsed)/1000+1000, 0)
		if e > l.burst {
			return 0, e / 1000, true
		}
	}
	if commit {
		last := int64(luaU64(now))
		if l.monotonic && found && last < rec.last {
			last = rec.last
		}
		l.recs[key] = reqState{excess: luaU64(e), last: last}
		l.setExpiry(key, ms)
	}
	return e / l.rate, e / 1000, false
}

// uncommit is req.lua's uncommit; false for "not found".
func (l *luaReq) uncommit(key string, ms int64) bool {
	rec, found := l.lookup(key, ms)
	if !found {
		return false
	}
	rec.excess = luaU64(math.Max(float64(rec.excess)-1000, 0))
	l.recs[key] = rec
	l.setExpiry(key, ms)
	return true
}

// drainedAt reports whether key's record has drained at ms at: Req's TTL
// ends at last + ⌈(excess+1000)/rate⌉ ms + 1 (drainedAfter), when a request
// finds excess − rate·elapsed + 1000 ≤ 0 from the record, as from none.
func (l *luaReq) drainedAt(key string, at int64) bool {
	rec, found := l.recs[key]
	if !found {
		return false
	}
	return float64(at) >= float64(rec.last)+math.Ceil((float64(rec.excess)+1000)*1000/l.rate)+1
}

// shdict models the numbers of ngx.shared.DICT: doubles with an expiry in
// Unix ms (0: none), expired when the expiry is not after now.
type shdict struct {
	vals map[string][2]float64 // value, expiry
}

func newShdict() *shdict { return &shdict{vals: map[string][2]float64{}} }

func (s *shdict) get(key string, now int64) (float64, bool) {
	v, ok := s.vals[key]
	if !ok || (v[1] != 0 && v[1] <= float64(now)) {
		return 0, false
	}
	return v[0], true
}

func (s *shdict) set(key string, v float64, ttl time.Duration, now int64) {
	exp := 0.0
	if ttl > 0 {
		exp = float64(now + ttl.Milliseconds())
	}
	s.vals[key] = [2]float64{v, exp}
}

// incr is dict:incr(key, delta[, init, init_ttl]); init nil: no init, and
// false for "not found". A live key keeps its expiry.
func (s *shdict) incr(key string, delta float64, init *float64, ttl time.Duration, now int64) (float64, bool) {
	if v, ok := s.get(key, now); ok {
		s.vals[key] = [2]float64{v + delta, s.vals[key][1]}
		return v + delta, true
	}
	if init == nil {
		return 0, false
	}
	s.set(key, *init+delta, ttl, now)
	return *init + delta, true
}

// luaCount is count.lua's incoming_new and uncommit over sh.
type luaCount struct {
	limit  float64
	window time.Duration
	sh     *shdict
}

func (l *luaCount) incoming(key string, commit bool, now int64) (remaining float64, rejected bool) {
	if commit {
		remaining, _ = l.sh.incr(key, -1, &l.limit, l.window, now)
	} else {
		v, ok := l.sh.get(key, now)
		if !ok {
			v = l.limit
		}
		remaining = v - 1
	}
	return remaining, remaining < 0
}

// luaConn is conn.lua over sh; unit is the unit delay in ns.
type luaConn struct {
	max, burst float64
	unit       int64
	sh         *shdict
}

func (l *luaConn) incoming(key string, commit bool, now int64) (conn float64, delay time.Duration, rejected bool) {
	zero := 0.0
	if commit {
		conn, _ = l.sh.incr(key, 1, &zero, 0, now)
		if conn > l.max+l.burst {
			l.sh.incr(key, -1, nil, 0, now)
			return conn, 0, true
		}
	} else {
		v, _ := l.sh.get(key, now)
		conn = v + 1
		if conn > l.max+l.burst {
			return conn, 0, true
		}
	}
	if conn > l.max {
		return conn, time.Duration(l.unit * int64(math.Floor((conn-1)/l.max))), false
	}
	return conn, 0, false
}

// storedNum reads key's number as the shdict model does: a float64, or
// absent.
func storedNum(t *testing.T, d *dict.Dict, key string) (float64, bool) {
	t.Helper()
	v, _, err := d.Get(key)
	if errors.Is(err, dict.ErrNotFound) {
		return 0, false
	}
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return v.Float(), true
}

// parityRate draws a rate in requests per second: short decimals as people
// write them, the issue's, and full-precision ones.
func parityRate(r *rand.Rand) float64 {
	switch r.IntN(4) {
	case 0:
		return float64(1+r.IntN(5000)) / 1000
	case 1:
		return float64(1+r.IntN(300)) / 100
	case 2:
		return []float64{1.1, 0.55, 1.0 / 3, 0.7, 2.2, 3.3, 0.1}[r.IntN(7)]
	}
	return 0.001 + r.Float64()*40
}

// parityBurst draws a burst in requests.
func parityBurst(r *rand.Rand) float64 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return float64(r.IntN(50)) / 10
	case 2:
		return float64(1 + r.IntN(5))
	}
	return r.Float64() * 5
}

// parityEpoch draws the Unix ms a sequence starts at: today's, or near the
// epoch, where ngx.now()*1000 is not a whole number of ms.
func parityEpoch(r *rand.Rand) int64 {
	if r.IntN(2) == 0 {
		return t0 + r.Int64N(1e6)
	}
	return r.Int64N(5000)
}

// parityGap draws the ms between two calls.
func parityGap(r *rand.Rand, rate float64) int64 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return r.Int64N(50)
	case 2:
		return r.Int64N(int64(2000/rate) + 1)
	}
	return r.Int64N(2000)
}

// TestLuaParityReq replays random sequences through Req and resty.limit.req's
// arithmetic. Sequences whose clock never goes back must agree with the
// Lua module exactly; the others with it plus the documented difference.
func TestLuaParityReq(t *testing.T) {
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	d, clk := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	for seq := range 400 {
		rate, burst := parityRate(r), parityBurst(r)
		back := seq%4 == 3 // a sequence with earlier stamps
		// A name per sequence: its parameters differ from the last one's.
		l, err := NewReq(d, fmt.Sprint("t", seq), rate, burst)
		if err != nil {
			t.Fatal(err)
		}
		lua := newLuaReq(rate, burst, back)
		now := parityEpoch(r)
		for i := range 40 {
			now += parityGap(r, rate)
			at := now
			if back && r.IntN(3) == 0 {
				at -= min(r.Int64N(1500), at) // ngx.now() is never before the epoch
			}
			clk.SetMilli(at - t0)
			key := fmt.Sprintf("req:%d:%c", seq, 'a'+r.IntN(2))
			what := fmt.Sprintf("seq %d (rate %v, burst %v, earlier stamps %v) call %d at %d ms", seq, rate, burst, back, i, at)
			switch op := r.IntN(10); {
			case op == 0:
				err := l.Uncommit(ctx, key)
				drained := !lua.monotonic && lua.drainedAt(key, at) // then it may have expired here
				found := lua.uncommit(key, at)
				if (err != nil && !errors.Is(err, ErrNotFound)) || (found != (err == nil) && !(found && drained)) {
					t.Fatalf("%s: Uncommit(%q) = %v, Lua found %v", what, key, err, found)
				}
			default:
				commit := op > 2
				got, err := l.Incoming(ctx, key, commit)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				delay, excess, rej := lua.incoming(key, commit, at)
				if got.Allowed == rej || got.State != excess || (!rej && got.Delay != luaDelay(delay)) {
					t.Fatalf("%s: Incoming(%q, %v) = allowed %v state %v delay %v; Lua: rejected %v excess %v delay %v",
						what, key, commit, got.Allowed, got.State, got.Delay, rej, excess, luaDelay(delay))
				}
			}
			want, wantFound := lua.lookup(key, at)
			v, _, err := d.Get(zoneKey(l, key))
			found := err == nil
			if err != nil && !errors.Is(err, dict.ErrNotFound) {
				t.Fatal(err)
			}
			// A record that has drained means what no record means: Req's
			// TTL (drainedAfter) has let it expire, the Lua module keeps
			// it, and either decides the next request alike.
			if found != wantFound && !(wantFound && !lua.monotonic && lua.drainedAt(key, at)) || (found && getReq(v.Bytes()) != want) {
				var have reqState
				if found {
					have = getReq(v.Bytes())
				}
				t.Fatalf("%s: stored %+v (found %v); Lua stores %+v (found %v)", what, have, found, want, wantFound)
			}
		}
	}
}

// TestLuaParityReqIssue checks the sequences seen to differ from the Lua
// module, at burst 1: the excess in milli-requests stored after each call
// (-1: rejected, the state left as it was), as resty.limit.req stores it.
func TestLuaParityReqIssue(t *testing.T) {
	tests := []struct {
		rate   float64
		at     []int64
		stored []int64
	}{
		// 1000 − 1100·870/1000 = 43 exactly, where 1.1·870 is a hair
		// above 957 and truncates to 42; then 43 − 42.9 + 1000 = 1000.1
		// is over the burst, and 999.1 was not.
		{1.1, []int64{0, 870, 909}, []int64{0, 43, -1}},
		{1.1, []int64{0, 272, 1072, 1720, 1817}, []int64{0, 700, 820, -1, -1}},
		{0.55, []int64{0, 920, 1311, 1325, 2208, 2691, 3130, 3634}, []int64{0, 494, -1, -1, 785, -1, -1, -1}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.rate, tt.at), func(t *testing.T) {
			d, clk := zonetest.Open(t, dict.Options{})
			l, _ := NewReq(d, "t", tt.rate, 1)
			lua := newLuaReq(tt.rate, 1, false)
			for i, at := range tt.at {
				clk.SetMilli(at)
				got, err := l.Incoming(context.Background(), "k", true)
				if err != nil {
					t.Fatal(err)
				}
				_, _, rej := lua.incoming("k", true, t0+at)
				v, _, _ := d.Get(zoneKey(l, "k"))
				s := getReq(v.Bytes())
				if rej != (tt.stored[i] < 0) {
					t.Fatalf("call %d at +%d ms: the rendering of the Lua module rejected %v, want %v", i, at, rej, tt.stored[i] < 0)
				}
				if got.Allowed == rej || s != lua.recs["k"] {
					t.Fatalf("call %d at +%d ms: allowed %v, stored %+v; Lua: rejected %v, stored %+v", i, at, got.Allowed, s, rej, lua.recs["k"])
				}
				if !rej && s.excess != uint64(tt.stored[i]) {
					t.Errorf("call %d at +%d ms: stored excess %d, want %d", i, at, s.excess, tt.stored[i])
				}
			}
		})
	}
}

// parityFrac draws a number as a Lua writer might leave it: a multiple of a
// quarter, from -1 to 6.
func parityFrac(r *rand.Rand) float64 { return float64(r.IntN(29))/4 - 1 }

// TestLuaParityCount replays random sequences through Count and
// resty.limit.count's arithmetic, with fractional values written under the
// keys as a Lua writer (set) or IncrFloat would.
func TestLuaParityCount(t *testing.T) {
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	d, clk := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	for seq := range 300 {
		limit := int64(1 + r.IntN(6))
		window := time.Duration(100+r.IntN(2900)) * time.Millisecond
		l, err := NewCount(d, fmt.Sprint("t", seq), limit, window) // a name per sequence
		if err != nil {
			t.Fatal(err)
		}
		lua := &luaCount{limit: float64(limit), window: window, sh: newShdict()}
		now := parityEpoch(r)
		for i := range 40 {
			now += r.Int64N(300)
			clk.SetMilli(now - t0)
			key := fmt.Sprintf("count:%d:%c", seq, 'a'+r.IntN(2))
			what := fmt.Sprintf("seq %d (limit %d, window %v) call %d at %d ms", seq, limit, window, i, now)
			switch op := r.IntN(12); {
			case op == 0: // a Lua writer's set
				v := parityFrac(r)
				if _, err := d.Set(zoneKey(l, key), dict.Float(v), window, 0); err != nil {
					t.Fatal(err)
				}
				lua.sh.set(key, v, window, now)
			case op == 1: // IncrFloat, as dict:incr on a float
				_, err := d.IncrFloat(zoneKey(l, key), 0.5)
				if _, ok := lua.sh.incr(key, 0.5, nil, 0, now); ok != (err == nil) {
					t.Fatalf("%s: IncrFloat(%q) = %v, Lua found %v", what, key, err, ok)
				}
			case op == 2:
				if err := l.Uncommit(ctx, key); err != nil {
					t.Fatalf("%s: Uncommit: %v", what, err)
				}
				lua.sh.incr(key, 1, nil, 0, now)
			default:
				commit := op > 4
				got, err := l.Incoming(ctx, key, commit)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				rem, rej := lua.incoming(key, commit, now)
				wantRem := int64(0)
				if !rej {
					wantRem = int64(math.Floor(rem))
				}
				if got.Allowed == rej || got.State != rem || got.Remaining != wantRem {
					t.Fatalf("%s: Incoming(%q, %v) = allowed %v state %v remaining %d; Lua: rejected %v remaining %v",
						what, key, commit, got.Allowed, got.State, got.Remaining, rej, rem)
				}
			}
			want, wantFound := lua.sh.get(key, now)
			have, found := storedNum(t, d, zoneKey(l, key))
			if found != wantFound || math.Float64bits(have) != math.Float64bits(want) {
				t.Fatalf("%s: stored %v (found %v); Lua stores %v (found %v)", what, have, found, want, wantFound)
			}
		}
	}
}

// TestLuaParityConn replays random sequences through Conn and
// resty.limit.conn's arithmetic, with fractional values under the keys.
func TestLuaParityConn(t *testing.T) {
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	d, _ := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	for seq := range 300 {
		max, burst := int64(1+r.IntN(4)), int64(r.IntN(4))
		unit := time.Duration(1+r.IntN(500)) * time.Millisecond
		l, err := NewConn(d, fmt.Sprint("t", seq), max, burst, unit) // a name per sequence
		if err != nil {
			t.Fatal(err)
		}
		lua := &luaConn{max: float64(max), burst: float64(burst), unit: int64(unit), sh: newShdict()}
		for i := range 40 {
			key := fmt.Sprintf("conn:%d:%c", seq, 'a'+r.IntN(2))
			what := fmt.Sprintf("seq %d (max %d, burst %d) call %d", seq, max, burst, i)
			switch op := r.IntN(12); {
			case op == 0:
				v := parityFrac(r)
				if _, err := d.Set(zoneKey(l, key), dict.Float(v), 0, 0); err != nil {
					t.Fatal(err)
				}
				lua.sh.set(key, v, 0, 0)
			case op == 1:
				_, err := d.IncrFloat(zoneKey(l, key), 0.5)
				if _, ok := lua.sh.incr(key, 0.5, nil, 0, 0); ok != (err == nil) {
					t.Fatalf("%s: IncrFloat(%q) = %v, Lua found %v", what, key, err, ok)
				}
			case op < 5:
				n, err := l.Leaving(ctx, key, 0)
				conn, ok := lua.sh.incr(key, -1, nil, 0, 0)
				if ok != (err == nil) || (ok && n != int64(conn)) {
					t.Fatalf("%s: Leaving(%q) = %d, %v; Lua: %v (found %v)", what, key, n, err, conn, ok)
				}
			default:
				commit := op > 6
				got, err := l.Incoming(ctx, key, commit)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				conn, delay, rej := lua.incoming(key, commit, 0)
				wantRem := int64(0)
				if !rej {
					wantRem = int64(math.Floor(float64(max+burst) - conn))
				}
				if got.Allowed == rej || got.State != conn || got.Delay != delay || got.Remaining != wantRem {
					t.Fatalf("%s: Incoming(%q, %v) = allowed %v state %v delay %v remaining %d; Lua: rejected %v conn %v delay %v",
						what, key, commit, got.Allowed, got.State, got.Delay, got.Remaining, rej, conn, delay)
				}
			}
			want, wantFound := lua.sh.get(key, 0)
			have, found := storedNum(t, d, zoneKey(l, key))
			if found != wantFound || math.Float64bits(have) != math.Float64bits(want) {
				t.Fatalf("%s: stored %v (found %v); Lua stores %v (found %v)", what, have, found, want, wantFound)
			}
		}
	}
}

// TestLuaMs checks luaMs's table against ngx.now()'s arithmetic, a
// division per call, over every msec of a second and times from before
// the epoch to this century's.
func TestLuaMs(t *testing.T) {
	for _, base := range []int64{-2000, 0, 1000, 1_700_000_000_000, 4_102_444_800_000} {
		for msec := int64(0); msec < 2000; msec++ {
			ms := base + msec
			sec, m := ms/1000, ms%1000
			if m < 0 {
				sec, m = sec-1, m+1000
			}
			want := float64(float64(sec)+float64(m)/1000) * 1000
			if got := luaMs(ms); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("luaMs(%d) = %v, want %v", ms, got, want)
			}
		}
	}
}

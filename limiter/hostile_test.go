package limiter

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

func TestConstructorsRejectBadInput(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name string
		err  error
		new  func() (any, error)
	}{
		{"Req/nil dict", ErrNilDict, func() (any, error) { return NewReq(nil, "t", 1, 1) }},
		{"Req/rate 0", ErrBadRate, func() (any, error) { return NewReq(d, "t", 0, 1) }},
		{"Req/rate -1", ErrBadRate, func() (any, error) { return NewReq(d, "t", -1, 1) }},
		{"Req/rate NaN", ErrBadRate, func() (any, error) { return NewReq(d, "t", nan, 1) }},
		{"Req/rate Inf", ErrBadRate, func() (any, error) { return NewReq(d, "t", inf, 1) }},
		{"Req/rate 1e308", ErrBadRate, func() (any, error) { return NewReq(d, "t", 1e308, 1) }},
		{"Req/burst -1", ErrBadBurst, func() (any, error) { return NewReq(d, "t", 1, -1) }},
		{"Req/burst NaN", ErrBadBurst, func() (any, error) { return NewReq(d, "t", 1, nan) }},
		{"Req/burst Inf", ErrBadBurst, func() (any, error) { return NewReq(d, "t", 1, inf) }},
		{"Req/burst above 1e12", ErrBadBurst, func() (any, error) { return NewReq(d, "t", 1, 1.0000001e12) }},
		{"Count/nil dict", ErrNilDict, func() (any, error) { return NewCount(nil, "t", 1, time.Second) }},
		{"Count/limit 0", ErrBadLimit, func() (any, error) { return NewCount(d, "t", 0, time.Second) }},
		{"Count/limit beyond 2^53", ErrBadLimit, func() (any, error) { return NewCount(d, "t", 1<<53+1, time.Second) }},
		{"Count/window 0", ErrBadWindow, func() (any, error) { return NewCount(d, "t", 1, 0) }},
		{"Count/window 999µs", ErrBadWindow, func() (any, error) { return NewCount(d, "t", 1, 999*time.Microsecond) }},
		{"Conn/nil dict", ErrNilDict, func() (any, error) { return NewConn(nil, "t", 1, 0, 0) }},
		{"Conn/max 0", ErrBadLimit, func() (any, error) { return NewConn(d, "t", 0, 0, 0) }},
		{"Conn/burst -1", ErrBadBurst, func() (any, error) { return NewConn(d, "t", 1, -1, 0) }},
		{"Conn/delay -1", ErrBadDelay, func() (any, error) { return NewConn(d, "t", 1, 0, -1) }},
		{"LeasedConn/lease 0", ErrBadDelay, func() (any, error) { return NewLeasedConn(d, "t", 1, 0, 0, 0) }},
		{"LeasedConn/max 0", ErrBadLimit, func() (any, error) { return NewLeasedConn(d, "t", 0, 0, 0, time.Second) }},
		{"SlidingWindow/nil dict", ErrNilDict, func() (any, error) { return NewSlidingWindow(nil, "t", 1, time.Second) }},
		{"SlidingWindow/limit 0", ErrBadLimit, func() (any, error) { return NewSlidingWindow(d, "t", 0, time.Second) }},
		{"SlidingWindow/window 0", ErrBadWindow, func() (any, error) { return NewSlidingWindow(d, "t", 1, 0) }},
		{"SlidingWindow/overflow", ErrBadWindow, func() (any, error) { return NewSlidingWindow(d, "t", math.MaxInt64/2, time.Hour) }},
		{"GCRA/nil dict", ErrNilDict, func() (any, error) { return NewGCRA(nil, "t", 1, 1) }},
		{"GCRA/rate 0", ErrBadRate, func() (any, error) { return NewGCRA(d, "t", 0, 1) }},
		{"GCRA/rate below 1 per year", ErrBadRate, func() (any, error) { return NewGCRA(d, "t", 1e-9, 1) }},
		{"GCRA/rate above 1 per ns", ErrBadRate, func() (any, error) { return NewGCRA(d, "t", 1e10, 1) }},
		{"GCRA/burst 0", ErrBadBurst, func() (any, error) { return NewGCRA(d, "t", 1, 0) }},
		{"GCRA/burst overflow", ErrBadBurst, func() (any, error) { return NewGCRA(d, "t", 1, math.MaxInt64) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.new(); !errors.Is(err, tt.err) {
				t.Errorf("err = %v, want %v", err, tt.err)
			}
		})
	}
	c, _ := NewConn(d, "t", 1, 0, 0)
	if err := c.SetMax(0); !errors.Is(err, ErrBadLimit) {
		t.Errorf("SetMax(0) = %v, want ErrBadLimit", err)
	}
	if err := c.SetBurst(-1); !errors.Is(err, ErrBadBurst) {
		t.Errorf("SetBurst(-1) = %v, want ErrBadBurst", err)
	}
	g, _ := NewGCRA(d, "t", 1, 1)
	if _, err := g.IncomingN(context.Background(), "k", -1, true); !errors.Is(err, ErrBadCost) {
		t.Errorf("IncomingN(-1) = %v, want ErrBadCost", err)
	}
}

// TestAbused puts foreign values under every limiter's key: each call
// returns ErrAbused, never panics, and leaves the value, its flags and its
// TTL as they were.
func TestAbused(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	req, _ := NewReq(d, "t", 1, 1)
	count, _ := NewCount(d, "t", 1, time.Second)
	conn, _ := NewConn(d, "t", 1, 0, 0)
	leased, _ := NewLeasedConn(d, "t", 1, 0, 0, time.Second)
	sw, _ := NewSlidingWindow(d, "t", 1, time.Second)
	gcra, _ := NewGCRA(d, "t", 1, 1)
	ints := dict.Int(5)
	foreign := map[string]dict.Value{
		"bytes(3)":  dict.String("abc"),
		"bytes(17)": dict.String("0123456789abcdef!"),
		"bytes(25)": dict.String("0123456789abcdef012345678"),
		"int":       ints,
		"float":     dict.Float(1.5),
		"bool":      dict.Bool(true),
	}
	ctx := context.Background()
	type call struct {
		name string
		l    Limiter
		fn   func(key string) error
		// ok lists the kinds the limiter accepts.
		ok func(v dict.Value) bool
	}
	isNum := func(v dict.Value) bool { return v.Kind() == dict.KindInt || v.Kind() == dict.KindFloat }
	incoming := func(l Limiter, commit bool) func(string) error {
		return func(k string) error { _, err := l.Incoming(ctx, k, commit); return err }
	}
	uncommit := func(l Limiter) func(string) error { return func(k string) error { return l.Uncommit(ctx, k) } }
	never := func(dict.Value) bool { return false }
	calls := []call{
		{"Req.Incoming", req, incoming(req, true), never},
		{"Req.dry", req, incoming(req, false), never},
		{"Req.Uncommit", req, uncommit(req), never},
		{"Count.Incoming", count, incoming(count, true), isNum},
		{"Count.dry", count, incoming(count, false), isNum},
		{"Count.Uncommit", count, uncommit(count), isNum},
		{"Conn.Incoming", conn, incoming(conn, true), isNum},
		{"Conn.dry", conn, incoming(conn, false), isNum},
		{"Conn.Uncommit", conn, uncommit(conn), isNum},
		{"LeasedConn.Incoming", leased, incoming(leased, true), never},
		{"LeasedConn.dry", leased, incoming(leased, false), never},
		{"LeasedConn.Uncommit", leased, uncommit(leased), never},
		{"SlidingWindow.Incoming", sw, incoming(sw, true), never},
		{"SlidingWindow.dry", sw, incoming(sw, false), never},
		{"SlidingWindow.Uncommit", sw, uncommit(sw), never},
		{"GCRA.Incoming", gcra, incoming(gcra, true), func(v dict.Value) bool { return v.Kind() == dict.KindInt }},
		{"GCRA.dry", gcra, incoming(gcra, false), func(v dict.Value) bool { return v.Kind() == dict.KindInt }},
		{"GCRA.Uncommit", gcra, uncommit(gcra), func(v dict.Value) bool { return v.Kind() == dict.KindInt }},
	}
	for _, c := range calls {
		for name, v := range foreign {
			if c.ok(v) {
				continue
			}
			t.Run(c.name+"/"+name, func(t *testing.T) {
				zk := zoneKey(c.l, "k")
				if _, err := d.Set(zk, v, time.Hour, 7); err != nil {
					t.Fatal(err)
				}
				if err := c.fn("k"); !errors.Is(err, ErrAbused) {
					t.Errorf("err = %v, want ErrAbused", err)
				}
				if got, flags, err := d.Get(zk); err != nil || !got.Equal(v) || flags != 7 {
					t.Errorf("value afterwards = %v, flags %d, %v; want %v, flags 7 unchanged", got, flags, err, v)
				}
				if ttl, err := d.TTL(zk); err != nil || ttl <= 0 {
					t.Errorf("TTL afterwards = %v, %v; want the hour it had", ttl, err)
				}
			})
		}
		t.Run(c.name+"/list", func(t *testing.T) {
			zk := zoneKey(c.l, "k")
			d.Delete(zk)
			d.RPush(zk, ints)
			defer d.Delete(zk)
			if err := c.fn("k"); !errors.Is(err, ErrAbused) {
				t.Errorf("err = %v, want ErrAbused", err)
			}
		})
	}
}

// hostileValue is a value that a test puts under a limiter's key: the
// values of issue 15's list, as the zone can hold them.
type hostileValue struct {
	name string
	v    dict.Value // ignored for a list
	list bool
}

// hostileValues are 1e308, 9.3e18, 5e15, NaN, the infinities, a string, an
// array (a list), a hash (the zone has none: records of 24 and 16 bytes,
// each some limiter's), null (empty bytes) and a boolean.
func hostileValues() []hostileValue {
	var rec [swSize]byte
	putSW(rec[:], swState{window: 1, cur: 2, prev: 3})
	return []hostileValue{
		{name: "1e308", v: dict.Float(1e308)},
		{name: "9.3e18", v: dict.Float(9.3e18)},
		{name: "5e15", v: dict.Float(5e15)},
		{name: "5e15 int", v: dict.Int(5e15)},
		{name: "NaN", v: dict.Float(math.NaN())},
		{name: "inf", v: dict.Float(math.Inf(1))},
		{name: "-inf", v: dict.Float(math.Inf(-1))},
		{name: "string", v: dict.String("abc")},
		{name: "array", list: true},
		{name: "hash", v: dict.Bytes(rec[:])},
		{name: "hash/16", v: dict.Bytes(rec[:reqSize])},
		{name: "null", v: dict.String("")},
		{name: "boolean", v: dict.Bool(true)},
	}
}

// TestBadState puts each hostile value under the key of each limiter and
// makes every call on it: a value the limiter cannot have written is
// ErrBadState (ErrAbused, of that class, for another kind or size), never
// a decision, and stays as it was; a value it can have written is decided
// on, with no negative duration or allowance.
func TestBadState(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	req, _ := NewReq(d, "t", 1, 1)
	count, _ := NewCount(d, "t", 10, time.Minute)
	conn, _ := NewConn(d, "t", 10, 0, 0)
	sw, _ := NewSlidingWindow(d, "t", 10, time.Minute)
	gcra, _ := NewGCRA(d, "t", 10, 10)
	// decides lists the values each limiter can have written.
	numbers := map[string]bool{"5e15": true, "5e15 int": true}
	limiters := []struct {
		name    string
		l       Limiter
		decides map[string]bool
	}{
		{"Req", req, map[string]bool{"hash/16": true}}, // a Req's size
		{"Count", count, numbers},
		{"Conn", conn, numbers},
		{"SlidingWindow", sw, map[string]bool{"hash": true}}, // a SlidingWindow's size
		{"GCRA", gcra, map[string]bool{"5e15 int": true}},    // a TAT in 1970: no state
	}
	type call struct {
		name string
		fn   func(Limiter) (Decision, error)
	}
	calls := []call{
		{"commit", func(l Limiter) (Decision, error) { return l.Incoming(ctx, "k", true) }},
		{"dry", func(l Limiter) (Decision, error) { return l.Incoming(ctx, "k", false) }},
		{"uncommit", func(l Limiter) (Decision, error) { return Decision{}, l.Uncommit(ctx, "k") }},
	}
	for _, lt := range limiters {
		for _, hv := range hostileValues() {
			for _, c := range calls {
				t.Run(lt.name+"/"+hv.name+"/"+c.name, func(t *testing.T) {
					zk := zoneKey(lt.l, "k")
					d.Delete(zk)
					if hv.list {
						d.RPush(zk, dict.Int(1))
					} else if _, err := d.Set(zk, hv.v, time.Hour, 7); err != nil {
						t.Fatal(err)
					}
					dec, err := c.fn(lt.l)
					if lt.decides[hv.name] {
						if err != nil {
							t.Fatalf("err = %v, want a decision", err)
						}
						checkSane(t, dec)
						return
					}
					if !errors.Is(err, ErrBadState) || dec != (Decision{}) {
						t.Fatalf("= %+v, %v; want ErrBadState and the zero Decision", dec, err)
					}
					if number := hv.v.Kind() == dict.KindInt || hv.v.Kind() == dict.KindFloat; number && !hv.list &&
						(lt.l == Limiter(count) || lt.l == Limiter(conn)) && errors.Is(err, ErrAbused) {
						t.Errorf("= %v; want ErrBadState naming the number, not ErrAbused: a number is this limiter's kind", err)
					}
					if hv.list {
						if n, err := d.LLen(zk); err != nil || n != 1 {
							t.Errorf("list afterwards: %d elements, %v; want it unchanged", n, err)
						}
						return
					}
					if got, flags, err := d.Get(zk); err != nil || !got.Equal(hv.v) || flags != 7 {
						t.Errorf("value afterwards = %v, flags %d, %v; want %v, flags 7, unchanged", got, flags, err, hv.v)
					}
				})
			}
		}
	}
	// A count of 5e15 is a count: 5e15−1 left after a commit.
	d.Set(zoneKey(count, "k"), dict.Float(5e15), time.Hour, 0)
	if dec, err := count.Incoming(ctx, "k", true); err != nil || !dec.Allowed || dec.Remaining != 5e15-1 {
		t.Errorf("Count on 5e15 = %+v, %v; want allowed with 5e15−1 left", dec, err)
	}
	// Conn's Leaving is checked too.
	d.Set(zoneKey(conn, "k"), dict.Float(math.NaN()), 0, 0)
	if _, err := conn.Leaving(ctx, "k", 0); !errors.Is(err, ErrBadState) || errors.Is(err, ErrAbused) {
		t.Errorf("Conn.Leaving on NaN: %v, want ErrBadState", err)
	}
}

// checkSane fails the test for a Decision with a negative duration or
// allowance.
func checkSane(t *testing.T, dec Decision) {
	t.Helper()
	if dec.Delay < 0 || dec.RetryAfter < 0 || dec.ResetAfter < 0 || dec.Remaining < 0 {
		t.Errorf("Decision %+v has a negative duration or allowance", dec)
	}
}

// TestStateContents gives limiters values of their kind and size with
// extreme contents: what they can have written (with another
// configuration, a clock that lags) is decided on, with durations that
// saturate; what none can have written is ErrBadState and stays.
func TestStateContents(t *testing.T) {
	d, clk := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	now := clk.UnixMilli()
	nowNs := now * int64(time.Millisecond)
	set := func(l Limiter, v dict.Value) {
		t.Helper()
		if _, err := d.Set(zoneKey(l, "k"), v, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	reqBytes := func(s reqState) dict.Value {
		var b [reqSize]byte
		putReq(b[:], s)
		return dict.Bytes(b[:])
	}
	swBytes := func(s swState) dict.Value {
		var b [swSize]byte
		putSW(b[:], s)
		return dict.Bytes(b[:])
	}
	req, _ := NewReq(d, "t", 1, 2e7)
	sw, _ := NewSlidingWindow(d, "t", 10, time.Second)
	win := now / 1000
	gcra, _ := NewGCRA(d, "t", 1000, 1000)
	count, _ := NewCount(d, "t", 10, time.Minute)
	conn, _ := NewConn(d, "t", 10, 0, 0)
	const year = int64(365 * 24 * time.Hour)
	tests := []struct {
		name string
		l    Limiter
		v    dict.Value
		bad  bool
		want func(Decision) bool // for a decision; nil: only sane
	}{
		// Lua's delay for an excess of 1e10 milli-requests at 1 r/s, burst 2e7:
		// (1e10 + 1000)/1000 s.
		{"Req/excess 1e10", req, reqBytes(reqState{1e10, now}), false, func(d Decision) bool {
			return d.Allowed && d.Delay == 10_000_001*time.Second
		}},
		// The largest excess any Req stores, its largest burst: rejected
		// until it drains, 1e12 s at 1 r/s, beyond the longest Duration.
		{"Req/excess 1e15", req, reqBytes(reqState{maxExcessM, now}), false, func(d Decision) bool {
			return !d.Allowed && d.State == 1e12+1 && d.RetryAfter == math.MaxInt64
		}},
		{"Req/excess 1e15+1", req, reqBytes(reqState{maxExcessM + 1, now}), true, nil},
		{"Req/excess 2^64-1", req, reqBytes(reqState{math.MaxUint64, now}), true, nil},
		// A float's bits, or an int64's, in the excess: no Req's.
		{"Req/excess bits of 1.5", req, reqBytes(reqState{math.Float64bits(1.5), now}), true, nil},
		{"Req/excess bits of NaN", req, reqBytes(reqState{math.Float64bits(math.NaN()), now}), true, nil},
		{"Req/excess bits of -1000", req, reqBytes(reqState{1<<64 - 1000, now}), true, nil},
		// A time a day ahead is a clock stepped back: it leaks nothing, and
		// the request is decided on the excess as it is.
		{"Req/last a day ahead", req, reqBytes(reqState{1e10, now + maxAheadMs}), false, func(d Decision) bool {
			return d.Allowed && d.Delay == 10_000_001*time.Second
		}},
		{"Req/last a day and 1 ms ahead", req, reqBytes(reqState{0, now + maxAheadMs + 1}), true, nil},
		{"Req/last 2^63-1", req, reqBytes(reqState{0, math.MaxInt64}), true, nil},
		{"Req/last -1", req, reqBytes(reqState{0, -1}), true, nil},
		{"Req/last -2^63", req, reqBytes(reqState{0, math.MinInt64}), true, nil},
		{"Req/last 0", req, reqBytes(reqState{5000, 0}), false, func(d Decision) bool {
			return d.Allowed && d.State == 0 // drained since the epoch
		}},
		{"SlidingWindow/negative count", sw, swBytes(swState{win, -5, 1}), true, nil},
		{"SlidingWindow/negative previous count", sw, swBytes(swState{win, 1, math.MinInt64}), true, nil},
		{"SlidingWindow/count above any limit", sw, swBytes(swState{win, 1 << 62, 0}), true, nil},
		{"SlidingWindow/window before the epoch", sw, swBytes(swState{-1, 0, 0}), true, nil},
		{"SlidingWindow/window 2^63-1", sw, swBytes(swState{math.MaxInt64, 1, 1}), true, nil},
		{"SlidingWindow/window two days ahead", sw, swBytes(swState{win + 2*86400, 1, 1}), true, nil},
		{"SlidingWindow/window a second ahead", sw, swBytes(swState{win + 1, 10, 0}), false, func(d Decision) bool {
			return !d.Allowed && d.RetryAfter > 0
		}},
		{"SlidingWindow/count above this limit", sw, swBytes(swState{win, 1000, 1000}), false, func(d Decision) bool {
			return !d.Allowed && d.RetryAfter > 0
		}},
		{"GCRA/TAT 2^63-1", gcra, dict.Int(math.MaxInt64), true, nil},
		{"GCRA/TAT -1", gcra, dict.Int(-1), true, nil},
		{"GCRA/TAT 101 years ahead", gcra, dict.Int(nowNs + 101*year), true, nil},
		{"GCRA/TAT 100 years, a day and 1 ns ahead", gcra, dict.Int(nowNs + maxTauNs + maxAheadMs*1e6 + 1), true, nil},
		// The largest τ, written by a clock a day ahead.
		{"GCRA/TAT 100 years and a day ahead", gcra, dict.Int(nowNs + maxTauNs + maxAheadMs*1e6), false, func(d Decision) bool {
			return !d.Allowed && d.RetryAfter > 99*time.Duration(year)
		}},
		{"GCRA/TAT 50 years ahead", gcra, dict.Int(nowNs + 50*year), false, func(d Decision) bool {
			return !d.Allowed && d.RetryAfter > 49*time.Duration(year)
		}},
		{"GCRA/TAT in the past", gcra, dict.Int(nowNs - 1), false, func(d Decision) bool { return d.Allowed }},
		// An int is bound as a float is: one beyond ±2^53 is no count, and
		// near ±2^63 IncrInit would wrap it (MinInt64 less 1 is MaxInt64
		// left: an unlimited key).
		{"Count/int -2^63", count, dict.Int(math.MinInt64), true, nil},
		{"Count/int 2^63-1", count, dict.Int(math.MaxInt64), true, nil},
		{"Count/int 2^54", count, dict.Int(1 << 54), true, nil},
		{"Count/int 2^53", count, dict.Int(1 << 53), false, func(d Decision) bool { return d.Allowed }},
		{"Count/int 1-2^53", count, dict.Int(1 - 1<<53), false, func(d Decision) bool { return !d.Allowed }},
		{"Conn/int 2^63-1", conn, dict.Int(math.MaxInt64), true, nil},
		{"Conn/int -2^63", conn, dict.Int(math.MinInt64), true, nil},
		{"Conn/int -2^54", conn, dict.Int(-1 << 54), true, nil},
	}
	for _, tt := range tests {
		for _, commit := range []bool{true, false} {
			name := tt.name + "/commit"
			if !commit {
				name = tt.name + "/dry"
			}
			t.Run(name, func(t *testing.T) {
				set(tt.l, tt.v)
				dec, err := tt.l.Incoming(ctx, "k", commit)
				if tt.bad {
					if !errors.Is(err, ErrBadState) || errors.Is(err, ErrAbused) || dec != (Decision{}) {
						t.Fatalf("= %+v, %v; want ErrBadState (not ErrAbused) and no decision", dec, err)
					}
					if !strings.Contains(err.Error(), zoneKey(tt.l, "k")) {
						t.Errorf("error %q does not name the key %q", err, zoneKey(tt.l, "k"))
					}
					if got, _, err := d.Get(zoneKey(tt.l, "k")); err != nil || !got.Equal(tt.v) {
						t.Errorf("value afterwards = %v, %v; want it unchanged", got, err)
					}
					if err := tt.l.Uncommit(ctx, "k"); !errors.Is(err, ErrBadState) {
						t.Errorf("Uncommit = %v, want ErrBadState", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("err = %v, want a decision", err)
				}
				checkSane(t, dec)
				if tt.want != nil && !tt.want(dec) {
					t.Errorf("Decision %+v is not the one wanted", dec)
				}
			})
		}
	}
	// IncomingN of any n on a TAT GCRA can have written.
	for _, tat := range []int64{0, nowNs, nowNs + 50*year} {
		for _, n := range []int64{1, 1000, math.MaxInt64} {
			set(gcra, dict.Int(tat))
			if dec, err := gcra.IncomingN(ctx, "k", n, true); err != nil || dec.RetryAfter < 0 || dec.ResetAfter < 0 {
				t.Errorf("GCRA.IncomingN(%d) on TAT %d = %+v, %v", n, tat, dec, err)
			}
		}
	}
}

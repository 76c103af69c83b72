package limiter

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

func TestConstructorsRejectBadInput(t *testing.T) {
	d, _ := newDict(t)
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
		{"Count/nil dict", ErrNilDict, func() (any, error) { return NewCount(nil, "t", 1, time.Second) }},
		{"Count/limit 0", ErrBadLimit, func() (any, error) { return NewCount(d, "t", 0, time.Second) }},
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
	if _, err := g.AllowN(context.Background(), "k", -1); !errors.Is(err, ErrBadLimit) {
		t.Errorf("AllowN(-1) = %v, want ErrBadLimit", err)
	}
}

// TestAbused puts foreign values under every limiter's key: each call
// returns ErrAbused, never panics, and leaves the value, its flags and its
// TTL as they were.
func TestAbused(t *testing.T) {
	d, _ := newDict(t)
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

// TestHostileState gives limiters values of the right shape but extreme
// contents: they decide without panicking.
func TestHostileState(t *testing.T) {
	d, _ := newDict(t)
	ctx := context.Background()
	var b [MaxHolders * leaseSize]byte
	set := func(l Limiter, v dict.Value) {
		t.Helper()
		if _, err := d.Set(zoneKey(l, "k"), v, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := NewReq(d, "t", 1, 1e9)
	for _, s := range []reqState{{math.MaxUint64, math.MaxInt64}, {math.MaxUint64, math.MinInt64}, {0, math.MaxInt64}, {1 << 63, 0}} {
		putReq(b[:], s)
		set(req, dict.Bytes(b[:reqSize]))
		if _, err := req.Incoming(ctx, "k", true); err != nil {
			t.Errorf("Req.Incoming on %+v: %v", s, err)
		}
	}
	sw, _ := NewSlidingWindow(d, "t", 10, time.Second)
	for _, s := range []swState{{math.MaxInt64, math.MaxInt64, math.MinInt64}, {math.MinInt64, -5, math.MaxInt64}, {0, 1 << 62, 1 << 62}} {
		putSW(b[:], s)
		set(sw, dict.Bytes(b[:swSize]))
		for _, commit := range []bool{false, true} {
			if dec, err := sw.Incoming(ctx, "k", commit); err != nil || dec.Remaining < 0 || dec.RetryAfter < 0 {
				t.Errorf("SlidingWindow.Incoming on %+v = %+v, %v", s, dec, err)
			}
		}
	}
	gcra, _ := NewGCRA(d, "t", 1000, 1000)
	for _, tat := range []int64{math.MaxInt64, math.MinInt64, 0, -1} {
		set(gcra, dict.Int(tat))
		for _, n := range []int64{0, 1, 1000, math.MaxInt64} {
			if dec, err := gcra.AllowN(ctx, "k", n); err != nil || dec.RetryAfter < 0 || dec.ResetAfter < 0 {
				t.Errorf("GCRA.AllowN(%d) on TAT %d = %+v, %v", n, tat, dec, err)
			}
		}
	}
	leased, _ := NewLeasedConn(d, "t", 3, 0, 0, time.Minute)
	far := d.Now() + int64(time.Hour/time.Millisecond)
	for _, slots := range []int64{math.MaxInt64, math.MinInt64, -1} {
		for i := range MaxHolders {
			putLease(b[i*leaseSize:], lease{holder: uint64(i), slots: slots, expiry: far})
		}
		set(leased, dict.Bytes(b[:]))
		if _, err := leased.Incoming(ctx, "k", true); err != nil && !errors.Is(err, ErrTooManyHolders) {
			t.Errorf("leased Incoming on %d-slot records: %v", slots, err)
		}
	}
}

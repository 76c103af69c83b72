package limiter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// traffic builds TRF-1's limiters with count's limit: the reqs share one
// dictionary, conn and count have one each, all on clk.
func traffic(t *testing.T, clk *testutil.Clock, countLimit int64) ([]Limiter, []string, *dict.Dict, *dict.Dict) {
	t.Helper()
	reqs, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
	conns, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
	counts, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
	req1, err1 := NewReq(reqs, "t", 3, 2)
	req2, err2 := NewReq(reqs, "t2", 2, 3) // another name: other parameters
	conn, err3 := NewConn(conns, "t", 4, 1, 2*time.Second)
	count, err4 := NewCount(counts, "t", countLimit, 100*time.Second)
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return []Limiter{req1, req2, conn, count}, []string{"foo", "bar", "foo", "bar"}, conns, counts
}

func TestCombineVectors(t *testing.T) {
	type call struct {
		at    int64
		rej   bool
		delay float64
	}
	rej := call{rej: true}
	tests := []struct {
		id         string
		countLimit int64
		calls      []call
		// stored: conn on foo and count on bar afterwards
		conn, count int64
	}{
		{"TRF-1", 10, []call{{delay: 0}, {delay: 0.5}, {delay: 1}, rej, {at: 1000, delay: 0.5}, {at: 1000, delay: 2}}, 5, 5},
		{"TRF-2", 2, []call{{delay: 0}, {delay: 0.5}, rej, rej, rej, rej}, 2, -4},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			clk := new(testutil.Clock)
			ls, keys, conns, counts := traffic(t, clk, tt.countLimit)
			for i, c := range tt.calls {
				clk.SetMilli(c.at)
				got, err := Combine(context.Background(), ls, keys)
				if err != nil {
					t.Fatalf("call %d: Combine: %v", i+1, err)
				}
				if got.Allowed == c.rej || (!c.rej && !near(got.Delay, secs(c.delay))) {
					t.Errorf("call %d: Combine at +%d = (allowed %v, delay %v), want (%v, %v)", i+1, c.at, got.Allowed, got.Delay, !c.rej, secs(c.delay))
				}
			}
			if v, _, err := conns.Get(zoneKey(ls[2], "foo")); err != nil || v.Int() != tt.conn {
				t.Errorf("conn on foo = %v, %v; want %d", v, err, tt.conn)
			}
			if v, _, err := counts.Get(zoneKey(ls[3], "bar")); err != nil || v.Int() != tt.count {
				t.Errorf("count on bar = %v, %v; want %d", v, err, tt.count)
			}
		})
	}
}

// fakeLimiter is a foreign Limiter: it allows dry runs, rejects commits
// when rejectCommit is set, runs hook on each call, counts Uncommits and
// the cost they give back, and records the cost of the last decision.
type fakeLimiter struct {
	rejectCommit bool
	hook         func()
	uncommits    int
	given, cost  int64
}

func (f *fakeLimiter) Incoming(ctx context.Context, key string, commit bool) (Decision, error) {
	return f.IncomingN(ctx, key, 1, commit)
}

func (f *fakeLimiter) IncomingN(ctx context.Context, key string, n int64, commit bool) (Decision, error) {
	if f.hook != nil {
		f.hook()
	}
	f.cost = n
	return Decision{Allowed: !(commit && f.rejectCommit), Remaining: 7, Committed: commit && !f.rejectCommit}, nil
}

func (f *fakeLimiter) Uncommit(ctx context.Context, key string) error {
	return f.UncommitN(ctx, key, 1)
}

func (f *fakeLimiter) UncommitN(ctx context.Context, key string, n int64) error {
	f.uncommits++
	f.given += n
	return nil
}

func (f *fakeLimiter) Reset(ctx context.Context, key string) error { return nil }

func TestCombinePass2Rejection(t *testing.T) {
	// Limiter 3 of 4 allows the dry run and rejects the commit (another
	// process got there between the passes): limiters 1, 2 and 4 are
	// uncommitted, and 3 is not.
	d, _ := zonetest.Open(t, dict.Options{})
	count, _ := NewCount(d, "t", 10, time.Minute)
	req, _ := NewReq(d, "t", 1, 5)
	f := &fakeLimiter{rejectCommit: true}
	last := &fakeLimiter{}
	got, err := Combine(context.Background(), []Limiter{count, req, f, last}, []string{"c", "r", "f", "l"})
	if err != nil || got.Allowed {
		t.Fatalf("Combine = %+v, %v; want rejected", got, err)
	}
	if v, _, _ := d.Get(zoneKey(count, "c")); v.Int() != 10 {
		t.Errorf("count after the uncommit = %d, want 10", v.Int())
	}
	if s := storedReq(t, req, "r"); s.excess != 0 {
		t.Errorf("req excess after the uncommit = %d, want 0", s.excess)
	}
	if f.uncommits != 0 || last.uncommits != 1 {
		t.Errorf("uncommits: rejecting %d, last %d; want 0, 1", f.uncommits, last.uncommits)
	}
}

func TestCombineUncommitExpired(t *testing.T) {
	// A remote limiter that takes 3 ms a call rejects in pass 2; by then
	// the Req committed in pass 1 has drained and its state expired (at
	// 1000 r/s an idle key's state lives 2 ms), so its Uncommit finds
	// nothing: ErrNotFound, which has nothing left to give back and must
	// not turn the rejection into an error (the Lua combine ignores
	// uncommit's errors).
	d, clk := zonetest.Open(t, dict.Options{})
	req, _ := NewReq(d, "t", 1000, 10)
	remote := &fakeLimiter{rejectCommit: true, hook: func() { clk.Advance(3 * time.Millisecond) }}
	got, err := Combine(context.Background(), []Limiter{remote, req}, []string{"k", "k"})
	if err != nil || got.Allowed {
		t.Errorf("Combine(remote, req) = %+v, %v; want a rejection and no error", got, err)
	}
	if err := req.Uncommit(context.Background(), "k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Uncommit(\"k\") after Combine = %v, want ErrNotFound: the state did not expire", err)
	}
}

func TestCombineOneNow(t *testing.T) {
	// The clock moves on while Combine runs; every limiter still decides
	// at the time Combine read once.
	d, clk := zonetest.Open(t, dict.Options{})
	a, _ := NewReq(d, "t", 1, 10)
	b, _ := NewReq(d, "t", 1, 10)
	ctx := context.Background()
	a.Incoming(ctx, "a", true) // excess 0 at t0
	b.Incoming(ctx, "b", true)
	f := &fakeLimiter{hook: func() { clk.Advance(400 * time.Millisecond) }}
	got, err := Combine(ctx, []Limiter{a, f, b}, []string{"a", "f", "b"})
	if err != nil || !got.Allowed {
		t.Fatalf("Combine = %+v, %v", got, err)
	}
	// Both at t0: excess 1 each, delay 1 s. Had b read the clock after f
	// moved it, it would have seen +400 ms and a delay of 0.6 s.
	if got.Delay != time.Second || storedReq(t, b, "b").last != t0 || storedReq(t, a, "a").last != t0 {
		t.Errorf("Combine delay %v, last a %d b %d; want 1s at t0", got.Delay, storedReq(t, a, "a").last-t0, storedReq(t, b, "b").last-t0)
	}
	if got.Remaining != 7 {
		t.Errorf("Remaining = %d, want the least, 7", got.Remaining)
	}
}

func TestCombineMismatch(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	c, _ := NewCount(d, "t", 1, time.Second)
	for _, tc := range []struct {
		ls   []Limiter
		keys []string
	}{
		{nil, nil},
		{[]Limiter{c}, nil},
		{[]Limiter{c, nil}, []string{"a", "b"}},
	} {
		if _, err := Combine(context.Background(), tc.ls, tc.keys); !errors.Is(err, ErrMismatch) {
			t.Errorf("Combine(%d limiters, %d keys) = %v, want ErrMismatch", len(tc.ls), len(tc.keys), err)
		}
	}
}

// TestCombineCallsEveryLimiterByType checks that incomingLocal calls each
// limiter of the package by its own type, at Combine's now: one it missed
// would decide at a time of its own, through Incoming.
func TestCombineCallsEveryLimiterByType(t *testing.T) {
	d, clk := zonetest.Open(t, dict.Options{})
	req, _ := NewReq(d, "req", 1, 10)
	count, _ := NewCount(d, "count", 10, time.Minute)
	gcra, _ := NewGCRA(d, "gcra", 1, 10)
	sliding, _ := NewSlidingWindow(d, "sliding", 10, time.Minute)
	conn, _ := NewConn(d, "conn", 10, 0, 0)
	for _, l := range []local{req, count, gcra, sliding, conn} {
		var dec Decision
		handled, err := incomingLocal(&dec, l, clk.UnixMilli(), "k", 1, true)
		if !handled || err != nil || !dec.Allowed || !dec.Committed {
			t.Errorf("incomingLocal(%T) = %v, %v, %+v; want handled, allowed and committed", l, handled, err, dec)
		}
	}
	var dec Decision
	if handled, _ := incomingLocal(&dec, &fakeLimiter{}, 0, "k", 1, true); handled {
		t.Error("incomingLocal handled a limiter of another package")
	}
}

package limiter

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// costed is a limiter of the cost and reset tests.
type costed = Limiter

// costKind builds a limiter of one kind and says the largest cost it
// admits at once.
type costKind struct {
	name  string
	most  int64
	build func(d *dict.Dict) (costed, error)
}

// mustBuild builds k over d, and fails the test if it cannot.
func (k costKind) mustBuild(t *testing.T, d *dict.Dict) costed {
	t.Helper()
	l, err := k.build(d)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// costKinds are the kinds of the cost and reset tests, each small enough
// to fill in a few requests.
var costKinds = []costKind{
	{"req", 7, func(d *dict.Dict) (costed, error) { return NewReq(d, "t", 5, 6) }},
	{"count", 9, func(d *dict.Dict) (costed, error) { return NewCount(d, "t", 9, time.Second) }},
	{"sliding", 8, func(d *dict.Dict) (costed, error) { return NewSlidingWindow(d, "t", 8, 800*time.Millisecond) }},
	{"gcra", 6, func(d *dict.Dict) (costed, error) { return NewGCRA(d, "t", 4, 6) }},
	{"conn", 7, func(d *dict.Dict) (costed, error) { return NewConn(d, "t", 3, 4, time.Millisecond) }},
	{"lconn", 7, func(d *dict.Dict) (costed, error) { return NewLeasedConn(d, "t", 3, 4, time.Millisecond, time.Minute) }},
}

// TestCostIsRequestsAtOnce: IncomingN(n) is n Incomings at one time, all
// or none. Two zones on one clock run the same random sequence: one
// limiter charges n at once, the other n times one. When the first allows,
// the second allows all n, and the keys' states are equal, bit for bit,
// TTL included. When it rejects, the second rejects at least one of the n,
// and its state is then set to the first's. UncommitN(n) is n Uncommits.
// A leased Conn's records name their holder, so it is left out.
func TestCostIsRequestsAtOnce(t *testing.T) {
	for _, k := range costKinds {
		if k.name == "lconn" {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
			da, clk := zonetest.Open(t, dict.Options{})
			db, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
			a := k.mustBuild(t, da)
			b, _ := k.build(db)
			ctx := context.Background()
			now := int64(0)
			for i := range 3000 {
				now += int64(r.IntN(300))
				clk.SetMilli(now)
				n := 1 + r.Int64N(k.most)
				if r.IntN(5) == 0 {
					errA := a.UncommitN(ctx, "k", n)
					var errB error
					for range n {
						if err := b.Uncommit(ctx, "k"); err != nil && errB == nil {
							errB = err
						}
					}
					if !errors.Is(errA, ErrNotFound) && errA != nil || errors.Is(errA, ErrNotFound) != errors.Is(errB, ErrNotFound) {
						t.Fatalf("step %d at +%d: UncommitN(%d) = %v; %d Uncommits: %v", i, now, n, errA, n, errB)
					}
					sameState(t, da, db, zoneKey(a, "k"), i)
					continue
				}
				got, err := a.IncomingN(ctx, "k", n, true)
				if err != nil {
					t.Fatalf("step %d at +%d: IncomingN(%d): %v", i, now, n, err)
				}
				all := true
				for range n {
					d, err := b.Incoming(ctx, "k", true)
					if err != nil {
						t.Fatalf("step %d: Incoming: %v", i, err)
					}
					all = all && d.Allowed
				}
				if got.Allowed != all {
					t.Fatalf("step %d at +%d: IncomingN(%d) allowed %v; %d Incomings all allowed: %v", i, now, n, got.Allowed, n, all)
				}
				if !got.Allowed {
					copyState(t, da, db, zoneKey(a, "k"))
				}
				sameState(t, da, db, zoneKey(a, "k"), i)
			}
		})
	}
}

// sameState fails the test when zk's value or TTL differs between da and db.
func sameState(t *testing.T, da, db *dict.Dict, zk string, step int) {
	t.Helper()
	va, _, errA := da.Get(zk)
	vb, _, errB := db.Get(zk)
	if errors.Is(errA, dict.ErrNotFound) && errors.Is(errB, dict.ErrNotFound) {
		return
	}
	if errA != nil || errB != nil || !va.Equal(vb) {
		t.Fatalf("step %d: state %v, %v; want %v, %v", step, vb, errB, va, errA)
	}
	ta, _ := da.TTL(zk)
	tb, _ := db.TTL(zk)
	if ta != tb {
		t.Fatalf("step %d: TTL %v, want %v", step, tb, ta)
	}
}

// copyState sets zk in db to its value and TTL in da, or deletes it.
func copyState(t *testing.T, da, db *dict.Dict, zk string) {
	t.Helper()
	v, _, err := da.Get(zk)
	if errors.Is(err, dict.ErrNotFound) {
		db.Delete(zk)
		return
	}
	ttl, err2 := da.TTL(zk)
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	if _, err := db.Set(zk, v, ttl, 0); err != nil {
		t.Fatal(err)
	}
}

// TestCostVectors: decisions on costs, worked out by hand.
func TestCostVectors(t *testing.T) {
	type step struct {
		at   int64 // ms after t0
		op   string
		n    int64
		want Decision // the fields compared: Allowed, State, Remaining, Delay, RetryAfter
		err  error
	}
	never := time.Duration(math.MaxInt64)
	tests := []struct {
		name  string
		build func(d *dict.Dict) (costed, error)
		steps []step
	}{
		{"req", func(d *dict.Dict) (costed, error) { return NewReq(d, "t", 1, 4) }, []step{
			{op: "c", n: 3, want: Decision{Allowed: true, State: 2, Remaining: 2, Delay: 2 * time.Second}},
			{op: "c", n: 3, want: Decision{State: 5, RetryAfter: time.Second}},
			{op: "c", n: 6, want: Decision{RetryAfter: never}},
			{op: "dry", n: 2, want: Decision{Allowed: true, State: 4, Delay: 4 * time.Second}},
			{op: "c", n: 2, want: Decision{Allowed: true, State: 4, Delay: 4 * time.Second}},
			{at: 1000, op: "uncommit", n: 2},
			{at: 1000, op: "c", n: 1, want: Decision{Allowed: true, State: 2, Remaining: 2, Delay: 2 * time.Second}},
			{at: 1000, op: "uncommit", n: 6, err: ErrBadCost},
		}},
		{"count", func(d *dict.Dict) (costed, error) { return NewCount(d, "t", 5, time.Second) }, []step{
			{op: "c", n: 3, want: Decision{Allowed: true, State: 2, Remaining: 2}},
			{op: "dry", n: 3, want: Decision{State: -1, RetryAfter: time.Second}},
			{op: "c", n: 3, want: Decision{State: -1, RetryAfter: time.Second}}, // counted, as one request is
			{op: "c", n: 6, want: Decision{RetryAfter: never}},
			{op: "uncommit", n: 3},
			{op: "c", n: 2, want: Decision{Allowed: true, State: 0, Remaining: 0}},
			{op: "uncommit", n: 6, err: ErrBadCost},
		}},
		{"sliding", func(d *dict.Dict) (costed, error) { return NewSlidingWindow(d, "t", 5, time.Second) }, []step{
			{op: "c", n: 3, want: Decision{Allowed: true, State: 2, Remaining: 2}},
			// Next window at e: 3·(1000−e) + 3·1000 ≤ 5000 from e = 334.
			{op: "c", n: 3, want: Decision{State: -1, RetryAfter: 1334 * time.Millisecond}},
			{op: "c", n: 6, want: Decision{RetryAfter: never}},
			{op: "c", n: 2, want: Decision{Allowed: true, State: 0, Remaining: 0}},
			// 500 ms into the next: 5·500 + 3·1000 > 5000 until e = 600.
			{at: 1500, op: "c", n: 3, want: Decision{State: -0.5, RetryAfter: 100 * time.Millisecond}},
			{at: 1600, op: "c", n: 3, want: Decision{Allowed: true, State: 0, Remaining: 0}},
			{at: 1600, op: "uncommit", n: 2},
			{at: 1600, op: "c", n: 2, want: Decision{Allowed: true, State: 0, Remaining: 0}},
		}},
		{"gcra", func(d *dict.Dict) (costed, error) { return NewGCRA(d, "t", 10, 10) }, []step{
			{op: "c", n: 4, want: Decision{Allowed: true, State: 6, Remaining: 6}},
			{op: "uncommit", n: 3},
			{op: "c", n: 9, want: Decision{Allowed: true, State: 0, Remaining: 0}},
			{op: "c", n: 2, want: Decision{RetryAfter: 200 * time.Millisecond}},
			{op: "uncommit", n: 11, err: ErrBadCost},
		}},
		{"conn", func(d *dict.Dict) (costed, error) { return NewConn(d, "t", 2, 2, 100*time.Millisecond) }, []step{
			{op: "c", n: 3, want: Decision{Allowed: true, State: 3, Remaining: 1, Delay: 100 * time.Millisecond}},
			{op: "c", n: 2, want: Decision{State: 5}},
			{op: "c", n: 5, want: Decision{RetryAfter: never}},
			{op: "dry", n: 1, want: Decision{Allowed: true, State: 4, Delay: 100 * time.Millisecond}},
			{op: "uncommit", n: 3},
			{op: "c", n: 4, want: Decision{Allowed: true, State: 4, Delay: 100 * time.Millisecond}},
			{op: "uncommit", n: 0, err: ErrBadCost},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, clk := zonetest.Open(t, dict.Options{})
			l, err := tt.build(d)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i, s := range tt.steps {
				clk.SetMilli(s.at)
				if s.op == "uncommit" {
					if err := l.UncommitN(ctx, "k", s.n); !errors.Is(err, s.err) {
						t.Fatalf("step %d: UncommitN(%d) = %v, want %v", i+1, s.n, err, s.err)
					}
					continue
				}
				got, err := l.IncomingN(ctx, "k", s.n, s.op == "c")
				if err != nil {
					t.Fatalf("step %d: IncomingN(%d, %s): %v", i+1, s.n, s.op, err)
				}
				w := s.want
				if got.Allowed != w.Allowed || !nearF(got.State, w.State) || got.Remaining != w.Remaining || got.Delay != w.Delay || got.RetryAfter != w.RetryAfter {
					t.Errorf("step %d at +%d: IncomingN(%d, %s) = %+v, want Allowed %v, State %v, Remaining %d, Delay %v, RetryAfter %v",
						i+1, s.at, s.n, s.op, got, w.Allowed, w.State, w.Remaining, w.Delay, w.RetryAfter)
				}
			}
		})
	}
}

// TestLeasedConnCost: a leased Conn's holder takes n slots, and gives back
// only the slots it holds.
func TestLeasedConnCost(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	a, _ := NewLeasedConn(d, "t", 3, 0, 0, time.Minute)
	b, _ := NewLeasedConn(d, "t", 3, 0, 0, time.Minute)
	if dec, err := a.IncomingN(ctx, "k", 2, true); err != nil || !dec.Allowed || dec.State != 2 {
		t.Fatalf("a.IncomingN(2) = %+v, %v; want allowed, 2 in flight", dec, err)
	}
	if dec, err := b.IncomingN(ctx, "k", 2, true); err != nil || dec.Allowed || dec.State != 4 {
		t.Fatalf("b.IncomingN(2) = %+v, %v; want rejected, 4 in flight", dec, err)
	}
	if dec, err := b.IncomingN(ctx, "k", 1, true); err != nil || !dec.Allowed {
		t.Fatalf("b.IncomingN(1) = %+v, %v; want allowed", dec, err)
	}
	if n, err := a.LeavingN(ctx, "k", 3, 0); !errors.Is(err, ErrNotFound) || n != 1 {
		t.Errorf("a.LeavingN(3) holding 2 = %d, %v; want 1 in flight, ErrNotFound", n, err)
	}
	if n, err := b.LeavingN(ctx, "k", 1, 0); err != nil || n != 0 {
		t.Errorf("b.LeavingN(1) = %d, %v; want 0, nil", n, err)
	}
	if len(a.lease.held)+len(b.lease.held) != 0 {
		t.Errorf("held after leaving: %v, %v; want none", a.lease.held, b.lease.held)
	}
}

// TestHostileCost: a cost below 1 is ErrBadCost and writes nothing; one
// above what the kind ever admits is a rejection that writes nothing
// (GCRA's RetryAfter is redis_rate's, the others' the longest Duration);
// UncommitN of either is ErrBadCost. Nothing panics.
func TestHostileCost(t *testing.T) {
	ctx := context.Background()
	for _, k := range costKinds {
		t.Run(k.name, func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			l := k.mustBuild(t, d)
			for _, n := range []int64{0, -1, math.MinInt64} {
				if dec, err := l.IncomingN(ctx, "k", n, true); !errors.Is(err, ErrBadCost) || dec != (Decision{}) {
					t.Errorf("IncomingN(%d) = %+v, %v; want ErrBadCost", n, dec, err)
				}
			}
			for _, n := range []int64{k.most + 1, 1 << 53, math.MaxInt64} {
				for _, commit := range []bool{true, false} {
					dec, err := l.IncomingN(ctx, "k", n, commit)
					if err != nil || dec.Allowed || dec.Committed || dec.RetryAfter <= 0 {
						t.Errorf("IncomingN(%d, %v) = %+v, %v; want a rejection", n, commit, dec, err)
					}
					if k.name != "gcra" && dec.RetryAfter != math.MaxInt64 {
						t.Errorf("IncomingN(%d, %v).RetryAfter = %v, want the longest Duration", n, commit, dec.RetryAfter)
					}
				}
			}
			over := k.most + 1
			if k.name == "conn" || k.name == "lconn" {
				over = maxExact + 1 // SetMax may lower the limit of requests in flight
			}
			for _, n := range []int64{0, -1, math.MinInt64, over, math.MaxInt64} {
				if err := l.UncommitN(ctx, "k", n); !errors.Is(err, ErrBadCost) {
					t.Errorf("UncommitN(%d) = %v, want ErrBadCost", n, err)
				}
			}
			if _, _, err := d.Get(zoneKey(l, "k")); !errors.Is(err, dict.ErrNotFound) {
				t.Errorf("hostile costs wrote the key: %v", err)
			}
			// The most it admits is admitted on a fresh key.
			if dec, err := l.IncomingN(ctx, "k", k.most, true); err != nil || !dec.Allowed {
				t.Errorf("IncomingN(%d) on a fresh key = %+v, %v; want allowed", k.most, dec, err)
			}
			if err := l.UncommitN(ctx, "k", k.most); err != nil {
				t.Errorf("UncommitN(%d) = %v", k.most, err)
			}
		})
	}
}

// TestConnLeavingAfterSetMax: a request of a cost above a max lowered
// while it ran still leaves all its slots.
func TestConnLeavingAfterSetMax(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	for _, leased := range []bool{false, true} {
		c, _ := NewConn(d, "p", 10, 0, 0)
		if leased {
			c, _ = NewLeasedConn(d, "l", 10, 0, 0, time.Minute)
		}
		if dec, err := c.IncomingN(ctx, "k", 8, true); err != nil || !dec.Allowed {
			t.Fatalf("leased %v: IncomingN(8) = %+v, %v", leased, dec, err)
		}
		c.SetMax(5)
		if n, err := c.LeavingN(ctx, "k", 8, 0); err != nil || n != 0 {
			t.Errorf("leased %v: LeavingN(8) after SetMax(5) = %d, %v; want 0, nil", leased, n, err)
		}
	}
}

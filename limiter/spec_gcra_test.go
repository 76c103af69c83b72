package limiter

import (
	"context"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

func TestGCRAVectors(t *testing.T) {
	// A step: IncomingN(n) at ms after t0; retry and reset in seconds.
	type step struct {
		at           int64
		n            int64
		rej          bool
		remaining    int64
		retry, reset float64
	}
	type vec struct {
		id    string
		rate  float64
		burst int64
		steps []step
	}
	vecs := []vec{
		{"GC-1", 10, 10, []step{
			{n: 1, remaining: 9, reset: 0.1},
			{n: 2, remaining: 7, reset: 0.3},
			{n: 7, remaining: 0, reset: 1},
			{n: 1000, rej: true, retry: 100, reset: 1},
			{at: 500, n: 1, remaining: 4, reset: 0.6},
		}},
		{"GC-4", 0.1, 1, []step{
			{at: 0, n: 1, remaining: 0, reset: 10},
			{at: 200, n: 1, rej: true, retry: 9.8, reset: 9.8},
			{at: 10000, n: 1, remaining: 0, reset: 10},
		}},
		{"GC-5", 1, 3, []step{
			{n: 1, remaining: 2, reset: 1},
			{n: 1, remaining: 1, reset: 2},
			{n: 1, remaining: 0, reset: 3},
			{n: 1, rej: true, retry: 1, reset: 3},
			{at: 500, n: 1, rej: true, retry: 0.5, reset: 2.5},
			{at: 1000, n: 1, remaining: 0, reset: 3},
		}},
	}
	for _, v := range vecs {
		t.Run(v.id, func(t *testing.T) {
			d, clk := zonetest.Open(t, dict.Options{})
			l, err := NewGCRA(d, "t", v.rate, v.burst)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range v.steps {
				clk.SetMilli(s.at)
				got, err := l.IncomingN(context.Background(), "foo", s.n, true)
				if err != nil {
					t.Fatalf("step %d: IncomingN(%d): %v", i+1, s.n, err)
				}
				want := Decision{Allowed: !s.rej, Remaining: s.remaining, RetryAfter: secs(s.retry), ResetAfter: secs(s.reset)}
				if got.Allowed != want.Allowed || got.Remaining != want.Remaining || got.RetryAfter != want.RetryAfter || got.ResetAfter != want.ResetAfter {
					t.Errorf("step %d: IncomingN(%d) at +%d = (allowed %v, remaining %d, retry %v, reset %v), want (%v, %d, %v, %v)",
						i+1, s.n, s.at, got.Allowed, got.Remaining, got.RetryAfter, got.ResetAfter,
						want.Allowed, want.Remaining, want.RetryAfter, want.ResetAfter)
				}
			}
		})
	}
}

func TestGCRAState(t *testing.T) {
	d, clk := zonetest.Open(t, dict.Options{})
	l, _ := NewGCRA(d, "t", 10, 10)
	ctx := context.Background()
	if _, err := l.IncomingN(ctx, "foo", 3, true); err != nil {
		t.Fatal(err)
	}
	// The TAT is stored in Unix ns with a TTL that ends at it.
	v, _, err := d.Get(zoneKey(l, "foo"))
	if want := (t0 + 300) * int64(time.Millisecond); err != nil || v.Int() != want {
		t.Errorf("stored TAT = %v, %v; want %d", v, err, want)
	}
	if ttl, err := d.TTL(zoneKey(l, "foo")); err != nil || ttl != 300*time.Millisecond {
		t.Errorf("TTL = %v, %v; want 300ms", ttl, err)
	}
	// A dry run and a rejection write nothing; Uncommit moves the TAT back.
	l.Incoming(ctx, "foo", false)
	l.IncomingN(ctx, "foo", 11, true)
	if err := l.Uncommit(ctx, "foo"); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.IncomingN(ctx, "foo", 1, false); got.Remaining != 7 {
		t.Errorf("Remaining after 3 requests, an Uncommit and a dry run of 1 = %d, want 7", got.Remaining)
	}
	clk.SetMilli(300)
	if _, _, err := d.Get(zoneKey(l, "foo")); err == nil {
		t.Errorf("state alive past its TAT")
	}
}

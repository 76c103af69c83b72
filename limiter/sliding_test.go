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

func TestSlidingWindowSteps(t *testing.T) {
	// limit 3 per second. retry and reset in ms; left is State, the
	// estimated allowance after the request.
	type step struct {
		at           int64
		op           string // "c", "dry" or "uncommit"
		rej          bool
		left         float64
		retry, reset int64
	}
	steps := []step{
		{at: 0, op: "c", left: 2, reset: 2000},
		{at: 0, op: "c", left: 1, reset: 2000},
		{at: 0, op: "dry", left: 0, reset: 2000},
		{at: 0, op: "c", left: 0, reset: 2000},
		// cur = limit: wait for the next window, until 3·(1−f) + 1 ≤ 3.
		{at: 0, op: "c", rej: true, left: -1, retry: 1334, reset: 2000},
		{at: 1000, op: "c", rej: true, left: -1, retry: 334, reset: 1000},
		{at: 1333, op: "c", rej: true, left: -0.001, retry: 1, reset: 667},
		{at: 1334, op: "c", left: 0.002, reset: 1666},
		// cur < limit: wait until the previous window weighs less.
		{at: 1500, op: "c", rej: true, left: -0.5, retry: 167, reset: 1500},
		{at: 1667, op: "c", left: 0.001, reset: 1333},
		{at: 1667, op: "uncommit"},
		{at: 1667, op: "c", left: 0.001, reset: 1333},
		{at: 2000, op: "c", left: 0, reset: 2000},
		// After a gap of more than a window, nothing is left.
		{at: 4000, op: "c", left: 2, reset: 2000},
	}
	d, clk := zonetest.Open(t, dict.Options{})
	l, err := NewSlidingWindow(d, "t", 3, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		got := do(t, clk, l, call{s.at, "k", s.op})
		if s.op == "uncommit" {
			continue
		}
		want := Decision{Allowed: !s.rej, State: s.left, RetryAfter: time.Duration(s.retry) * time.Millisecond, ResetAfter: time.Duration(s.reset) * time.Millisecond}
		if got.Allowed != want.Allowed || !nearF(got.State, want.State) || got.RetryAfter != want.RetryAfter || got.ResetAfter != want.ResetAfter || got.Remaining != floorCount(s.left) {
			t.Errorf("step %d: %v = (allowed %v, left %v, remaining %d, retry %v, reset %v), want (%v, %v, %d, %v, %v)",
				i+1, call{s.at, "k", s.op}, got.Allowed, got.State, got.Remaining, got.RetryAfter, got.ResetAfter,
				want.Allowed, want.State, floorCount(s.left), want.RetryAfter, want.ResetAfter)
		}
	}
	if ttl, err := d.TTL(zoneKey(l, "k")); err != nil || ttl != 2*time.Second {
		t.Errorf("TTL = %v, %v; want 2s, to the end of the next window", ttl, err)
	}
}

// TestSlidingWindowBound checks the documented error bound on random
// traffic: at most limit admitted in any fixed window, at most 2·limit − 1
// in any sliding one; and that the worst case reaches the bound.
func TestSlidingWindowBound(t *testing.T) {
	const limit, w = 10, 1000
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	d, clk := zonetest.Open(t, dict.Options{})
	l, _ := NewSlidingWindow(d, "t", limit, w*time.Millisecond)
	ctx := context.Background()
	var admitted []int64
	now := int64(0)
	for range 20000 {
		now += int64(r.IntN(40)) // bursts and pauses, 20 ms apart on average
		clk.SetMilli(now)
		dec, err := l.Incoming(ctx, "k", true)
		if err != nil {
			t.Fatal(err)
		}
		if dec.Allowed {
			admitted = append(admitted, t0+now)
		}
	}
	checkBound(t, admitted, limit, w)

	// Worst case: limit requests at the last ms of a window, then requests
	// every ms: by the end of the next window nearly 2·limit in one window.
	d2, clk2 := zonetest.Open(t, dict.Options{})
	l2, _ := NewSlidingWindow(d2, "t", limit, w*time.Millisecond)
	base := (t0/w+1)*w - t0 + w // the start of a window, after t0
	admitted = admitted[:0]
	for at := base + w - 1; at < base+2*w; at++ {
		clk2.SetMilli(at)
		for range limit {
			if dec, _ := l2.Incoming(ctx, "k", true); dec.Allowed {
				admitted = append(admitted, t0+at)
			}
		}
	}
	if most := checkBound(t, admitted, limit, w); most != 2*limit-1 {
		t.Errorf("worst case: at most %d in a sliding window, want the bound %d", most, 2*limit-1)
	}
}

// checkBound fails the test when admission times break the bound, and
// returns the most admitted in a sliding window.
func checkBound(t *testing.T, admitted []int64, limit, w int64) int64 {
	t.Helper()
	perWindow := map[int64]int64{}
	for _, a := range admitted {
		perWindow[a/w]++
	}
	for win, n := range perWindow {
		if n > limit {
			t.Errorf("window %d admitted %d, more than %d", win, n, limit)
		}
	}
	var most int64
	j := 0
	for i, a := range admitted { // the sliding window (a−w, a]
		for admitted[j] <= a-w {
			j++
		}
		most = max(most, int64(i-j+1))
	}
	if most > 2*limit-1 {
		t.Errorf("a sliding window admitted %d, more than %d", most, 2*limit-1)
	}
	return most
}

// TestSlidingWindowLongWindows: a window is accepted only when the state's
// TTL, to the end of the window after its own (up to a day later for a
// window ahead of a lagging clock), stays within maxTTL; the longest one
// decides and counts like a short one.
func TestSlidingWindowLongWindows(t *testing.T) {
	longest := time.Duration(maxWindowMs) * time.Millisecond
	tests := []struct {
		window time.Duration
		ok     bool
	}{
		{longest, true},
		{longest + time.Millisecond, false},
		{maxTTL, false},
		{200 * 365 * 24 * time.Hour, false}, // 2·window in ns would overflow
		{math.MaxInt64, false},
	}
	ctx := context.Background()
	for _, tt := range tests {
		d, _ := zonetest.Open(t, dict.Options{})
		l, err := NewSlidingWindow(d, "t", 10, tt.window)
		if !tt.ok {
			if !errors.Is(err, ErrBadWindow) {
				t.Errorf("NewSlidingWindow(d, \"t\", 10, %v) = %v, want ErrBadWindow", tt.window, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("NewSlidingWindow(d, \"t\", 10, %v) = %v", tt.window, err)
		}
		for want := int64(9); want >= 8; want-- {
			dec, err := l.Incoming(ctx, "k", true)
			if err != nil || !dec.Allowed || dec.Remaining != want || dec.ResetAfter <= 0 {
				t.Errorf("Incoming(\"k\") in a window of %v = %+v, %v; want allowed, %d left", tt.window, dec, err, want)
			}
		}
		if ttl, err := d.TTL(zoneKey(l, "k")); err != nil || ttl <= 0 || ttl > maxTTL {
			t.Errorf("TTL of the state of a window of %v = %v, %v; want within (0, %v]", tt.window, ttl, err, maxTTL)
		}
	}
}

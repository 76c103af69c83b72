package limiter

import (
	"context"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

func TestCountVectors(t *testing.T) {
	// A step: at ms after t0, on key, commit ("c"), dry run ("dry") or
	// Uncommit ("uncommit"); rem is the remaining allowance (State), and
	// stored, when not nil, the key's value afterwards.
	type step struct {
		at     int64
		key    string
		op     string
		rej    bool
		rem    int64
		stored *int64
	}
	n := func(v int64) *int64 { return &v }
	type vec struct {
		id     string
		limit  int64
		window time.Duration
		steps  []step
	}
	cnt1 := []step{}
	for i := int64(9); i >= 0; i-- {
		cnt1 = append(cnt1, step{key: "foo", op: "c", rem: i})
	}
	cnt1 = append(cnt1, step{key: "foo", op: "c", rej: true, rem: -1}, step{key: "foo", op: "c", rej: true, rem: -2, stored: n(-2)})
	vecs := []vec{
		{"CNT-1", 10, 100 * time.Second, cnt1},
		{"CNT-2", 1, 10 * time.Second, []step{
			{key: "foo", op: "c", rem: 0},
			{key: "foo", op: "c", rej: true, rem: -1},
			{key: "bar", op: "c", rem: 0},
			{key: "bar", op: "c", rej: true, rem: -1},
		}},
		{"CNT-3", 1, time.Second, []step{
			{at: 0, key: "foo", op: "c", rem: 0},
			{at: 0, key: "foo", op: "c", rej: true, rem: -1},
			{at: 999, key: "foo", op: "c", rej: true, rem: -2},
			{at: 1000, key: "foo", op: "c", rem: 0},
			{at: 1000, key: "foo", op: "c", rej: true, rem: -1},
		}},
		{"CNT-4", 5, 10 * time.Second, []step{
			{key: "foo", op: "c", rem: 4},
			{key: "foo", op: "c", rem: 3},
			{key: "foo", op: "dry", rem: 2},
			{key: "foo", op: "dry", rem: 2, stored: n(3)},
		}},
		{"CNT-5", 2, 10 * time.Second, []step{
			{key: "foo", op: "c", rem: 1}, {key: "foo", op: "uncommit", stored: n(2)},
			{key: "foo", op: "c", rem: 1}, {key: "foo", op: "uncommit", stored: n(2)},
			{key: "foo", op: "c", rem: 1}, {key: "foo", op: "uncommit", stored: n(2)},
		}},
	}
	for _, v := range vecs {
		t.Run(v.id, func(t *testing.T) {
			d, clk := zonetest.Open(t, dict.Options{})
			l, err := NewCount(d, "t", v.limit, v.window)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range v.steps {
				got := do(t, clk, l, call{s.at, s.key, s.op})
				if s.op != "uncommit" && (got.Allowed == s.rej || got.State != float64(s.rem) || got.Remaining != max(s.rem, 0)) {
					t.Errorf("step %d: %v = (allowed %v, state %v, remaining %d), want (%v, %d, %d)",
						i+1, call{s.at, s.key, s.op}, got.Allowed, got.State, got.Remaining, !s.rej, s.rem, max(s.rem, 0))
				}
				if s.stored != nil {
					v, _, err := d.Get(zoneKey(l, s.key))
					if err != nil || v.Int() != *s.stored {
						t.Errorf("step %d: stored %v, %v; want %d", i+1, v, err, *s.stored)
					}
				}
			}
		})
	}
}

func TestCountUncommitMissing(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := NewCount(d, "t", 3, time.Second)
	if err := l.Uncommit(context.Background(), "nope"); err != nil {
		t.Errorf("Uncommit(absent) = %v, want nil", err)
	}
	if _, _, err := d.Get(zoneKey(l, "nope")); err == nil {
		t.Errorf("Uncommit(absent) created the key")
	}
}

func TestCountResetAfter(t *testing.T) {
	d, clk := zonetest.Open(t, dict.Options{})
	l, _ := NewCount(d, "t", 1, 10*time.Second)
	ctx := context.Background()
	if got, err := l.ResetAfter(ctx, "foo"); got != 0 || err != nil {
		t.Errorf("ResetAfter(absent) = %v, %v; want 0, nil", got, err)
	}
	l.Incoming(ctx, "foo", true)
	clk.SetMilli(4000)
	got, err := l.Incoming(ctx, "foo", true)
	if err != nil || got.Allowed || got.RetryAfter != 6*time.Second || got.ResetAfter != 6*time.Second {
		t.Errorf("Incoming over the limit at +4 s = %+v, %v; want rejected, retry and reset 6 s", got, err)
	}
	if got, err := l.ResetAfter(ctx, "foo"); got != 6*time.Second || err != nil {
		t.Errorf("ResetAfter at +4 s = %v, %v; want 6s", got, err)
	}
}

// TestCountDecisionResetAfter: a committed decision, allowed or rejected,
// carries the window's time left, as ResetAfter reads it. A dry run's
// allowed decision leaves it to ResetAfter.
func TestCountDecisionResetAfter(t *testing.T) {
	d, clk := zonetest.Open(t, dict.Options{})
	l, _ := NewCount(d, "t", 2, 10*time.Second)
	ctx := context.Background()
	steps := []struct {
		at      int64 // ms since the first request
		commit  bool
		allowed bool
		reset   time.Duration
	}{
		{0, true, true, 10 * time.Second},
		{2500, false, true, 0},
		{2500, true, true, 7500 * time.Millisecond},
		{4000, true, false, 6 * time.Second},
		{4000, false, false, 6 * time.Second},
	}
	for _, s := range steps {
		clk.SetMilli(s.at)
		got, err := l.Incoming(ctx, "k", s.commit)
		if err != nil || got.Allowed != s.allowed || got.ResetAfter != s.reset {
			t.Errorf("Incoming(commit %v) at +%d ms = %+v, %v; want allowed %v, ResetAfter %v", s.commit, s.at, got, err, s.allowed, s.reset)
		}
		if read, err := l.ResetAfter(ctx, "k"); s.reset != 0 && (err != nil || read != s.reset) {
			t.Errorf("ResetAfter at +%d ms = %v, %v; want %v as the decision said", s.at, read, err, s.reset)
		}
	}
}

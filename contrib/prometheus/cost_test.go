package shmprom_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/shmzone/shmzone/contrib/prometheus"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
)

// TestLimiterCountsCosts: a decision on a cost counts once, as allowed,
// rejected or an error; UncommitN and Reset reach the wrapped limiter.
func TestLimiterCountsCosts(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	c := shmprom.NewCollector()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	count, _ := limiter.NewCount(d, "cost", 5, time.Minute)
	l, err := c.AddLimiter("cost", count)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range []struct {
		n       int64
		allowed bool
		err     error
	}{{3, true, nil}, {3, false, nil}, {0, false, limiter.ErrBadCost}} {
		if dec, err := l.IncomingN(ctx, "k", tt.n, true); dec.Allowed != tt.allowed || !errors.Is(err, tt.err) {
			t.Errorf("IncomingN(%d) = %+v, %v; want allowed %v, %v", tt.n, dec, err, tt.allowed, tt.err)
		}
	}
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if dec, err := l.IncomingN(ctx, "k", 5, true); err != nil || !dec.Allowed {
		t.Errorf("IncomingN(5) after Reset = %+v, %v; want allowed", dec, err)
	}
	if err := l.UncommitN(ctx, "k", 5); err != nil {
		t.Fatal(err)
	}
	if dec, _ := count.IncomingN(ctx, "k", 5, false); !dec.Allowed {
		t.Errorf("a dry run of 5 after UncommitN(5) = %+v, want allowed", dec)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "shmzone_limiter_decisions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[label(m, "decision")] = m.GetCounter().GetValue()
		}
	}
	if want := map[string]float64{"allowed": 2, "rejected": 1, "error": 1}; len(got) != 3 || got["allowed"] != want["allowed"] || got["rejected"] != want["rejected"] || got["error"] != want["error"] {
		t.Errorf("decisions = %v, want %v", got, want)
	}
}

// label returns m's label name.
func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// TestLimiterLeavingN: a wrapped Conn ends a request of cost n with
// LeavingN.
func TestLimiterLeavingN(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	conn, _ := limiter.NewConn(d, "conn", 3, 0, 0)
	w, _ := shmprom.NewCollector().AddLimiter("conn", conn)
	ctx := context.Background()
	if dec, err := w.IncomingN(ctx, "k", 3, true); err != nil || !dec.Allowed {
		t.Fatalf("IncomingN(3) = %+v, %v", dec, err)
	}
	ln, ok := w.(interface {
		LeavingN(context.Context, string, int64, time.Duration) (int64, error)
	})
	if !ok {
		t.Fatal("the wrapped Conn has no LeavingN")
	}
	if n, err := ln.LeavingN(ctx, "k", 3, time.Millisecond); err != nil || n != 0 {
		t.Errorf("LeavingN(3) = %d, %v; want 0", n, err)
	}
}

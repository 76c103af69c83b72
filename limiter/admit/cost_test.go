package admit_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
)

// TestAdmitNDelay: AdmitN charges its cost; a request cancelled while
// delayed gives its whole cost back (I1).
func TestAdmitNDelay(t *testing.T) {
	zone, _ := zonetest.Open(t, dict.Options{})
	l, err := limiter.NewReq(zone, "r", 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	var waited []time.Duration
	cancel := false
	g := mustGate(t, l, admit.Options{Wait: func(ctx context.Context, d time.Duration) error {
		waited = append(waited, d)
		if cancel {
			return context.Canceled
		}
		return nil
	}})
	h := http.Header{}
	ctx := context.Background()
	if d, _, err := g.AdmitN(ctx, "k", 3, h.Set); err != nil || !d.Allowed || d.Delay != 2*time.Second {
		t.Fatalf("AdmitN(3) = %+v, %v; want allowed after 2s", d, err)
	}
	cancel = true
	if _, _, err := g.AdmitN(ctx, "k", 4, h.Set); !errors.Is(err, admit.ErrCancelled) {
		t.Fatalf("AdmitN(4) cancelled = %v, want ErrCancelled", err)
	}
	cancel = false
	// 3 then 4 given back: the next request waits behind 3.
	if d, _, err := g.AdmitN(ctx, "k", 1, h.Set); err != nil || d.Delay != 3*time.Second {
		t.Errorf("AdmitN(1) after a cancelled 4 = %+v, %v; want a delay of 3s", d, err)
	}
	if want := []time.Duration{2 * time.Second, 6 * time.Second, 3 * time.Second}; len(waited) != 3 || waited[0] != want[0] || waited[1] != want[1] || waited[2] != want[2] {
		t.Errorf("waited %v, want %v", waited, want)
	}
	if _, _, err := g.AdmitN(ctx, "k", 0, h.Set); !errors.Is(err, limiter.ErrBadCost) {
		t.Errorf("AdmitN(0) = %v, want limiter.ErrBadCost", err)
	}
}

// leavingOnly is a Conn seen through a wrapper that passes Leaving on but
// not LeavingN.
type leavingOnly struct {
	limiter.Limiter
	c *limiter.Conn
}

func (w leavingOnly) Leaving(ctx context.Context, key string, latency time.Duration) (int64, error) {
	return w.c.Leaving(ctx, key, latency)
}

// TestAdmitNConn: a Conn request of cost n holds n slots until its Pass is
// done, through LeavingN or, for a limiter without it, Leaving and
// UncommitN.
func TestAdmitNConn(t *testing.T) {
	for _, wrapped := range []bool{false, true} {
		zone, _ := zonetest.Open(t, dict.Options{})
		c, err := limiter.NewConn(zone, "c", 4, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var l limiter.Limiter = c
		if wrapped {
			l = leavingOnly{c, c}
		}
		g := mustGate(t, l, admit.Options{})
		h := http.Header{}
		ctx := context.Background()
		d, pass, err := g.AdmitN(ctx, "k", 3, h.Set)
		if err != nil || !d.Allowed {
			t.Fatalf("wrapped %v: AdmitN(3) = %+v, %v", wrapped, d, err)
		}
		if d, _, err := g.AdmitN(ctx, "k", 2, h.Set); err != nil || d.Allowed {
			t.Fatalf("wrapped %v: AdmitN(2) with 3 of 4 in = %+v, %v; want a rejection", wrapped, d, err)
		}
		pass.Done()
		if d, err := c.Incoming(ctx, "k", false); err != nil || d.State != 1 {
			t.Errorf("wrapped %v: in flight after Done = %v, %v; want 0 (and this 1)", wrapped, d.State, err)
		}
	}
}

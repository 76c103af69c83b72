package redistier

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
)

// TestTieredCostAndReset: two hosts charge costs to one key; each sees the
// other's after the flushes. A cost above the limit is rejected, one
// below 1 is ErrBadCost. Reset forgets the key in Redis and in the
// host's zone at once, and on the other host at its next flush.
func TestTieredCostAndReset(t *testing.T) {
	_, c := newClient(t)
	clk := new(testutil.Clock)
	host := func() *Tiered {
		d, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
		l, err := NewTiered(d, c, "cost", 10, time.Hour, 100*time.Millisecond, fake(clk))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	h1, h2 := host(), host()
	ctx := context.Background()
	charge := func(h *Tiered, n int64) limiter.Decision {
		t.Helper()
		d, err := h.IncomingN(ctx, "k", n, true)
		if err != nil {
			t.Fatalf("IncomingN(%d): %v", n, err)
		}
		return d
	}
	flush := func() {
		t.Helper()
		for _, h := range []*Tiered{h1, h2, h1} {
			if _, err := h.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := h1.IncomingN(ctx, "k", 0, true); !errors.Is(err, limiter.ErrBadCost) {
		t.Errorf("IncomingN(0) = %v, want ErrBadCost", err)
	}
	if d := charge(h1, 11); d.Allowed || d.RetryAfter != math.MaxInt64 {
		t.Errorf("IncomingN(11) of 10 = %+v, want a rejection for ever", d)
	}
	if d := charge(h1, 4); !d.Allowed || d.Remaining != 6 {
		t.Errorf("h1 IncomingN(4) = %+v, want allowed, 6 left", d)
	}
	if d := charge(h2, 3); !d.Allowed || d.Remaining != 7 {
		t.Errorf("h2 IncomingN(3) = %+v, want allowed, 7 left", d)
	}
	flush()
	if d := charge(h1, 4); d.Allowed || d.State != -1 {
		t.Errorf("h1 IncomingN(4) with 7 of 10 counted = %+v, want a rejection", d)
	}
	if d := charge(h1, 3); !d.Allowed || d.Remaining != 0 {
		t.Errorf("h1 IncomingN(3) with 7 of 10 counted = %+v, want allowed, 0 left", d)
	}
	if err := h1.UncommitN(ctx, "k", 3); err != nil {
		t.Fatal(err)
	}
	if err := h1.UncommitN(ctx, "k", 11); !errors.Is(err, limiter.ErrBadCost) {
		t.Errorf("UncommitN(11) = %v, want ErrBadCost", err)
	}
	if err := h1.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if d := charge(h1, 10); !d.Allowed {
		t.Errorf("h1 IncomingN(10) after Reset = %+v, want allowed", d)
	}
	if err := h1.UncommitN(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	flush()
	// The reset reached h2 too: its 3 are gone.
	if d := charge(h1, 10); !d.Allowed || d.Remaining != 0 {
		t.Errorf("h1 IncomingN(10) after the reset reached h2 = %+v, want allowed, 0 left", d)
	}
}

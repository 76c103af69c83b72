package admit_test

import (
	"context"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
)

// TestPolicyFollowsZone: a limit set live through another handle of the
// zone, as shmctl limits set does, shows in the next decision's headers.
func TestPolicyFollowsZone(t *testing.T) {
	zone, clk := zonetest.Open(t, dict.Options{})
	l, err := limiter.NewCount(zone, "c", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	g := mustGate(t, l, admit.Options{})
	admitted := func() (limit, remaining string) {
		t.Helper()
		_, pass, h, err := admitOne(t, g, context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		pass.Done()
		return h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining")
	}
	if lim, rem := admitted(); lim != "2" || rem != "1" {
		t.Errorf("before: X-RateLimit-Limit %q, Remaining %q, want 2, 1", lim, rem)
	}
	other, err := dict.Open(zone.Path(), dict.Options{Clock: clk.UnixMilli})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := limiter.SetLive(other, "count", "c", limiter.Numbers{Limit: 50}, limiter.FieldLimit); err != nil {
		t.Fatal(err)
	}
	if lim, rem := admitted(); lim != "50" || rem != "48" {
		t.Errorf("after SetLive: X-RateLimit-Limit %q, Remaining %q, want 50, 48", lim, rem)
	}
}

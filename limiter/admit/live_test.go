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

// TestLiveDryRun: a dry run switched on live, through another handle of
// the zone, lets the next rejected request through and counts it in the
// zone. Switched off, the next one is rejected again.
func TestLiveDryRun(t *testing.T) {
	zone, clk := zonetest.Open(t, dict.Options{})
	l, err := limiter.NewCount(zone, "c", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	g := mustGate(t, l, admit.Options{})
	decide := func() admit.Admission {
		t.Helper()
		var a admit.Admission
		if err := g.Decide(context.Background(), "k", 1, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := decide(); !a.Decision.Allowed {
		t.Fatal("first request rejected")
	}
	if a := decide(); a.Decision.Allowed {
		t.Fatal("second request allowed before the dry run")
	}
	other, err := dict.Open(zone.Path(), dict.Options{Clock: clk.UnixMilli})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	on := func(on bool) {
		t.Helper()
		if err := limiter.SetLive(other, "count", "c", limiter.Numbers{DryRun: on}, limiter.FieldDryRun); err != nil {
			t.Fatal(err)
		}
	}
	on(true)
	if a := decide(); !a.Decision.Allowed || !a.DryRunRejected || a.Headers.Len() != 0 {
		t.Errorf("in the live dry run: Allowed %v, DryRunRejected %v, %d headers, want true, true, 0", a.Decision.Allowed, a.DryRunRejected, a.Headers.Len())
	}
	if n, err := limiter.DryRunRejectedOf(other, "count", "c"); n != 1 || err != nil {
		t.Errorf("DryRunRejectedOf = %d, %v, want 1", n, err)
	}
	if n := g.Stats().DryRunRejected(); n != 1 {
		t.Errorf("Stats().DryRunRejected() = %d, want 1", n)
	}
	on(false)
	if a := decide(); a.Decision.Allowed {
		t.Error("request allowed once the dry run is off")
	}
}

package shmprom_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shmzone/shmzone/contrib/prometheus"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
)

// TestDryRunCounts: a Gate over the wrapper runs dry when the limiter's
// live dry run is on, and counts in the zone through the wrapper. A
// scrape exports the zone's count, which another handle of the zone adds
// to, and "rejected" counts the limiter's own decisions.
func TestDryRunCounts(t *testing.T) {
	d, clk := zonetest.Open(t, dict.Options{})
	count, err := limiter.NewCount(d, "login", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := shmprom.NewCollector()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	w, err := c.AddLimiter("login", count)
	if err != nil {
		t.Fatal(err)
	}
	if err := count.SetDryRun(true); err != nil {
		t.Fatal(err)
	}
	if !w.(interface{ DryRun() bool }).DryRun() {
		t.Fatal("wrapper's DryRun() = false, want the limiter's true")
	}
	g, err := admit.New(w, admit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		var a admit.Admission
		if err := g.Decide(context.Background(), "k", 1, &a); err != nil || !a.Decision.Allowed {
			t.Fatalf("Decide #%d = %v, Allowed %v, want allowed", i, err, a.Decision.Allowed)
		}
	}
	other, err := dict.Open(d.Path(), dict.Options{Clock: clk.UnixMilli})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	twin, err := limiter.NewCount(other, "login", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := twin.AddDryRunRejected(2); err != nil {
		t.Fatal(err)
	}
	mfs := gather(t, reg)
	if got, ok := value(mfs, "shmzone_limiter_dryrun_rejected_total", map[string]string{"limiter": "login"}); !ok || got != 5 {
		t.Errorf("shmzone_limiter_dryrun_rejected_total = %v (present %v), want 5", got, ok)
	}
	if got, ok := value(mfs, "shmzone_limiter_decisions_total", map[string]string{"limiter": "login", "decision": "rejected"}); !ok || got != 3 {
		t.Errorf("decisions_total{rejected} = %v (present %v), want 3", got, ok)
	}
	bare, err := c.AddLimiter("bare", struct{ limiter.Limiter }{count})
	if err != nil {
		t.Fatal(err)
	}
	if dr := bare.(interface{ DryRun() bool }); dr.DryRun() {
		t.Error("a limiter without DryRun runs dry through the wrapper")
	}
	if _, ok := value(gather(t, reg), "shmzone_limiter_dryrun_rejected_total", map[string]string{"limiter": "bare"}); ok {
		t.Error("shmzone_limiter_dryrun_rejected_total{limiter=bare} exported for a limiter without a count")
	}
}

package shmprom_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	shmprom "github.com/shmzone/shmzone/contrib/prometheus"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
)

// hostProc is one process of TestHostCounts: its Dict of the shared zone,
// its Collector counting in it, and its limiter counted by the Collector.
type hostProc struct {
	d *dict.Dict
	c *shmprom.Collector
	l limiter.Limiter
}

func newHostProc(t *testing.T, zone string) hostProc {
	t.Helper()
	d, err := dict.Open(zone, dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c := shmprom.NewCollector()
	count, err := limiter.NewCount(d, "per-client", 3, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Added before CountHostIn: counted in the zone from then on.
	l, err := c.AddLimiter("per-client", count)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CountHostIn(d, time.Hour); err != nil { // only scrapes and Close sync
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return hostProc{d, c, l}
}

// scrapeCollector scrapes c through a pedantic registry, which checks the
// descriptions against the metrics.
func scrapeCollector(t *testing.T, c *shmprom.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	return scrape(t, srv.URL)
}

// Two processes' Collectors over one zone, here two Dicts of one file:
// each exports the host's decisions, its own synced at the scrape and the
// other's as of the other's last sync, and its own decisions apart, with
// its pid.
func TestHostCounts(t *testing.T) {
	zone := t.TempDir() + "/host.zone"
	a, b := newHostProc(t, zone), newHostProc(t, zone)
	ctx := context.Background()
	decide := func(p hostProc, n int) {
		for range n {
			if _, err := p.l.Incoming(ctx, "192.0.2.1", true); err != nil {
				t.Fatal(err)
			}
		}
	}
	decide(a, 2) // allowed 2
	decide(b, 3) // allowed 1, rejected 2
	if _, err := a.l.Incoming(ctx, "", true); err == nil {
		t.Fatal("Incoming(\"\") succeeded")
	}
	pid := strconv.Itoa(os.Getpid())
	want := func(mfs map[string]*dto.MetricFamily, name string, labels map[string]string, v float64) {
		t.Helper()
		if got, ok := value(mfs, name, labels); !ok || got != v {
			t.Errorf("%s%v = %v, %v; want %v", name, labels, got, ok, v)
		}
	}
	host := func(decision string) map[string]string {
		return map[string]string{"limiter": "per-client", "decision": decision}
	}
	own := func(decision string) map[string]string {
		return map[string]string{"limiter": "per-client", "decision": decision, "pid": pid}
	}

	mfs := scrapeCollector(t, a.c) // b has not synced: the host's counts are a's
	want(mfs, "shmzone_limiter_decisions_total", host("allowed"), 2)
	want(mfs, "shmzone_limiter_decisions_total", host("error"), 1)
	if _, ok := value(mfs, "shmzone_limiter_decisions_total", host("rejected")); ok {
		t.Error("a host count of rejections before any was synced")
	}
	want(mfs, "shmzone_limiter_process_decisions_total", own("allowed"), 2)
	want(mfs, "shmzone_limiter_process_decisions_total", own("rejected"), 0)

	if err := b.c.Close(); err != nil { // syncs b's counts
		t.Fatal(err)
	}
	mfs = scrapeCollector(t, a.c)
	want(mfs, "shmzone_limiter_decisions_total", host("allowed"), 3)
	want(mfs, "shmzone_limiter_decisions_total", host("rejected"), 2)
	want(mfs, "shmzone_limiter_decisions_total", host("error"), 1)
	want(mfs, "shmzone_limiter_process_decisions_total", own("allowed"), 2)
	want(mfs, "shmzone_limiter_process_decisions_total", own("rejected"), 0)
}

func TestCountHostInErrors(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	c := shmprom.NewCollector()
	if err := c.CountHostIn(nil, time.Second); !errors.Is(err, shmprom.ErrNilDict) {
		t.Errorf("CountHostIn(nil) = %v, want ErrNilDict", err)
	}
	for _, every := range []time.Duration{0, -time.Second} {
		if err := c.CountHostIn(d, every); !errors.Is(err, shmprom.ErrBadInterval) {
			t.Errorf("CountHostIn(d, %v) = %v, want ErrBadInterval", every, err)
		}
	}
	count, err := limiter.NewCount(d, "c", 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", dict.MaxKeyLen)
	if _, err := c.AddLimiter(long, count); err != nil { // no host counts yet: any name
		t.Fatal(err)
	}
	if err := c.CountHostIn(d, time.Second); !errors.Is(err, shmprom.ErrKeyTooLong) {
		t.Errorf("CountHostIn with a limiter named %d bytes = %v, want ErrKeyTooLong", len(long), err)
	}
	c.RemoveLimiter(long)
	if err := c.CountHostIn(d, time.Second); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.CountHostIn(d, time.Second); !errors.Is(err, shmprom.ErrHostCounts) {
		t.Errorf("CountHostIn twice = %v, want ErrHostCounts", err)
	}
	if _, err := c.AddLimiter(long, count); !errors.Is(err, shmprom.ErrKeyTooLong) {
		t.Errorf("AddLimiter of a name of %d bytes with host counts = %v, want ErrKeyTooLong", len(long), err)
	}
	if err := shmprom.NewCollector().Close(); err != nil {
		t.Errorf("Close of a Collector without host counts = %v", err)
	}
}

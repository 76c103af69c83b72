package shmprom_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	shmprom "github.com/shmzone/shmzone/contrib/prometheus"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/preforktest"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
	"github.com/shmzone/shmzone/prefork"
)

func TestHelperProcess(t *testing.T) {
	testutil.RunHelper(map[string]func(args []string) error{
		"fleet":    helperFleet,
		"dryfleet": helperDryFleet,
	})
}

// fleetLimit is the Count limit of the fleet's "/": requests per client
// per hour, so that no window ends during a test.
const fleetLimit = 60

// helperFleet runs a prefork server on args[0] with args[2] children over
// the zone args[1]. Each child limits "/" by a Count of fleetLimit per
// client, counted by a Collector that keeps host counts in the zone, and
// serves the Collector on "/metrics". The master reports on stdout.
func helperFleet(args []string) error {
	children, err := strconv.Atoi(args[2])
	if err != nil {
		return err
	}
	return preforktest.Run(args[0], children, func(ctx context.Context, ln net.Listener) error {
		d, err := dict.Open(args[1], dict.Options{})
		if err != nil {
			return err
		}
		defer d.Close()
		l, err := limiter.NewCount(d, "per-client", fleetLimit, time.Hour)
		if err != nil {
			return err
		}
		c := shmprom.NewCollector()
		if err := c.CountHostIn(d, 20*time.Millisecond); err != nil {
			return err
		}
		defer c.Close()
		counted, err := c.AddLimiter("per-client", l)
		if err != nil {
			return err
		}
		limit, err := httplimit.New(counted, httplimit.Options{Options: admit.Options{NoDelay: true}})
		if err != nil {
			return err
		}
		reg := prometheus.NewRegistry()
		if err := reg.Register(c); err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("/", limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "ok")
		})))
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		return prefork.Serve(ctx, &http.Server{Handler: mux}, ln, time.Minute)
	})
}

var fleetReadyRE = regexp.MustCompile(`child pid=(\d+) ready`)

// Under prefork, each scrape reaches one child, and every child exports
// the host's decisions: allowed and rejected as a load generator counted
// them, whichever child answers, once the children's counts have synced.
// Each child's own counts stay apart, labelled with its pid, and sum to
// the host's.
func TestHostCountsUnderPrefork(t *testing.T) {
	const children, requests = 4, 200
	zone := testutil.TempZone(t)
	d, err := dict.Open(zone, dict.Options{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var mu sync.Mutex
	var out strings.Builder
	testutil.Start(t, testutil.Helper(t, "fleet", addr, zone, strconv.Itoa(children)), func(line string) {
		mu.Lock()
		out.WriteString(line + "\n")
		mu.Unlock()
	})
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	waitUntil(t, "every child ready", func() bool {
		return len(fleetReadyRE.FindAllString(output(), -1)) >= children
	}, output)

	// New connections: the kernel spreads them over the children.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
	allowed, rejected := 0, 0
	for range requests {
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			allowed++
		case http.StatusTooManyRequests:
			rejected++
		default:
			t.Fatalf("GET /: %s", resp.Status)
		}
	}
	if allowed != fleetLimit || rejected != requests-fleetLimit {
		t.Fatalf("the fleet allowed %d and rejected %d of %d requests; want %d allowed: the children do not share the limit", allowed, rejected, requests, fleetLimit)
	}

	// Scrape until two children have answered with the host's counts.
	host := map[string]float64{"allowed": float64(allowed), "rejected": float64(rejected)}
	seen := map[string]bool{}
	waitUntil(t, "two children exporting the host's counts", func() bool {
		mfs := scrapeWith(t, client, "http://"+addr+"/metrics")
		exact := true
		for decision, want := range host {
			got, ok := value(mfs, "shmzone_limiter_decisions_total", map[string]string{"limiter": "per-client", "decision": decision})
			if got > want {
				t.Fatalf("shmzone_limiter_decisions_total{decision=%q} = %v, more than the %v the load generator counted", decision, got, want)
			}
			exact = exact && ok && got == want
		}
		own := ownPids(mfs)
		if len(own) != 1 {
			t.Fatalf("a scrape exported the own counts of %d processes, want its own alone: %v", len(own), own)
		}
		if exact {
			seen[own[0]] = true
		}
		return len(seen) >= 2
	}, output)
}

// ownPids returns the pid labels of shmzone_limiter_process_decisions_total.
func ownPids(mfs map[string]*dto.MetricFamily) []string {
	pids := map[string]bool{}
	for _, m := range mfs["shmzone_limiter_process_decisions_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "pid" {
				pids[lp.GetValue()] = true
			}
		}
	}
	var list []string
	for p := range pids {
		list = append(list, p)
	}
	return list
}

// waitUntil polls cond until it holds, and fails the test if it does not
// within a minute: a guard against a hang, not a measure.
func waitUntil(t *testing.T, what string, cond func() bool, output func() string) {
	t.Helper()
	for end := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %s within a minute; the fleet wrote:\n%s", what, output())
		}
	}
}

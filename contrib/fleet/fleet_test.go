package fleet_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	shmfasthttp "github.com/shmzone/shmzone/contrib/fasthttp"
	shmfiber "github.com/shmzone/shmzone/contrib/fiber"
	shmprom "github.com/shmzone/shmzone/contrib/prometheus"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/preforktest"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/prefork"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// children is the size of each fleet; limit the requests per client its
// Count admits in an hour, so that no window ends during a test.
const (
	children = 4
	limit    = 60
)

func TestHelperProcess(t *testing.T) {
	testutil.RunHelper(map[string]func(args []string) error{
		"fiber":    func(args []string) error { return runMaster(args, serveFiber) },
		"fasthttp": func(args []string) error { return runMaster(args, serveFasthttp) },
	})
}

// served is what a child serves: the limited handler and the metrics.
type served struct {
	limited limiter.Limiter // counted by the Collector
	metrics http.Handler
}

// runMaster runs a prefork master on args[0] over the zone args[1], its
// reports on stdout. Each child opens the zone, counts a Count's decisions
// in it with shmprom, and serves through serve.
func runMaster(args []string, serve func(ctx context.Context, ln net.Listener, s served) error) error {
	return preforktest.Run(args[0], children, func(ctx context.Context, ln net.Listener) error {
		d, err := dict.Open(args[1], dict.Options{})
		if err != nil {
			return err
		}
		defer d.Close()
		count, err := limiter.NewCount(d, "per-client", limit, time.Hour)
		if err != nil {
			return err
		}
		c := shmprom.NewCollector()
		if err := c.CountHostIn(d, 20*time.Millisecond); err != nil {
			return err
		}
		defer c.Close()
		l, err := c.AddLimiter("per-client", count)
		if err != nil {
			return err
		}
		reg := prometheus.NewRegistry()
		if err := reg.Register(c); err != nil {
			return err
		}
		return serve(ctx, ln, served{l, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})})
	})
}

func serveFiber(ctx context.Context, ln net.Listener, s served) error {
	limit, err := shmfiber.New(s.limited, shmfiber.Options{})
	if err != nil {
		return err
	}
	pid := os.Getpid()
	app := fiber.New()
	app.Get("/metrics", adaptor.HTTPHandler(s.metrics))
	app.Get("/", limit, func(c fiber.Ctx) error {
		return c.SendString(fmt.Sprintf("hello from pid %d\n", pid))
	})
	listen := func(ln net.Listener) error {
		return app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
	}
	return prefork.ServeFunc(ctx, ln, listen, app.ShutdownWithContext, testutil.Hang)
}

func serveFasthttp(ctx context.Context, ln net.Listener, s served) error {
	limit, err := shmfasthttp.New(s.limited, shmfasthttp.Options{})
	if err != nil {
		return err
	}
	pid := os.Getpid()
	metrics := fasthttpadaptor.NewFastHTTPHandler(s.metrics)
	hello := limit(func(c *fasthttp.RequestCtx) {
		fmt.Fprintf(c, "hello from pid %d\n", pid)
	})
	srv := &fasthttp.Server{
		Handler: func(c *fasthttp.RequestCtx) {
			if string(c.Path()) == "/metrics" {
				metrics(c)
				return
			}
			hello(c)
		},
		CloseOnShutdown: true,
	}
	return prefork.ServeFunc(ctx, ln, srv.Serve, srv.ShutdownWithContext, testutil.Hang)
}

// A prefork fleet of each framework, four children through package
// prefork: the host's allowed and rejected counts, scraped from whichever
// child answers, equal what the load generator counted, from at least two
// children; and SIGKILL to the master stops every child.
func TestFleetHostCounts(t *testing.T) {
	for _, framework := range []string{"fiber", "fasthttp"} {
		t.Run(framework, func(t *testing.T) {
			zone := testutil.TempZone(t)
			d, err := dict.Open(zone, dict.Options{Size: 4 << 20})
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			addr := freeAddr(t)
			m := testutil.StartMaster(t, children, framework, addr, zone)

			// New connections: the kernel spreads them over the children.
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: testutil.Hang}
			const requests = 3 * limit
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
			if allowed != limit {
				t.Fatalf("the fleet allowed %d of %d requests of one client, want %d", allowed, requests, limit)
			}

			host := map[string]float64{"allowed": float64(allowed), "rejected": float64(rejected)}
			exact := map[string]bool{} // pids of the children that exported the host's counts
			waitUntil(t, m, "two children exporting the host's counts", func() bool {
				mfs := scrape(t, client, "http://"+addr+"/metrics")
				ok := true
				for decision, want := range host {
					got, found := value(mfs, "shmzone_limiter_decisions_total", map[string]string{"limiter": "per-client", "decision": decision})
					if got > want {
						t.Fatalf("shmzone_limiter_decisions_total{decision=%q} = %v, more than the %v the load generator counted", decision, got, want)
					}
					ok = ok && found && got == want
				}
				pid := label(mfs, "shmzone_limiter_process_decisions_total", "pid")
				if pid == "" {
					t.Fatal("a scrape exported no shmzone_limiter_process_decisions_total with a pid")
				}
				if ok {
					exact[pid] = true
				}
				return len(exact) >= 2
			})
			testutil.CheckRunMasterKilled(t, m, addr)
		})
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitUntil polls cond until it holds, and fails the test if it does not
// within testutil.Hang: a guard against a hang, not a measure.
func waitUntil(t *testing.T, m *testutil.Master, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(testutil.Hang); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %s within %v; the fleet wrote:\n%s", what, testutil.Hang, m)
		}
	}
}

// scrape fetches url through client and parses the Prometheus text format.
func scrape(t *testing.T, client *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return mfs
}

// value returns the value of the counter of family name whose labels
// include want, and whether there is one.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, m := range mfs[name].GetMetric() {
		match := 0
		for _, lp := range m.GetLabel() {
			if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
				match++
			}
		}
		if match == len(want) && m.Counter != nil {
			return m.Counter.GetValue(), true
		}
	}
	return 0, false
}

// label returns the value of label key of the first sample of family name.
func label(mfs map[string]*dto.MetricFamily, name, key string) string {
	for _, m := range mfs[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == key {
				return lp.GetValue()
			}
		}
	}
	return ""
}

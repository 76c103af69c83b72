package shmfiber_test

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/valyala/fasthttp"
)

// TestRequestAllocatesNothing: through a fiber app, a request the
// middleware admits allocates nothing beyond what the app alone does,
// headers included, for each kind of limiter and for IPv4 and IPv6
// clients. A rejected request allocates nothing more either, nor does a
// dry-run rejection, an exempt, skipped or refunded request. Req runs
// with NoDelay: a delay waits on a timer, which allocates.
func TestRequestAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	d, _ := zonetest.Open(t, dict.Options{})
	count, _ := limiter.NewCount(d, "count", 1<<40, time.Hour)
	req, _ := limiter.NewReq(d, "req", 1e6, 1e6)
	gcra, _ := limiter.NewGCRA(d, "gcra", 1e6, 1<<20)
	sw, _ := limiter.NewSlidingWindow(d, "sw", 1<<30, time.Hour)
	flood, _ := limiter.NewCount(d, "flood", 1, time.Hour)
	exempt := []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8::/32")}
	refund := func(status int) bool { return status != 401 }
	clients := []net.Addr{
		&net.TCPAddr{IP: net.IPv4(198, 51, 100, 7), Port: 1234},
		&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::7"), Port: 1234},
	}
	for _, addr := range clients {
		base, _, _ := appAllocs(nil, fiber.Config{}, addr)
		noDelay := shmfiber.Options{Options: admit.Options{NoDelay: true}}
		for _, tc := range []struct {
			name   string
			l      limiter.Limiter
			o      shmfiber.Options
			status int
		}{
			{"Count", count, noDelay, 200}, {"Req", req, noDelay, 200}, {"GCRA", gcra, noDelay, 200}, {"SlidingWindow", sw, noDelay, 200},
			{"rejected", flood, noDelay, 429},
			{"dry run", flood, shmfiber.Options{Options: admit.Options{DryRun: true}}, 200},
			{"exempt", flood, shmfiber.Options{Options: admit.Options{Exempt: exempt}}, 200},
			{"next", flood, shmfiber.Options{Next: func(fiber.Ctx) bool { return true }}, 200},
			{"refund", count, shmfiber.Options{Options: admit.Options{Refund: refund}}, 200},
		} {
			mw, err := shmfiber.New(tc.l, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			n, status, _ := appAllocs(mw, fiber.Config{}, addr)
			if n > base {
				t.Errorf("%s, client %v: %v allocations a request, the app alone %v", tc.name, addr, n, base)
			}
			if status != tc.status {
				t.Errorf("%s, client %v: status %d, want %d", tc.name, addr, status, tc.status)
			}
		}
	}
}

// TestProxiedRequestAllocatesNothing: behind a proxy the app trusts, a
// request whose client comes from X-Forwarded-For allocates nothing beyond
// what the app alone does, for IPv4 and IPv6 clients.
func TestProxiedRequestAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	d, _ := zonetest.Open(t, dict.Options{})
	count, _ := limiter.NewCount(d, "count", 1<<40, time.Hour)
	proxy := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 1234}
	for _, xff := range []string{"203.0.113.9, 10.0.0.7", "2001:db8:1:2::9, 10.0.0.7"} {
		cfg := fiber.Config{
			TrustProxy:       true,
			ProxyHeader:      fiber.HeaderXForwardedFor,
			TrustProxyConfig: fiber.TrustProxyConfig{Proxies: []string{"10.0.0.0/8"}},
		}
		base, _, _ := appAllocs(nil, cfg, proxy, "X-Forwarded-For", xff)
		mw, err := shmfiber.New(count, shmfiber.Options{})
		if err != nil {
			t.Fatal(err)
		}
		n, _, client := appAllocs(mw, cfg, proxy, "X-Forwarded-For", xff)
		if n > base {
			t.Errorf("client behind %q: %v allocations a request, the app alone %v", xff, n, base)
		}
		if want := xff[:strings.IndexByte(xff, ',')]; client != want {
			t.Errorf("ClientAddr behind %q = %s, want %s", xff, client, want)
		}
	}
}

// appAllocs runs an app of cfg, behind mw unless mw is nil, on requests
// from addr with the header pairs kv. It returns the allocations of one
// request, its status, and the client that ClientAddr names in the
// handler.
func appAllocs(mw fiber.Handler, cfg fiber.Config, addr net.Addr, kv ...string) (float64, int, string) {
	app := fiber.New(cfg)
	if mw != nil {
		app.Use(mw)
	}
	var client string
	app.Get("/", func(c fiber.Ctx) error {
		a, err := shmfiber.ClientAddr(c)
		client = a.String()
		if err != nil {
			client = err.Error()
		}
		return c.SendString("ok")
	})
	h := app.Handler()
	var r fasthttp.Request
	r.SetRequestURI("/")
	for i := 0; i+1 < len(kv); i += 2 {
		r.Header.Set(kv[i], kv[i+1])
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&r, addr, nil) // allocates its fake connection
	run := func() {
		ctx.Response.Reset()
		h(&ctx)
	}
	run()
	run()
	return testing.AllocsPerRun(200, run), ctx.Response.StatusCode(), client
}

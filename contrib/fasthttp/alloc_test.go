package shmfasthttp_test

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/contrib/fasthttp"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/valyala/fasthttp"
)

// TestRequestAllocatesNothing: a request the middleware admits allocates
// nothing, headers included, for each kind of limiter and for IPv4 and
// IPv6 clients. A rejected request allocates nothing either. Req runs
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
	clients := []net.Addr{
		&net.TCPAddr{IP: net.IPv4(198, 51, 100, 7), Port: 1234},
		&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::7"), Port: 1234},
	}
	for _, tc := range []struct {
		name   string
		l      limiter.Limiter
		status int
	}{
		{"Count", count, 200}, {"Req", req, 200}, {"GCRA", gcra, 200}, {"SlidingWindow", sw, 200},
		{"rejected", flood, 429},
	} {
		h := wrap(t, tc.l, shmfasthttp.Options{Options: admit.Options{NoDelay: true}}, ok)
		for _, addr := range clients {
			n, ctx := requestAllocs(h, addr)
			if n != 0 {
				t.Errorf("%s, client %v: %v allocations a request, want 0", tc.name, addr, n)
			}
			if got := ctx.Response.StatusCode(); got != tc.status {
				t.Errorf("%s, client %v: status %d, want %d", tc.name, addr, got, tc.status)
			}
			if len(ctx.Response.Header.Peek("X-RateLimit-Remaining")) == 0 {
				t.Errorf("%s, client %v: no X-RateLimit-Remaining", tc.name, addr)
			}
		}
	}
}

// TestOptionsAllocateNothing: a dry-run rejection, an exempt request, a
// skipped one and a refunded one allocate nothing either.
func TestOptionsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	d, _ := zonetest.Open(t, dict.Options{})
	flood, _ := limiter.NewCount(d, "flood", 1, time.Hour)
	count, _ := limiter.NewCount(d, "count", 1<<40, time.Hour)
	exempt := []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}
	refund := func(status int) bool { return status != 401 }
	for _, tc := range []struct {
		name string
		l    limiter.Limiter
		o    shmfasthttp.Options
	}{
		{"dry run", flood, shmfasthttp.Options{Options: admit.Options{DryRun: true}}},
		{"exempt", flood, shmfasthttp.Options{Options: admit.Options{Exempt: exempt}}},
		{"next", flood, shmfasthttp.Options{Next: func(*fasthttp.RequestCtx) bool { return true }}},
		{"refund", count, shmfasthttp.Options{Options: admit.Options{Refund: refund}}},
	} {
		h := wrap(t, tc.l, tc.o, ok)
		n, ctx := requestAllocs(h, &net.TCPAddr{IP: net.IPv4(198, 51, 100, 7), Port: 1234})
		if n != 0 {
			t.Errorf("%s: %v allocations a request, want 0", tc.name, n)
		}
		if got := ctx.Response.StatusCode(); got != 200 {
			t.Errorf("%s: status %d, want 200", tc.name, got)
		}
	}
}

// TestProxiedRequestAllocatesNothing: a request from a trusted proxy, whose
// client comes from X-Forwarded-For, allocates nothing, for IPv4 and IPv6
// clients.
func TestProxiedRequestAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	d, _ := zonetest.Open(t, dict.Options{})
	count, _ := limiter.NewCount(d, "count", 1<<40, time.Hour)
	o := shmfasthttp.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	h := wrap(t, count, o, ok)
	proxy := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 1234}
	for _, xff := range []string{"203.0.113.9, 10.0.0.7", "2001:db8:1:2::9, 10.0.0.7"} {
		n, ctx := requestAllocs(h, proxy, "X-Forwarded-For", xff)
		if n != 0 {
			t.Errorf("client behind %q: %v allocations a request, want 0", xff, n)
		}
		a, err := shmfasthttp.ClientAddr(ctx, o.TrustedProxies)
		if want := netip.MustParseAddr(xff[:strings.IndexByte(xff, ',')]); err != nil || a != want {
			t.Errorf("ClientAddr behind %q = %v, %v; want %v", xff, a, err, want)
		}
	}
}

// requestAllocs runs h on a request from addr with the header pairs kv,
// and returns the allocations of one request and the last one's context.
func requestAllocs(h fasthttp.RequestHandler, addr net.Addr, kv ...string) (float64, *fasthttp.RequestCtx) {
	var r fasthttp.Request
	r.SetRequestURI("http://x/")
	for i := 0; i+1 < len(kv); i += 2 {
		r.Header.Set(kv[i], kv[i+1])
	}
	ctx := new(fasthttp.RequestCtx)
	ctx.Init(&r, addr, nil) // allocates its fake connection
	run := func() {
		ctx.Response.Reset()
		h(ctx)
	}
	run()
	run()
	return testing.AllocsPerRun(200, run), ctx
}

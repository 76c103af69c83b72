package shmfasthttp_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/shmzone/shmzone/contrib/fasthttp"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
	"github.com/valyala/fasthttp"
)

func ok(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }

func wrap(t *testing.T, l limiter.Limiter, o shmfasthttp.Options, h fasthttp.RequestHandler) fasthttp.RequestHandler {
	t.Helper()
	mw, err := shmfasthttp.New(l, o)
	if err != nil {
		t.Fatal(err)
	}
	return mw(h)
}

// serve runs h on a request from the peer addr with the header pairs kv
// and returns the response.
func serve(h fasthttp.RequestHandler, peer string, kv ...string) *fasthttp.Response {
	var req fasthttp.Request
	req.SetRequestURI("http://x/")
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, net.TCPAddrFromAddrPort(netip.MustParseAddrPort(peer)), nil)
	h(&ctx)
	var resp fasthttp.Response
	ctx.Response.CopyTo(&resp)
	return &resp
}

func hdr(r *fasthttp.Response, k string) string { return string(r.Header.Peek(k)) }

func TestMiddlewareHeaders(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{}) // its clock stands still
	l, err := limiter.NewCount(d, "per-client", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h := wrap(t, l, shmfasthttp.Options{Options: admit.Options{PolicyName: "api"}}, ok)
	tests := []struct {
		name                                          string
		status                                        int
		remaining, rateLimit, reset, retryAfter, body string
	}{
		{"first", 200, "1", `"api";r=1;t=60`, "60", "", "ok"},
		{"second", 200, "0", `"api";r=0;t=60`, "60", "", "ok"},
		{"third", 429, "0", `"api";r=0;t=60`, "60", "60", "Too Many Requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := serve(h, "192.0.2.1:1234")
			if r.StatusCode() != tt.status || string(r.Body()) != tt.body {
				t.Fatalf("status %d body %q, want %d %q", r.StatusCode(), r.Body(), tt.status, tt.body)
			}
			got := []string{hdr(r, "X-RateLimit-Remaining"), hdr(r, "RateLimit"), hdr(r, "X-RateLimit-Reset"), hdr(r, "Retry-After"), hdr(r, "RateLimit-Policy"), hdr(r, "X-RateLimit-Limit")}
			want := []string{tt.remaining, tt.rateLimit, tt.reset, tt.retryAfter, `"api";q=2;w=60`, "2"}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("remaining, RateLimit, reset, Retry-After, policy, limit = %q, want %q", got, want)
				}
			}
		})
	}
	// Another client has its own budget.
	if r := serve(h, "192.0.2.2:1234"); r.StatusCode() != 200 {
		t.Fatalf("another client: %d", r.StatusCode())
	}
}

func TestMiddlewareTrustedProxies(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	trusted, err := httplimit.ParsePrefixes("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := limiter.NewCount(d, "proxied", 1, time.Minute)
	h := wrap(t, l, shmfasthttp.Options{TrustedProxies: trusted}, ok)
	steps := []struct {
		peer, xff string
		status    int
	}{
		{"10.0.0.1:80", "192.0.2.1", 200},
		{"10.0.0.2:80", "192.0.2.2, 10.0.0.9", 200}, // the rightmost untrusted
		{"10.0.0.3:80", "192.0.2.1", 429},
		{"192.0.2.7:80", "192.0.2.3", 200}, // an untrusted peer's header is ignored
		{"192.0.2.7:80", "192.0.2.4", 429},
	}
	for i, s := range steps {
		if r := serve(h, s.peer, "X-Forwarded-For", s.xff); r.StatusCode() != s.status {
			t.Errorf("step %d: peer %s, X-Forwarded-For %q: %d, want %d", i, s.peer, s.xff, r.StatusCode(), s.status)
		}
	}
	if _, err := shmfasthttp.New(l, shmfasthttp.Options{TrustedProxies: []netip.Prefix{{}}}); !errors.Is(err, shmfasthttp.ErrBadProxy) {
		t.Errorf("New(invalid prefix) = %v, want ErrBadProxy", err)
	}
}

// TestMiddlewareIPv6Prefix: the default key folds IPv6 clients into the
// prefix IPv6Prefix names, and New refuses prefixes other than /64, /56
// and /48.
func TestMiddlewareIPv6Prefix(t *testing.T) {
	// Each client is limited to one request; the statuses of requests
	// from each peer in turn.
	peers := []string{
		"[2001:db8:1:100::1]:1",
		"[2001:db8:1:100::2]:1",  // the same /64
		"[2001:db8:1:1ff::1]:1",  // another /64, the same /56
		"[2001:db8:1:ff00::1]:1", // another /56, the same /48
		"[2001:db8:2:100::1]:1",  // another /48
		"192.0.2.1:1",            // IPv4: its own key
	}
	for _, tc := range []struct {
		bits  int
		codes []int
	}{
		{0, []int{200, 429, 200, 200, 200, 200}},
		{64, []int{200, 429, 200, 200, 200, 200}},
		{56, []int{200, 429, 429, 200, 200, 200}},
		{48, []int{200, 429, 429, 429, 200, 200}},
	} {
		t.Run(fmt.Sprint("/", tc.bits), func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			l, _ := limiter.NewCount(d, "v6", 1, time.Minute)
			h := wrap(t, l, shmfasthttp.Options{IPv6Prefix: tc.bits}, ok)
			for i, p := range peers {
				if r := serve(h, p); r.StatusCode() != tc.codes[i] {
					t.Errorf("request from %s = %d, want %d", p, r.StatusCode(), tc.codes[i])
				}
			}
		})
	}
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewCount(d, "v6", 1, time.Minute)
	for _, bits := range []int{-1, 32, 60, 128} {
		_, err := shmfasthttp.New(l, shmfasthttp.Options{IPv6Prefix: bits})
		if !errors.Is(err, shmfasthttp.ErrBadIPv6Prefix) || !errors.Is(err, httplimit.ErrBadIPv6Prefix) {
			t.Errorf("New(IPv6Prefix %d) = %v, want ErrBadIPv6Prefix", bits, err)
		}
	}
}

func TestMiddlewareOptions(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	newCount := func(name string, limit int64) *limiter.Count {
		l, err := limiter.NewCount(d, name, limit, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	const peer = "192.0.2.1:1"
	t.Run("Next skips", func(t *testing.T) {
		h := wrap(t, newCount("next", 1), shmfasthttp.Options{Next: func(ctx *fasthttp.RequestCtx) bool { return len(ctx.Request.Header.Peek("X-Skip")) > 0 }}, ok)
		for range 3 {
			if r := serve(h, peer, "X-Skip", "1"); r.StatusCode() != 200 || hdr(r, "RateLimit") != "" {
				t.Fatalf("skipped request: %d, RateLimit %q", r.StatusCode(), hdr(r, "RateLimit"))
			}
		}
		if r := serve(h, peer); r.StatusCode() != 200 {
			t.Fatalf("first counted: %d", r.StatusCode())
		}
		if r := serve(h, peer); r.StatusCode() != 429 {
			t.Fatalf("second counted: %d, want 429", r.StatusCode())
		}
	})
	t.Run("Key", func(t *testing.T) {
		h := wrap(t, newCount("key", 1), shmfasthttp.Options{Key: func(ctx *fasthttp.RequestCtx) (string, error) {
			return string(ctx.Request.Header.Peek("X-User")), nil
		}}, ok)
		for _, u := range []string{"alice", "bob"} {
			if r := serve(h, peer, "X-User", u); r.StatusCode() != 200 {
				t.Fatalf("%s: %d", u, r.StatusCode())
			}
		}
		if r := serve(h, peer, "X-User", "alice"); r.StatusCode() != 429 {
			t.Fatalf("alice again: %d, want 429", r.StatusCode())
		}
	})
	t.Run("Error", func(t *testing.T) {
		bad := func(ctx *fasthttp.RequestCtx) (string, error) { return "", errors.New("no user") }
		if r := serve(wrap(t, newCount("err", 1), shmfasthttp.Options{Key: bad}, ok), peer); r.StatusCode() != 500 {
			t.Fatalf("key error: %d, want 500", r.StatusCode())
		}
		var got error
		open := shmfasthttp.Options{
			Key:   func(ctx *fasthttp.RequestCtx) (string, error) { return "", nil }, // dict.ErrEmptyKey
			Error: func(ctx *fasthttp.RequestCtx, err error, next fasthttp.RequestHandler) { got = err; next(ctx) },
		}
		if r := serve(wrap(t, newCount("open", 1), open, ok), peer); r.StatusCode() != 200 || got == nil {
			t.Fatalf("fail open: %d, error %v", r.StatusCode(), got)
		}
	})
	t.Run("Rejected and NoHeaders", func(t *testing.T) {
		h := wrap(t, newCount("rej", 1), shmfasthttp.Options{
			Options:  admit.Options{NoHeaders: true},
			Rejected: func(ctx *fasthttp.RequestCtx, d limiter.Decision) { ctx.SetStatusCode(503) },
		}, ok)
		serve(h, peer)
		r := serve(h, peer)
		if r.StatusCode() != 503 {
			t.Fatalf("status %d, want 503", r.StatusCode())
		}
		for _, k := range []string{"RateLimit", "RateLimit-Policy", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if v := hdr(r, k); v != "" {
				t.Errorf("NoHeaders wrote %s: %q", k, v)
			}
		}
		if v := hdr(r, "Retry-After"); v != "60" {
			t.Errorf("Retry-After = %q, want 60", v)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		if _, err := shmfasthttp.New(nil, shmfasthttp.Options{}); !errors.Is(err, shmfasthttp.ErrNilLimiter) {
			t.Errorf("New(nil) = %v, want ErrNilLimiter", err)
		}
		if _, err := shmfasthttp.New(newCount("bad", 1), shmfasthttp.Options{Options: admit.Options{PolicyName: "é"}}); !errors.Is(err, shmfasthttp.ErrBadPolicy) {
			t.Errorf("New(bad name) = %v, want ErrBadPolicy", err)
		}
		if _, err := shmfasthttp.New(newCount("bad", 1), shmfasthttp.Options{Options: admit.Options{Policy: limiter.Policy{Window: -1}}}); !errors.Is(err, shmfasthttp.ErrBadPolicy) {
			t.Errorf("New(negative policy) = %v, want ErrBadPolicy", err)
		}
	})
}

func TestMiddlewareDelayAndConn(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{}) // its clock stands still
	req, err := limiter.NewReq(d, "req", 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	const peer = "192.0.2.1:1"
	var waited []time.Duration
	wait := func(ctx context.Context, d time.Duration) error { waited = append(waited, d); return nil }
	h := wrap(t, req, shmfasthttp.Options{Options: admit.Options{Wait: wait}}, ok)
	serve(h, peer)
	serve(h, peer)
	if len(waited) != 1 || waited[0] != time.Second {
		t.Fatalf("waited %v, want [1s]", waited)
	}
	serve(wrap(t, req, shmfasthttp.Options{Options: admit.Options{Wait: wait, NoDelay: true}}, ok), peer)
	if len(waited) != 1 {
		t.Fatalf("NoDelay waited: %v", waited)
	}
	cancelled := wrap(t, req, shmfasthttp.Options{Options: admit.Options{Wait: func(context.Context, time.Duration) error { return context.Canceled }}}, ok)
	before, _ := req.Incoming(context.Background(), "192.0.2.1", false)
	if r := serve(cancelled, peer); r.StatusCode() != 503 || hdr(r, "RateLimit") == "" {
		t.Fatalf("cancelled wait: %d, RateLimit %q; want 503 with the headers", r.StatusCode(), hdr(r, "RateLimit"))
	}
	after, _ := req.Incoming(context.Background(), "192.0.2.1", false)
	if after.State != before.State {
		t.Fatalf("cancelled wait left excess %v, want %v", after.State, before.State)
	}

	conn, err := limiter.NewConn(d, "conn", 1, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var inside limiter.Decision
	h = wrap(t, conn, shmfasthttp.Options{}, func(ctx *fasthttp.RequestCtx) {
		inside, _ = conn.Incoming(context.Background(), "192.0.2.1", false)
	})
	for i := range 3 {
		r := serve(h, peer)
		if r.StatusCode() != 200 {
			t.Fatalf("request %d: %d, want 200 (the previous one left)", i, r.StatusCode())
		}
		if inside.Allowed {
			t.Fatalf("request %d: a second connection was allowed while one was in", i)
		}
		if v := hdr(r, "RateLimit-Policy"); v != `"default";q=1;qu="concurrent-requests"` {
			t.Fatalf("RateLimit-Policy = %q", v)
		}
	}
}

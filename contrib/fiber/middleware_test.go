package shmfiber_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
	"github.com/valyala/fasthttp"
)

// newApp returns an app whose "/" answers "ok" behind the middleware of l
// with o; cfg configures the app.
func newApp(t *testing.T, l limiter.Limiter, o shmfiber.Options, cfg ...fiber.Config) *fiber.App {
	t.Helper()
	mw, err := shmfiber.New(l, o)
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(cfg...)
	app.Use(mw)
	app.Get("/", func(c fiber.Ctx) error { return c.SendString("ok") })
	return app
}

func do(t *testing.T, app *fiber.App, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("GET", "/", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := app.Test(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// xffStep is a request of forwarded: its X-Forwarded-For and the status
// it must get.
type xffStep struct {
	what, xff string
	want      int
}

// forwarded sends app a request per step, in order, and fails at the first
// whose status is not the step's.
func forwarded(t *testing.T, app *fiber.App, steps []xffStep) {
	t.Helper()
	for _, st := range steps {
		if r := do(t, app, "X-Forwarded-For", st.xff); r.StatusCode != st.want {
			t.Fatalf("%s (X-Forwarded-For %q): %d, want %d", st.what, st.xff, r.StatusCode, st.want)
		}
	}
}

func TestMiddlewareHeaders(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{}) // its clock stands still
	l, err := limiter.NewCount(d, "per-client", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	app := newApp(t, l, shmfiber.Options{Options: admit.Options{PolicyName: "api"}})
	tests := []struct {
		name       string
		status     int
		remaining  string
		rateLimit  string
		reset      string
		retryAfter string
	}{
		{"first", 200, "1", `"api";r=1;t=60`, "60", ""},
		{"second", 200, "0", `"api";r=0;t=60`, "60", ""},
		{"third", 429, "0", `"api";r=0;t=60`, "60", "60"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do(t, app)
			h := resp.Header
			got := []string{strconv.Itoa(resp.StatusCode), h.Get("X-RateLimit-Remaining"), h.Get("RateLimit"), h.Get("X-RateLimit-Reset"), h.Get("Retry-After")}
			want := []string{strconv.Itoa(tt.status), tt.remaining, tt.rateLimit, tt.reset, tt.retryAfter}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("status, remaining, RateLimit, reset, Retry-After = %q, want %q", got, want)
					break
				}
			}
			if p := h.Get("RateLimit-Policy"); p != `"api";q=2;w=60` {
				t.Errorf("RateLimit-Policy = %q", p)
			}
			if p := h.Get("X-RateLimit-Limit"); p != "2" {
				t.Errorf("X-RateLimit-Limit = %q", p)
			}
		})
	}
}

// The default key is ClientAddr, which follows the app's proxy settings: a
// TestMiddlewareIPv6Prefix: the default key folds IPv6 clients into the
// prefix IPv6Prefix names, and New refuses prefixes other than /64, /56
// and /48.
func TestMiddlewareIPv6Prefix(t *testing.T) {
	trusting := fiber.Config{
		TrustProxy:       true,
		ProxyHeader:      fiber.HeaderXForwardedFor,
		TrustProxyConfig: fiber.TrustProxyConfig{Proxies: []string{"0.0.0.0"}}, // app.Test's peer
	}
	// Each client is limited to one request; the statuses of requests
	// from each address in turn.
	addrs := []string{
		"2001:db8:1:100::1",
		"2001:db8:1:100::2",  // the same /64
		"2001:db8:1:1ff::1",  // another /64, the same /56
		"2001:db8:1:ff00::1", // another /56, the same /48
		"2001:db8:2:100::1",  // another /48
		"192.0.2.1",          // IPv4: its own key
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
			app := newApp(t, l, shmfiber.Options{IPv6Prefix: tc.bits}, trusting)
			for i, a := range addrs {
				if r := do(t, app, "X-Forwarded-For", a); r.StatusCode != tc.codes[i] {
					t.Errorf("request from %s = %d, want %d", a, r.StatusCode, tc.codes[i])
				}
			}
		})
	}
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewCount(d, "v6", 1, time.Minute)
	for _, bits := range []int{-1, 32, 60, 128} {
		_, err := shmfiber.New(l, shmfiber.Options{IPv6Prefix: bits})
		if !errors.Is(err, shmfiber.ErrBadIPv6Prefix) || !errors.Is(err, httplimit.ErrBadIPv6Prefix) {
			t.Errorf("New(IPv6Prefix %d) = %v, want ErrBadIPv6Prefix", bits, err)
		}
	}
}

// trusted peer's X-Forwarded-For names the client, its rightmost untrusted
// address; an untrusted peer's is ignored.
func TestMiddlewareKeyFollowsTrustProxy(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	trusting := fiber.Config{
		TrustProxy:       true,
		ProxyHeader:      fiber.HeaderXForwardedFor,
		TrustProxyConfig: fiber.TrustProxyConfig{Proxies: []string{"0.0.0.0", "10.0.0.0/8"}}, // app.Test's peer, a proxy behind it
	}
	untrusting := fiber.Config{ProxyHeader: fiber.HeaderXForwardedFor}
	for _, tc := range []struct {
		name   string
		cfg    fiber.Config
		second int // status of a second request from another forwarded client
	}{
		{"trusted", trusting, 200},
		{"untrusted", untrusting, 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := limiter.NewCount(d, tc.name, 1, time.Minute)
			app := newApp(t, l, shmfiber.Options{}, tc.cfg)
			forwarded(t, app, []xffStep{
				{"first request", "192.0.2.1", 200},
				{"second client", "192.0.2.2", tc.second},
				{"first client again", "192.0.2.1", 429},
				// A list: the client is its rightmost untrusted address.
				{"first client through two proxies", "192.0.2.1, 10.0.0.9", 429},
				{"first client with a forged first entry", "198.51.100.1, 192.0.2.1", 429},
			})
		})
	}
	t.Run("IPv6 by its /64", func(t *testing.T) {
		l, _ := limiter.NewCount(d, "ipv6", 1, time.Minute)
		app := newApp(t, l, shmfiber.Options{}, trusting)
		forwarded(t, app, []xffStep{
			{"first request", "2001:db8:1:2::1", 200},
			{"same /64", "2001:db8:1:2::2, 10.0.0.9", 429},
			{"another /64", "2001:db8:1:3::1", 200},
		})
	})
	t.Run("no address", func(t *testing.T) {
		l, _ := limiter.NewCount(d, "noaddr", 1, time.Minute)
		var got error
		app := newApp(t, l, shmfiber.Options{Error: func(c fiber.Ctx, err error) error { got = err; return c.SendStatus(500) }}, trusting)
		var req fasthttp.Request
		req.SetRequestURI("/")
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, &net.TCPAddr{}, nil) // a peer with no IP
		app.Handler()(&ctx)
		if code := ctx.Response.StatusCode(); code != 500 || !errors.Is(got, shmfiber.ErrNoClientAddr) {
			t.Fatalf("peer with no IP: %d, error %v; want 500 with ErrNoClientAddr", code, got)
		}
	})
}

// Behind a trusted proxy that appends the peer it saw to the client's
// X-Forwarded-For (nginx's $proxy_add_x_forwarded_for), the client writes
// every entry left of the proxy's: forging them must not buy it a new key,
// nor an error that a fail-open Error would let through.
func TestMiddlewareKeyIgnoresForgedForwardedFor(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	cfg := fiber.Config{
		TrustProxy:       true,
		ProxyHeader:      fiber.HeaderXForwardedFor,
		TrustProxyConfig: fiber.TrustProxyConfig{Proxies: []string{"0.0.0.0"}}, // app.Test's peer
	}
	for _, tc := range []struct {
		name  string
		forge func(i int) string
	}{
		{"other address", func(i int) string { return fmt.Sprintf("198.51.100.%d", i) }},
		{"no address", func(int) string { return "unknown" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := limiter.NewCount(d, tc.name, 1, time.Minute)
			failOpen := func(c fiber.Ctx, err error) error { return c.Next() }
			app := newApp(t, l, shmfiber.Options{Error: failOpen}, cfg)
			passed := 0
			for i := range 5 {
				xff := tc.forge(i) + ", 203.0.113.7"
				if r := do(t, app, "X-Forwarded-For", xff); r.StatusCode == 200 {
					passed++
				}
			}
			if passed != 1 {
				t.Errorf("one client forging X-Forwarded-For's first entry: %d of 5 passed a limit of 1, want 1", passed)
			}
		})
	}
}

func TestClientAddr(t *testing.T) {
	proxies := fiber.TrustProxyConfig{Proxies: []string{"0.0.0.0", "10.0.0.0/8", "192.0.2.200"}}
	tests := []struct {
		name string
		tpc  fiber.TrustProxyConfig
		xff  []string // X-Forwarded-For lines
		want string
	}{
		{"no header", proxies, nil, "0.0.0.0"},
		{"one address", proxies, []string{"203.0.113.7"}, "203.0.113.7"},
		{"forged first entry", proxies, []string{"198.51.100.1, 203.0.113.7"}, "203.0.113.7"},
		{"forged non-address", proxies, []string{"unknown, 203.0.113.7"}, "203.0.113.7"},
		{"through a trusted CIDR", proxies, []string{"203.0.113.7, 10.0.0.9"}, "203.0.113.7"},
		{"through a trusted address", proxies, []string{"203.0.113.7, 192.0.2.200"}, "203.0.113.7"},
		{"untrusted hop", proxies, []string{"203.0.113.7, 172.16.0.9"}, "172.16.0.9"},
		{"every hop trusted", proxies, []string{"10.0.0.8, 10.0.0.9"}, "10.0.0.8"},
		{"non-address behind a trusted hop", proxies, []string{"unknown, 10.0.0.9"}, "10.0.0.9"},
		{"non-address alone", proxies, []string{"unknown"}, "0.0.0.0"},
		{"two lines", proxies, []string{"198.51.100.1", "203.0.113.7"}, "203.0.113.7"},
		{"port and mapped", proxies, []string{"[::ffff:203.0.113.7]:443"}, "203.0.113.7"},
		{"IPv6", proxies, []string{"2001:db8::1, 10.0.0.9"}, "2001:db8::1"},
		{"Private", fiber.TrustProxyConfig{Proxies: []string{"0.0.0.0"}, Private: true}, []string{"203.0.113.7, 172.16.0.9"}, "203.0.113.7"},
		{"Loopback", fiber.TrustProxyConfig{Proxies: []string{"0.0.0.0"}, Loopback: true}, []string{"203.0.113.7, 127.0.0.2"}, "203.0.113.7"},
		{"LinkLocal", fiber.TrustProxyConfig{Proxies: []string{"0.0.0.0"}, LinkLocal: true}, []string{"203.0.113.7, fe80::1%eth0"}, "203.0.113.7"},
		{"untrusted peer", fiber.TrustProxyConfig{Proxies: []string{"10.0.0.0/8"}}, []string{"203.0.113.7"}, "0.0.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := fiber.New(fiber.Config{TrustProxy: true, ProxyHeader: fiber.HeaderXForwardedFor, TrustProxyConfig: tt.tpc})
			app.Get("/", func(c fiber.Ctx) error {
				a, err := shmfiber.ClientAddr(c)
				if err != nil {
					return err
				}
				return c.SendString(a.String())
			})
			req := httptest.NewRequest("GET", "/", nil)
			for _, v := range tt.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			resp, err := app.Test(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if got := string(body); resp.StatusCode != 200 || got != tt.want {
				t.Errorf("ClientAddr(X-Forwarded-For %q) = %d %q, want %s", tt.xff, resp.StatusCode, got, tt.want)
			}
		})
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
	t.Run("Next skips", func(t *testing.T) {
		app := newApp(t, newCount("next", 1), shmfiber.Options{Next: func(c fiber.Ctx) bool { return c.Get("X-Skip") != "" }})
		for range 3 {
			if r := do(t, app, "X-Skip", "1"); r.StatusCode != 200 || r.Header.Get("RateLimit") != "" {
				t.Fatalf("skipped request: %d, RateLimit %q", r.StatusCode, r.Header.Get("RateLimit"))
			}
		}
		if r := do(t, app); r.StatusCode != 200 {
			t.Fatalf("first counted request: %d", r.StatusCode)
		}
		if r := do(t, app); r.StatusCode != 429 {
			t.Fatalf("second counted request: %d, want 429", r.StatusCode)
		}
	})
	t.Run("Key", func(t *testing.T) {
		app := newApp(t, newCount("key", 1), shmfiber.Options{Key: func(c fiber.Ctx) (string, error) { return c.Get("X-User"), nil }})
		for _, u := range []string{"alice", "bob"} {
			if r := do(t, app, "X-User", u); r.StatusCode != 200 {
				t.Fatalf("%s: %d", u, r.StatusCode)
			}
		}
		if r := do(t, app, "X-User", "alice"); r.StatusCode != 429 {
			t.Fatalf("alice again: %d, want 429", r.StatusCode)
		}
	})
	t.Run("Key error", func(t *testing.T) {
		app := newApp(t, newCount("keyerr", 1), shmfiber.Options{Key: func(c fiber.Ctx) (string, error) { return "", errors.New("no user") }})
		if r := do(t, app); r.StatusCode != 500 {
			t.Fatalf("status %d, want 500", r.StatusCode)
		}
	})
	t.Run("Error fails open", func(t *testing.T) {
		var got error
		app := newApp(t, newCount("open", 1), shmfiber.Options{
			Key:   func(c fiber.Ctx) (string, error) { return "", nil }, // the empty key: dict.ErrEmptyKey
			Error: func(c fiber.Ctx, err error) error { got = err; return c.Next() },
		})
		if r := do(t, app); r.StatusCode != 200 || got == nil {
			t.Fatalf("status %d, error %v; want 200 through Error", r.StatusCode, got)
		}
	})
	t.Run("Rejected and NoHeaders", func(t *testing.T) {
		app := newApp(t, newCount("rej", 1), shmfiber.Options{
			Options:  admit.Options{NoHeaders: true},
			Rejected: func(c fiber.Ctx, d limiter.Decision) error { return c.Status(503).SendString("busy") },
		})
		do(t, app)
		r := do(t, app)
		if r.StatusCode != 503 {
			t.Fatalf("status %d, want 503", r.StatusCode)
		}
		for _, h := range []string{"RateLimit", "RateLimit-Policy", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if v := r.Header.Get(h); v != "" {
				t.Errorf("NoHeaders wrote %s: %q", h, v)
			}
		}
		if v := r.Header.Get("Retry-After"); v != "60" {
			t.Errorf("Retry-After = %q, want 60", v)
		}
	})
	t.Run("fixed Policy", func(t *testing.T) {
		app := newApp(t, newCount("pol", 5), shmfiber.Options{Options: admit.Options{Policy: limiter.Policy{Limit: 100, Window: time.Hour}}})
		r := do(t, app)
		if v := r.Header.Get("RateLimit-Policy"); v != `"default";q=100;w=3600` {
			t.Errorf("RateLimit-Policy = %q", v)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		if _, err := shmfiber.New(nil, shmfiber.Options{}); !errors.Is(err, shmfiber.ErrNilLimiter) {
			t.Errorf("New(nil) = %v, want ErrNilLimiter", err)
		}
		if _, err := shmfiber.New(newCount("bad", 1), shmfiber.Options{Options: admit.Options{PolicyName: "a\nb"}}); !errors.Is(err, shmfiber.ErrBadPolicy) {
			t.Errorf("New(bad name) = %v, want ErrBadPolicy", err)
		}
		if _, err := shmfiber.New(newCount("bad", 1), shmfiber.Options{Options: admit.Options{Policy: limiter.Policy{Limit: -1}}}); !errors.Is(err, shmfiber.ErrBadPolicy) {
			t.Errorf("New(negative policy) = %v, want ErrBadPolicy", err)
		}
	})
}

// A Req's delay is waited out through Wait, or not with NoDelay; a Conn's
// request is left when the handler returns.
func TestMiddlewareDelayAndConn(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{}) // its clock stands still
	req, err := limiter.NewReq(d, "req", 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	var waited []time.Duration
	wait := func(ctx context.Context, d time.Duration) error { waited = append(waited, d); return nil }
	app := newApp(t, req, shmfiber.Options{Options: admit.Options{Wait: wait}})
	do(t, app)
	do(t, app)
	if len(waited) != 1 || waited[0] != time.Second {
		t.Fatalf("waited %v, want [1s]", waited)
	}
	app = newApp(t, req, shmfiber.Options{Options: admit.Options{Wait: wait, NoDelay: true}})
	do(t, app)
	if len(waited) != 1 {
		t.Fatalf("NoDelay waited: %v", waited)
	}
	// A cancelled wait gives the request up and uncounts it.
	app = newApp(t, req, shmfiber.Options{Options: admit.Options{Wait: func(ctx context.Context, d time.Duration) error { return context.Canceled }}})
	before, _ := req.Incoming(context.Background(), "0.0.0.0", false)
	if r := do(t, app); r.StatusCode != 503 {
		t.Fatalf("cancelled wait: %d, want 503", r.StatusCode)
	}
	after, _ := req.Incoming(context.Background(), "0.0.0.0", false)
	if after.State != before.State {
		t.Fatalf("cancelled wait left excess %v, want %v", after.State, before.State)
	}

	conn, err := limiter.NewConn(d, "conn", 1, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := shmfiber.New(conn, shmfiber.Options{})
	if err != nil {
		t.Fatal(err)
	}
	capp := fiber.New()
	capp.Use(mw)
	var inside limiter.Decision
	capp.Get("/", func(c fiber.Ctx) error {
		inside, _ = conn.Incoming(context.Background(), "0.0.0.0", false)
		return c.SendString("ok")
	})
	for i := range 3 {
		r, err := capp.Test(httptest.NewRequest("GET", "/", nil))
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode != 200 {
			t.Fatalf("request %d: %d, want 200 (the previous one left)", i, r.StatusCode)
		}
		if inside.Allowed {
			t.Fatalf("request %d: a second connection was allowed while one was in", i)
		}
		if v := r.Header.Get("RateLimit-Policy"); v != `"default";q=1;qu="concurrent-requests"` {
			t.Fatalf("RateLimit-Policy = %q", v)
		}
	}
}

// TestMiddlewareTwoApps: one middleware in two apps follows each app's own
// proxy settings, request by request.
func TestMiddlewareTwoApps(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewCount(d, "two", 1, time.Minute)
	mw, err := shmfiber.New(l, shmfiber.Options{})
	if err != nil {
		t.Fatal(err)
	}
	app := func(cfg fiber.Config) *fiber.App {
		a := fiber.New(cfg)
		a.Use(mw)
		a.Get("/", func(c fiber.Ctx) error { return c.SendString("ok") })
		return a
	}
	trusting := app(fiber.Config{
		TrustProxy:       true,
		ProxyHeader:      fiber.HeaderXForwardedFor,
		TrustProxyConfig: fiber.TrustProxyConfig{Proxies: []string{"0.0.0.0"}}, // app.Test's peer
	})
	untrusting := app(fiber.Config{ProxyHeader: fiber.HeaderXForwardedFor})
	for i, step := range []struct {
		app  *fiber.App
		xff  string
		want int
	}{
		{trusting, "192.0.2.1", 200},
		{untrusting, "192.0.2.2", 200}, // keyed by the peer, 0.0.0.0
		{trusting, "192.0.2.2", 200},
		{untrusting, "192.0.2.3", 429},
		{trusting, "192.0.2.3", 200},
		{trusting, "192.0.2.1", 429},
	} {
		if r := do(t, step.app, "X-Forwarded-For", step.xff); r.StatusCode != step.want {
			t.Errorf("request %d, X-Forwarded-For %s = %d, want %d", i+1, step.xff, r.StatusCode, step.want)
		}
	}
}

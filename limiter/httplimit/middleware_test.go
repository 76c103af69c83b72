package httplimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
)

// okHandler answers 200 "ok" and counts its calls.
func okHandler(calls *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.WriteString(w, "ok")
	})
}

// serve runs one request from remote through h.
func serve(h http.Handler, remote string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = remote
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func mustNew(t *testing.T, l limiter.Limiter, o Options) func(http.Handler) http.Handler {
	t.Helper()
	mw, err := New(l, o)
	if err != nil {
		t.Fatal(err)
	}
	return mw
}

func TestHeaders(t *testing.T) {
	dc, clk := zonetest.Open(t, dict.Options{})
	dr, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
	dn, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
	count, _ := limiter.NewCount(dc, "t", 2, time.Minute)
	req, _ := limiter.NewReq(dr, "t", 1, 1)
	conn, _ := limiter.NewConn(dn, "t", 3, 1, time.Second)
	type want struct {
		code                          int
		policy, rl, limit, rem, reset string
		retry                         string
	}
	tests := []struct {
		name  string
		l     limiter.Limiter
		o     Options
		at    int64 // ms after the clock's start
		want  want
		after func(t *testing.T)
	}{
		{"count/1", count, Options{}, 0, want{200, `"default";q=2;w=60`, `"default";r=1;t=60`, "2", "1", "60", ""}, nil},
		{"count/2", count, Options{}, 20000, want{200, `"default";q=2;w=60`, `"default";r=0;t=40`, "2", "0", "40", ""}, nil},
		{"count/rejected", count, Options{}, 20500, want{429, `"default";q=2;w=60`, `"default";r=0;t=40`, "2", "0", "40", "40"}, nil},
		{"req/1", req, Options{Options: admit.Options{PolicyName: "per-ip"}}, 0, want{200, `"per-ip";q=2;w=2`, `"per-ip";r=1;t=1`, "2", "1", "1", ""}, nil},
		{"req/2", req, Options{Options: admit.Options{PolicyName: "per-ip"}}, 0, want{200, `"per-ip";q=2;w=2`, `"per-ip";r=0;t=2`, "2", "0", "2", ""}, nil},
		{"req/rejected", req, Options{Options: admit.Options{PolicyName: "per-ip"}}, 500, want{429, `"per-ip";q=2;w=2`, `"per-ip";r=0;t=1`, "2", "0", "2", "1"}, nil},
		{"fixed policy", req, Options{Options: admit.Options{Policy: limiter.Policy{Limit: 60, Window: time.Minute}}}, 3000, want{200, `"default";q=60;w=60`, `"default";r=1;t=1`, "60", "1", "1", ""}, nil},
		{"conn", conn, Options{}, 0, want{200, `"default";q=4;qu="concurrent-requests"`, `"default";r=3`, "4", "3", "0", ""}, func(t *testing.T) {
			if v, _, err := dn.Get("conn|t|198.51.100.1"); err != nil || v.Int() != 0 {
				t.Errorf("conn after the request = %v, %v; want 0: Leaving was not called", v, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.SetMilli(tt.at)
			var calls atomic.Int64
			o := tt.o
			o.Wait = func(context.Context, time.Duration) error { return nil }
			w := serve(mustNew(t, tt.l, o)(okHandler(&calls)), "198.51.100.1:4711")
			h := w.Header()
			got := want{w.Code, h.Get("RateLimit-Policy"), h.Get("RateLimit"), h.Get("X-RateLimit-Limit"),
				h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Reset"), h.Get("Retry-After")}
			if got != tt.want {
				t.Errorf("response\n got %+v\nwant %+v", got, tt.want)
			}
			if wantCalls := int64(0); tt.want.code == 200 {
				if calls.Load() != 1 {
					t.Errorf("handler called %d times, want 1", calls.Load())
				}
			} else if calls.Load() != wantCalls {
				t.Errorf("handler called for a rejected request")
			}
			if tt.want.code == 429 && (w.Body.String() != "Too Many Requests\n" ||
				h.Get("Content-Type") != "text/plain; charset=utf-8" || h.Get("X-Content-Type-Options") != "nosniff") {
				t.Errorf("429 body = %q, headers %v; want http.Error's", w.Body.String(), h)
			}
			if tt.after != nil {
				tt.after(t)
			}
		})
	}
	t.Run("NoHeaders", func(t *testing.T) {
		d, _ := zonetest.Open(t, dict.Options{})
		l, _ := limiter.NewCount(d, "t", 1, time.Minute)
		h := mustNew(t, l, Options{Options: admit.Options{NoHeaders: true}})(okHandler(new(atomic.Int64)))
		for i, code := range []int{200, 429} {
			w := serve(h, "198.51.100.1:1")
			if w.Code != code || w.Header().Get("RateLimit") != "" || w.Header().Get("X-RateLimit-Remaining") != "" {
				t.Errorf("request %d: %d %v, want %d without rate limit headers", i+1, w.Code, w.Header(), code)
			}
			if code == 429 && w.Header().Get("Retry-After") != "60" {
				t.Errorf("Retry-After = %q, want 60", w.Header().Get("Retry-After"))
			}
		}
	})
}

func TestRejectedHandler(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewGCRA(d, "t", 1, 1)
	var got limiter.Decision
	h := mustNew(t, l, Options{Rejected: func(w http.ResponseWriter, r *http.Request, d limiter.Decision) {
		got = d
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"title":"slow down"}`)
	}})(okHandler(new(atomic.Int64)))
	serve(h, "198.51.100.1:1")
	w := serve(h, "198.51.100.1:1")
	if w.Code != 503 || w.Body.String() != `{"title":"slow down"}` || w.Header().Get("Retry-After") != "1" {
		t.Errorf("rejection = %d %q Retry-After %q; want the handler's 503 and Retry-After 1", w.Code, w.Body.String(), w.Header().Get("Retry-After"))
	}
	if got.Allowed || got.RetryAfter != time.Second {
		t.Errorf("handler got %+v, want the rejecting decision", got)
	}
}

func TestDelay(t *testing.T) {
	for _, noDelay := range []bool{false, true} {
		name := map[bool]string{false: "delay", true: "nodelay"}[noDelay]
		t.Run(name, func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			l, _ := limiter.NewReq(d, "t", 2, 2)
			var waited []time.Duration
			var calls atomic.Int64
			h := mustNew(t, l, Options{
				Options: admit.Options{NoDelay: noDelay, Wait: func(ctx context.Context, d time.Duration) error {
					waited = append(waited, d)
					return nil
				}},
			})(okHandler(&calls))
			for range 3 {
				if w := serve(h, "198.51.100.1:1"); w.Code != 200 {
					t.Fatalf("code %d, want 200", w.Code)
				}
			}
			want := []time.Duration{500 * time.Millisecond, time.Second}
			if noDelay {
				want = nil
			}
			if len(waited) != len(want) || (len(want) > 0 && (waited[0] != want[0] || waited[1] != want[1])) {
				t.Errorf("waited %v, want %v", waited, want)
			}
			if calls.Load() != 3 {
				t.Errorf("handler called %d times, want 3", calls.Load())
			}
		})
	}
}

// TestDelayCancelled: a request whose context ends while it waits out its
// delay goes no further, and the limiter gets its request back.
func TestDelayCancelled(t *testing.T) {
	for _, kind := range []string{"req", "conn"} {
		t.Run(kind, func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			var l limiter.Limiter
			if kind == "req" {
				l, _ = limiter.NewReq(d, "t", 0.001, 10) // the second request waits 1,000 s
			} else {
				l, _ = limiter.NewConn(d, "t", 1, 5, time.Hour) // the second waits an hour
			}
			waiting := make(chan struct{}, 1)
			var calls atomic.Int64
			h := mustNew(t, l, Options{
				Options: admit.Options{Wait: func(ctx context.Context, dl time.Duration) error {
					waiting <- struct{}{}
					return admit.Sleep(ctx, dl) // the real wait
				}},
			})
			held, entered := make(chan struct{}), make(chan struct{})
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					close(entered)
					if kind == "conn" {
						<-held // keep the first request in flight
					}
				}
			})
			handler := h(next)
			first := make(chan struct{})
			go func() {
				defer close(first)
				serve(handler, "198.51.100.1:1")
			}()
			<-entered
			ctx, cancel := context.WithCancel(context.Background())
			r := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
			r.RemoteAddr = "198.51.100.1:2"
			w := httptest.NewRecorder()
			done := make(chan struct{})
			go func() { defer close(done); handler.ServeHTTP(w, r) }()
			select {
			case <-waiting:
			case <-time.After(time.Minute):
				t.Fatal("the second request never waited")
			}
			cancel()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("the wait did not end with the request's context")
			}
			close(held)
			<-first
			if w.Code != http.StatusServiceUnavailable || calls.Load() != 1 {
				t.Errorf("cancelled request: code %d, handler calls %d; want 503 and 1", w.Code, calls.Load())
			}
			// Nothing of the cancelled request is left: a dry run sees one
			// request's worth (req: the first request's excess; conn: none in
			// flight, plus itself).
			dec, err := l.Incoming(context.Background(), "198.51.100.1", false)
			if err != nil || !dec.Allowed || dec.State != map[string]float64{"req": 1, "conn": 1}[kind] {
				t.Errorf("after the cancel: %+v, %v; want state 1", dec, err)
			}
		})
	}
}

func TestSpoofedXFF(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewCount(d, "t", 1, time.Minute)
	trusted, _ := ParsePrefixes("10.0.0.0/8")
	h := mustNew(t, l, Options{TrustedProxies: trusted})(okHandler(new(atomic.Int64)))
	// An untrusted peer that sends a fresh X-Forwarded-For each time is
	// still one client.
	if w := serve(h, "198.51.100.1:1", "X-Forwarded-For", "203.0.113.1"); w.Code != 200 {
		t.Fatalf("first request: %d", w.Code)
	}
	if w := serve(h, "198.51.100.1:1", "X-Forwarded-For", "203.0.113.2"); w.Code != 429 {
		t.Errorf("spoofed X-Forwarded-For from an untrusted peer: %d, want 429", w.Code)
	}
	// Behind the trusted proxy, clients are told apart, and a prepended
	// address changes nothing.
	for i, c := range []struct {
		xff  string
		code int
	}{{"203.0.113.1", 200}, {"203.0.113.2", 200}, {"6.6.6.6, 203.0.113.2", 429}} {
		if w := serve(h, "10.0.0.1:1", "X-Forwarded-For", c.xff); w.Code != c.code {
			t.Errorf("proxied request %d (XFF %q): %d, want %d", i+1, c.xff, w.Code, c.code)
		}
	}
	// IPv6 clients are keyed by /64.
	if w := serve(h, "[2001:db8:1:2::1]:1"); w.Code != 200 {
		t.Fatalf("IPv6: %d", w.Code)
	}
	if w := serve(h, "[2001:db8:1:2::ffff]:1"); w.Code != 429 {
		t.Errorf("another address of the same /64: %d, want 429", w.Code)
	}
}

// TestIPv6Prefix: the default key folds IPv6 clients into the prefix
// IPv6Prefix names, so that a flood from one /48 is one client at /48,
// while IPv4 clients stay one key each.
func TestIPv6Prefix(t *testing.T) {
	tests := []struct {
		bits int
		// codes of requests from each address in turn, each limited to one
		codes []int
	}{
		{0, []int{200, 429, 200, 200, 200, 200}},
		{64, []int{200, 429, 200, 200, 200, 200}},
		{56, []int{200, 429, 429, 200, 200, 200}},
		{48, []int{200, 429, 429, 429, 200, 200}},
	}
	addrs := []string{
		"[2001:db8:1:100::1]:1",
		"[2001:db8:1:100::2]:1",  // the same /64
		"[2001:db8:1:1ff::1]:1",  // another /64, the same /56
		"[2001:db8:1:ff00::1]:1", // another /56, the same /48
		"[2001:db8:2:100::1]:1",  // another /48
		"198.51.100.1:1",         // IPv4: its own key
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("/", tt.bits), func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			l, _ := limiter.NewCount(d, "t", 1, time.Minute)
			h := mustNew(t, l, Options{IPv6Prefix: tt.bits})(okHandler(new(atomic.Int64)))
			for i, a := range addrs {
				if w := serve(h, a); w.Code != tt.codes[i] {
					t.Errorf("request from %s = %d, want %d", a, w.Code, tt.codes[i])
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewReq(d, "t", 1, 1)
	d.Set("req|t|198.51.100.1", dict.Int(1), 0, 0) // under the Req's key, not a Req's state: ErrAbused
	var calls atomic.Int64
	h := mustNew(t, l, Options{})(okHandler(&calls))
	if w := serve(h, "198.51.100.1:1"); w.Code != 500 || calls.Load() != 0 {
		t.Errorf("limiter error: %d, handler calls %d; want 500 and none", w.Code, calls.Load())
	}
	if w := serve(h, "@"); w.Code != 500 {
		t.Errorf("no client address: %d, want 500", w.Code)
	}
	var gotErr error
	failOpen := mustNew(t, l, Options{Error: func(w http.ResponseWriter, r *http.Request, err error) {
		gotErr = err
		okHandler(&calls).ServeHTTP(w, r)
	}})(okHandler(&calls))
	if w := serve(failOpen, "198.51.100.1:1"); w.Code != 200 || !errors.Is(gotErr, limiter.ErrAbused) || !errors.Is(gotErr, limiter.ErrBadState) {
		t.Errorf("fail open: %d, %v; want 200 and ErrAbused, a bad state", w.Code, gotErr)
	}
	// A state of the limiter's kind that no limiter writes fails too.
	count, _ := limiter.NewCount(d, "t", 10, time.Minute)
	d.Set("count|t|198.51.100.2", dict.Float(math.NaN()), 0, 0) // under the Count's key
	var badCalls atomic.Int64
	if w := serve(mustNew(t, count, Options{})(okHandler(&badCalls)), "198.51.100.2:1"); w.Code != 500 || badCalls.Load() != 0 {
		t.Errorf("bad state: %d, handler calls %d; want 500 and none", w.Code, badCalls.Load())
	}
	keyErr := errors.New("no api key")
	h = mustNew(t, l, Options{Key: func(*http.Request) (string, error) { return "", keyErr }, Error: func(w http.ResponseWriter, r *http.Request, err error) {
		gotErr = err
		w.WriteHeader(http.StatusUnauthorized)
	}})(okHandler(&calls))
	if w := serve(h, "198.51.100.1:1"); w.Code != 401 || gotErr != keyErr {
		t.Errorf("key error: %d, %v; want the Error handler's 401", w.Code, gotErr)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewReq(d, "t", 1, 1)
	tests := []struct {
		name string
		l    limiter.Limiter
		o    Options
		err  error
	}{
		{"nil limiter", nil, Options{}, ErrNilLimiter},
		{"invalid prefix", l, Options{TrustedProxies: make([]netip.Prefix, 1)}, ErrBadProxy},
		{"name with a newline", l, Options{Options: admit.Options{PolicyName: "a\nb"}}, ErrBadPolicy},
		{"name not ASCII", l, Options{Options: admit.Options{PolicyName: "día"}}, ErrBadPolicy},
		{"negative policy", l, Options{Options: admit.Options{Policy: limiter.Policy{Limit: -1}}}, ErrBadPolicy},
		{"IPv6 prefix /32", l, Options{IPv6Prefix: 32}, ErrBadIPv6Prefix},
		{"IPv6 prefix /60", l, Options{IPv6Prefix: 60}, ErrBadIPv6Prefix},
		{"IPv6 prefix /128", l, Options{IPv6Prefix: 128}, ErrBadIPv6Prefix},
		{"IPv6 prefix -64", l, Options{IPv6Prefix: -64}, ErrBadIPv6Prefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.l, tt.o); !errors.Is(err, tt.err) {
				t.Errorf("New = %v, want %v", err, tt.err)
			}
		})
	}
	mw, err := New(l, Options{Options: admit.Options{PolicyName: `a "b" \c`}})
	if err != nil {
		t.Fatal(err)
	}
	w := serve(mw(okHandler(new(atomic.Int64))), "198.51.100.9:1")
	if got := w.Header().Get("RateLimit"); !strings.HasPrefix(got, `"a \"b\" \\c";r=`) {
		t.Errorf("RateLimit with a quoted name = %q", got)
	}
}

package main

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/httplimit"
)

// The global limit rejects with 429 once all clients together reach it, a
// request it rejects is not counted by the per-client limit, and /metrics
// shows its decisions.
func TestServeGlobalHandler(t *testing.T) {
	r := testutil.StartRedis(t)
	d, err := dict.Open(filepath.Join(t.TempDir(), "g.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// An hour's window: the test does not cross into the next one.
	c := serveConfig{NoDelay: true, Redis: r.Addr, GlobalLimit: 3, GlobalWindow: time.Hour,
		GlobalInterval: 10 * time.Millisecond, RedisPolicy: "open", RedisPrefix: "t"}
	g, err := serveOpenGlobal(c, d, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	// Per client: one request now and one more (burst 1), then one a minute.
	local, err := limiter.NewReq(d, 1.0/60, 1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := serveHandler(c, d, newServeLimits(local, g))
	if err != nil {
		t.Fatal(err)
	}
	get := func(client, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "http://x"+path, nil)
		req.RemoteAddr = client + ":1234"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	const a, b = "192.0.2.1", "192.0.2.2"
	for i, step := range []struct {
		client string
		code   int
	}{
		{a, 200}, {a, 200}, // a's burst
		{a, 429}, // a's local limit; the global one is not asked
		{b, 200}, // the global limit's third
		{b, 429}, // the global limit; b keeps the rest of its local burst
	} {
		if rec := get(step.client, "/"); rec.Code != step.code {
			t.Fatalf("request %d from %s = %d, want %d", i, step.client, rec.Code, step.code)
		}
	}
	dec, err := local.Incoming(context.Background(), httplimit.AddrKey(netip.MustParseAddr(b)), false)
	if err != nil || !dec.Allowed {
		t.Errorf("%s's local limit after the global rejection = %+v, %v; want its burst left", b, dec, err)
	}

	body := get(a, "/metrics").Body.String()
	for _, want := range []string{
		`worker_serve_requests_total{result="allowed"} 3`,
		`worker_serve_requests_total{result="rejected"} 2`,
		`worker_serve_global_requests_total{result="allowed"} 3`,
		`worker_serve_global_requests_total{result="rejected"} 1`,
		"worker_serve_global_fallbacks_total 0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	// The flush loop reaches Redis.
	if !serveWaitFor(2*time.Second, func() bool { return g.flushes.Load() > 0 && g.t.Stats().Calls > 0 }) {
		t.Errorf("no flush reached Redis: %d flushes, %+v", g.flushes.Load(), g.t.Stats())
	}
}

// While Redis is down the global limit decides by -redis-policy: open
// lets requests through, closed answers 429; the flushing child logs when
// Redis fails and when it answers again, and /metrics counts the fallbacks.
func TestServeGlobalRedisFails(t *testing.T) {
	for _, tc := range []struct {
		policy string
		code   int
	}{{"open", 200}, {"closed", 429}} {
		t.Run("policy="+tc.policy, func(t *testing.T) {
			r := testutil.StartRedis(t)
			d, err := dict.Open(filepath.Join(t.TempDir(), "g.zone"), dict.Options{Size: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			c := serveConfig{NoDelay: true, Redis: r.Addr, GlobalLimit: 1000, GlobalWindow: time.Hour,
				GlobalInterval: 10 * time.Millisecond, RedisPolicy: tc.policy, RedisPrefix: "t"}
			logs := &serveBuffer{}
			g, err := serveOpenGlobal(c, d, logs)
			if err != nil {
				t.Fatal(err)
			}
			defer g.close()
			local, err := limiter.NewReq(d, 1000, 1000)
			if err != nil {
				t.Fatal(err)
			}
			h, err := serveHandler(c, d, newServeLimits(local, g))
			if err != nil {
				t.Fatal(err)
			}
			get := func(path string) *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "http://x"+path, nil))
				return rec
			}
			// A flush reaches Redis only for keys with requests.
			if rec := get("/"); rec.Code != 200 {
				t.Fatalf("request = %d, want 200", rec.Code)
			}
			if !serveWaitFor(2*time.Second, func() bool { return g.t.Stats().Calls > 0 }) {
				t.Fatal("no flush reached Redis")
			}
			r.Kill()
			if !serveWaitFor(2*time.Second, func() bool { return strings.Contains(logs.String(), "-redis-policy "+tc.policy) }) {
				t.Fatalf("no log of the failure: %q", logs)
			}
			if rec := get("/"); rec.Code != tc.code {
				t.Errorf("request while Redis is down = %d, want %d", rec.Code, tc.code)
			}
			if m := get("/metrics").Body.String(); !strings.Contains(m, "worker_serve_global_fallbacks_total 1\n") {
				t.Errorf("metrics lack the fallback:\n%s", m)
			}
			r.Restart()
			if !serveWaitFor(2*time.Second, func() bool { return strings.Contains(logs.String(), "answers again") }) {
				t.Fatalf("no log of the recovery: %q", logs)
			}
			if rec := get("/"); rec.Code != 200 {
				t.Errorf("request once Redis is back = %d, want 200", rec.Code)
			}
			t.Logf("log:\n%s", logs)
		})
	}
}

// Two hosts (two masters, each with its own zone and 2 children) share a
// global limit of 20 r/s through one Redis, under a generous per-client
// limit: together they admit 20 a second plus at most the overshoot Tiered
// documents, where each alone would admit all 200 r/s.
func TestServeGlobalLimit(t *testing.T) {
	t.Parallel()
	const (
		limit    = 20
		interval = 20 * time.Millisecond
		hosts    = 2
		hostRate = 100 // requests a second sent to each host
		load     = 2 * time.Second
	)
	r := testutil.StartRedis(t)
	args := []string{"-rate", "1000r/s", "-burst", "100", "-nodelay",
		"-redis", r.Addr, "-global-rate", strconv.Itoa(limit) + "r/s", "-global-interval", interval.String()}
	var ss []*serveTestServer
	for range hosts {
		ss = append(ss, launchServe(t, 2, args...))
	}
	for _, s := range ss {
		s.waitReady(t)
	}
	res := make([]*serveLoadResult, hosts)
	var wg sync.WaitGroup
	start := time.Now()
	for i, s := range ss {
		wg.Add(1)
		go func() { defer wg.Done(); res[i] = serveLoad("http://"+s.addr+"/", hostRate, load) }()
	}
	wg.Wait()
	end := time.Now()

	var ok, failed int
	var answers []serveAnswer
	for i, rs := range res {
		t.Logf("host %d, 2 children, global limit %dr/s, %d r/s for %v: %v", i, limit, hostRate, load, rs)
		ok += rs.ok
		failed += rs.failed
		answers = append(answers, rs.answers...)
	}
	// The windows are whole seconds of the clock: the load touches first to
	// last.
	first, last := start.Unix(), end.Unix()
	touched := last - first + 1
	// Tiered: in a window the hosts admit at most limit + 2·hosts·rate·interval,
	// rate being the most one host admits a second.
	over := 2 * hosts * hostRate * interval.Seconds()
	most := float64(touched) * (limit + over)
	// And a host never rejects below the global limit it knows of, which is
	// at most the true one: of the requests decided in a window, at least
	// limit are admitted, or all of them. A request sent and answered within
	// one second was decided in it.
	within := map[int64]int{}
	for _, a := range answers {
		if w := a.sent.Unix(); a.ended.Unix() == w {
			within[w]++
		}
	}
	least := 0
	for _, n := range within {
		least += min(n, limit)
	}
	t.Logf("accepted %d over %d windows: want %d to %v", ok, touched, least, math.Floor(most))
	if failed != 0 {
		t.Errorf("%d requests failed", failed)
	}
	if float64(ok) > most || ok < least {
		t.Errorf("accepted %d, want %d to %v", ok, least, math.Floor(most))
	}
	m := serveMetricsText(t, ss[0].addr)
	if !strings.Contains(m, `worker_serve_global_requests_total{result="rejected"}`) {
		t.Errorf("metrics lack the global decisions:\n%s", m)
	}
}

// serveMetricsText reads the /metrics of a child, over a new connection:
// with more than one child, any of them may answer.
func serveMetricsText(t *testing.T, addr string) string {
	t.Helper()
	c := &http.Client{Timeout: serveHang, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

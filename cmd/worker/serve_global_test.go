package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
	local, err := limiter.NewReq(d, "local", 1.0/60, 1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := serveHandler(context.Background(), c, d, newServeLimits(local, g))
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
		"worker_serve_global_unlisted_total 0\n",
		"worker_serve_global_relisted_total 0\n",
		// The per-client limit's full-zone counts: a zone with room.
		"\nworker_serve_limiter_forcible_total 0\n",
		"\nworker_serve_limiter_retries_total 0\n",
		"\nworker_serve_limiter_evicted_total 0\n",
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
			local, err := limiter.NewReq(d, "local", 1000, 1000)
			if err != nil {
				t.Fatal(err)
			}
			h, err := serveHandler(context.Background(), c, d, newServeLimits(local, g))
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
			// The host turns to the policy once its flushes have failed as
			// Tiered judges (two in a row, over 5 intervals and the
			// timeout); until then its requests are decided in the zone.
			var rec *httptest.ResponseRecorder
			if !serveWaitFor(2*time.Second, func() bool { rec = get("/"); return g.t.Stats().Fallbacks > 0 }) {
				t.Fatalf("the global limit did not turn to -redis-policy: %+v", g.t.Stats())
			}
			if rec.Code != tc.code {
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

// The flushing child's log names -redis with its password redacted.
func TestServeGlobalLogHidesRedisPassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: every flush fails
	d, err := dict.Open(filepath.Join(t.TempDir(), "g.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c := serveConfig{Redis: "redis://:s3cret@" + addr + "/0", GlobalLimit: 1000, GlobalWindow: time.Hour,
		GlobalInterval: 10 * time.Millisecond, RedisPolicy: "open", RedisPrefix: "t"}
	logs := &serveBuffer{}
	g, err := serveOpenGlobal(c, d, logs)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	// A flush reaches Redis only for keys with requests.
	if _, err := g.Incoming(context.Background(), "", true); err != nil {
		t.Fatal(err)
	}
	if !serveWaitFor(serveHang, func() bool { return strings.Contains(logs.String(), "a flush failed") }) {
		t.Fatalf("no log of the failure: %q", logs)
	}
	if want := "if Redis redis://:xxxxx@" + addr + "/0 keeps failing"; !strings.Contains(logs.String(), want) {
		t.Errorf("log %q lacks %q", logs, want)
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Errorf("log printed the password: %q", logs)
	}
}

// Two hosts (two masters, each with its own zone and 2 children) share a
// global limit of 20 requests a minute through one Redis. The load goes in
// rounds, not at a rate: each round sends a batch to every host at once, and
// the next round starts only once every host has flushed its count and read
// back the total (seen in Redis, see serveGlobalSettle). So what the hosts
// admit depends on Tiered's rules alone, not on how late a loaded machine
// runs the flushes.
//
// Bounds. Let T be the total admitted before a round. When the round starts,
// every host h knows it: its count n_h plus the other hosts' count g_h it
// last read is T. During the round g_h only grows (the other hosts' counts
// in Redis only grow), and h admits a request only when g_h plus its count,
// this request included, stays within limit; so h admits at most
// max(0, limit-T) of the round, and the hosts together at most
//
//	hosts · min(batch, max(0, limit-T)).
//
// From T below limit a round so ends at most (hosts-1)·min(batch, limit-T)
// over it: the whole window admits at most limit + (hosts-1)·batch, and a
// round that starts at or past limit admits nothing. And a host never
// rejects below the global limit it knows of, which is at most the true
// total: a round either admits its whole batch on every host or ends with
// the total at limit or more.
func TestServeGlobalLimit(t *testing.T) {
	t.Parallel()
	const (
		limit = 20
		hosts = 2
		batch = 4 // requests sent to each host in a round
		// Long enough that a flushing child delayed by a loaded machine
		// neither loses its lease (3 intervals) nor makes its host judge
		// Redis down (5 intervals and the timeout) in mid-test.
		interval = 300 * time.Millisecond
		prefix   = "global-test"
		headroom = 15 * time.Second // of the minute's window, for the whole test
	)
	r := testutil.StartRedis(t)
	args := []string{"-rate", "1000r/s", "-burst", "100", "-nodelay",
		"-redis", r.Addr, "-redis-prefix", prefix,
		"-global-rate", strconv.Itoa(limit) + "r/m", "-global-interval", interval.String()}
	var ss []*serveTestServer
	for range hosts {
		ss = append(ss, launchServe(t, 2, args...))
	}
	for _, s := range ss {
		s.waitReady(t)
	}
	rc := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rc.Close()

	// The window is the clock's minute: start in one with headroom left, so
	// that the rounds end in it.
	const minute = int64(time.Minute / time.Millisecond)
	var win int64
	if !serveWaitFor(time.Minute, func() bool {
		now := time.Now().UnixMilli()
		win = now / minute
		return (win+1)*minute-now >= headroom.Milliseconds()
	}) {
		t.Fatal("no minute began")
	}
	settle := serveGlobalSettle(t, rc, prefix, win)

	client := &http.Client{Timeout: serveHang, Transport: &http.Transport{DisableKeepAlives: true}}
	admitted := make([]int, hosts) // per host, in the window
	total := 0
	for round := 1; ; round++ {
		before := total
		// A batch to every host at once, each request over a new connection,
		// so that both children of a host decide.
		codes := make([][]int, hosts)
		errs := make([][]error, hosts)
		var wg sync.WaitGroup
		for h, s := range ss {
			codes[h], errs[h] = make([]int, batch), make([]error, batch)
			for i := range batch {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := client.Get("http://" + s.addr + "/")
					if err != nil {
						errs[h][i] = err
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					codes[h][i] = resp.StatusCode
				}()
			}
		}
		wg.Wait()
		got := make([]int, hosts)
		for h := range hosts {
			for i, code := range codes[h] {
				switch {
				case errs[h][i] != nil:
					t.Fatalf("round %d, host %d: %v", round, h, errs[h][i])
				case code == http.StatusOK:
					got[h]++
				case code != http.StatusTooManyRequests:
					t.Fatalf("round %d, host %d: answer %d, want 200 or 429", round, h, code)
				}
			}
			admitted[h] += got[h]
			total += got[h]
		}
		n := total - before
		most := hosts * min(batch, max(0, limit-before))
		t.Logf("round %d: %d admitted before, %d of %d now (per host %v), %d in all",
			round, before, n, hosts*batch, got, total)
		if n > most {
			t.Errorf("round %d admitted %d from %d admitted before, want at most %d", round, n, before, most)
		}
		if n < hosts*batch && total < limit {
			t.Errorf("round %d admitted %d of %d, ending at %d, below the limit %d", round, n, hosts*batch, total, limit)
		}
		if before >= limit || round > limit/(hosts*batch)+2 {
			break // the round past the limit is checked: it admits nothing
		}
		settle(admitted)
	}
	if over := (hosts - 1) * batch; total < limit || total > limit+over {
		t.Errorf("the window admitted %d, want %d to %d", total, limit, limit+over)
	}
	m := serveMetricsText(t, ss[0].addr)
	for _, want := range []string{`worker_serve_global_requests_total{result="rejected"}`, "worker_serve_global_flushes_total"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
}

// serveGlobalSettle returns a wait, after a round of TestServeGlobalLimit,
// until every host knows the global total of window win: first until Redis
// holds each host's count of the round (admitted, per host), then until every
// host has flushed twice more. The first of those flushes ran its script
// once Redis held every count, so it read back the total; the second began
// after the first had stored what it read in the zone (a host's flushes run
// one after another, in the child that holds Tiered's lease; the lease
// passes on only after 3 intervals without a flush). Redis's hash of the window keeps, per host, its count
// and under "host:s" the sequence number of its last flush. The children's
// worker_serve_global_flushes_total would not do: each child counts its own,
// and /metrics reaches any child of a host.
func serveGlobalSettle(t *testing.T, rc *redis.Client, prefix string, win int64) func(admitted []int) {
	key := prefix + ":" + serveGlobalKey + ":" + strconv.FormatInt(win, 10)
	read := func() (counts []int, seqs map[string]int64) {
		if w := time.Now().UnixMilli() / int64(time.Minute/time.Millisecond); w != win {
			t.Fatalf("the test ran from window %d into %d", win, w)
		}
		all, err := rc.HGetAll(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		seqs = map[string]int64{}
		for f, v := range all {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s %s = %q", key, f, v)
			}
			if host, ok := strings.CutSuffix(f, ":s"); ok {
				seqs[host] = n
			} else {
				counts = append(counts, int(n))
			}
		}
		slices.Sort(counts)
		return counts, seqs
	}
	return func(admitted []int) {
		t.Helper()
		var want []int
		for _, n := range admitted {
			if n > 0 { // a host that admitted nothing has not flushed
				want = append(want, n)
			}
		}
		slices.Sort(want)
		var counts []int
		var seqs map[string]int64
		if !serveWaitFor(serveHang, func() bool { counts, seqs = read(); return slices.Equal(counts, want) }) {
			t.Fatalf("Redis holds the hosts' counts %v, want %v", counts, want)
		}
		var now map[string]int64
		if !serveWaitFor(serveHang, func() bool {
			_, now = read()
			for h, s := range seqs {
				if now[h] < s+2 {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("the hosts did not flush twice: sequence numbers %v, then %v", seqs, now)
		}
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

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
)

func TestServeFlags(t *testing.T) {
	procs, size, c, err := serveFlags([]string{"-procs", "3", "-rate", "30r/m", "-burst", "2", "-nodelay", "-per-process"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if procs != 3 || size != 4<<20 || c.Rate != 0.5 || c.Burst != 2 || !c.NoDelay || !c.PerProcess || c.Addr != ":8080" {
		t.Fatalf("got procs %d size %d %+v", procs, size, c)
	}
	for _, args := range [][]string{{"-procs", "0"}, {"-rate", "fast"}, {"-burst", "-1"}, {"-drain", "0s"}, {"-ready-timeout", "0s"}, {"-clock-file", "c", "-precise-clock"}, {"extra"}} {
		var errb bytes.Buffer
		if code := runServe(args, io.Discard, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

// The master takes a -burst exactly when the children's limiter.NewReq
// does: one it refuses (NaN, infinite, or whose thousandfold overflows)
// fails the flags with exit 2, else every child would fail to start and be
// restarted forever.
func TestServeBurstAsTheLimiterTakesIt(t *testing.T) {
	d, err := dict.Open(filepath.Join(t.TempDir(), "b.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct {
		burst string
		ok    bool
	}{
		{"0", true},
		{"20", true},
		{"1e12", true},
		{"1.0000001e12", false},
		{"1e305", false},
		{"-1", false},
		{"NaN", false},
		{"+Inf", false},
		{"-Inf", false},
		{"1e308", false},
	} {
		t.Run(tc.burst, func(t *testing.T) {
			b, err := strconv.ParseFloat(tc.burst, 64)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := limiter.NewReq(d, "t"+tc.burst, 1, b); (err == nil) != tc.ok {
				t.Fatalf("limiter.NewReq(burst %s) = %v; the table is wrong", tc.burst, err)
			}
			_, _, _, err = serveFlags([]string{"-burst", tc.burst}, io.Discard)
			if (err == nil) != tc.ok {
				t.Fatalf("serveFlags(-burst %s) = %v, want ok %v", tc.burst, err, tc.ok)
			}
			if tc.ok {
				return
			}
			// Refused by serveFlags, so runServe starts no server.
			var errb bytes.Buffer
			if code := runServe([]string{"-burst", tc.burst}, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), "-burst") {
				t.Errorf("runServe(-burst %s) = %d, %q; want 2 and a message naming -burst", tc.burst, code, errb.String())
			}
		})
	}
}

func TestServeGlobalFlags(t *testing.T) {
	_, _, c, err := serveFlags([]string{"-redis", "127.0.0.1:6379", "-global-rate", "30r/m", "-global-interval", "1s", "-redis-policy", "closed"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Redis != "127.0.0.1:6379" || c.GlobalLimit != 30 || c.GlobalWindow != time.Minute || c.GlobalInterval != time.Second || c.RedisPolicy != "closed" || c.RedisPrefix != "worker-serve" {
		t.Fatalf("got %+v", c)
	}
	_, _, c, err = serveFlags([]string{"-redis", "redis://127.0.0.1:6379/2", "-global-rate", "1000r/s"}, io.Discard)
	if err != nil || c.GlobalLimit != 1000 || c.GlobalWindow != time.Second || c.GlobalInterval != 100*time.Millisecond || c.RedisPolicy != "open" {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	_, _, c, err = serveFlags(nil, io.Discard)
	if err != nil || c.Redis != "" || c.GlobalLimit != 0 {
		t.Fatalf("no global limit: %+v, %v", c, err)
	}

	const redis = "127.0.0.1:6379"
	for _, tc := range []struct {
		name string
		args []string
		want string // in the message
	}{
		{"rate without redis", []string{"-global-rate", "10r/s"}, "-global-rate needs -redis"},
		{"redis without rate", []string{"-redis", redis}, "-redis needs -global-rate"},
		{"bad rate", []string{"-redis", redis, "-global-rate", "fast"}, "-global-rate: limiter: bad rate"},
		{"rate unit", []string{"-redis", redis, "-global-rate", "10r/h"}, "unit"},
		{"zero rate", []string{"-redis", redis, "-global-rate", "0r/s"}, "positive"},
		{"fractional rate", []string{"-redis", redis, "-global-rate", "0.5r/s"}, "whole count"},
		{"huge rate", []string{"-redis", redis, "-global-rate", "18446744073709551615r/s"}, "out of range"},
		{"interval over window", []string{"-redis", redis, "-global-rate", "10r/s", "-global-interval", "2s"}, "-global-interval 2s"},
		{"zero interval", []string{"-redis", redis, "-global-rate", "10r/s", "-global-interval", "0s"}, "-global-interval 0s"},
		{"policy", []string{"-redis", redis, "-global-rate", "10r/s", "-redis-policy", "maybe"}, "want open or closed"},
		{"prefix", []string{"-redis", redis, "-global-rate", "10r/s", "-redis-prefix", ""}, "-redis-prefix"},
		{"url", []string{"-redis", "http://x", "-global-rate", "10r/s"}, "-redis:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errb bytes.Buffer
			if code := runServe(tc.args, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("runServe(%q) = %d, %q; want 2 and a message with %q", tc.args, code, errb.String(), tc.want)
			}
		})
	}
}

// A Redis that does not answer at start fails the master before any child
// starts: exit 1, saying which Redis.
func TestServeRedisDownAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	zone := filepath.Join(t.TempDir(), "z.zone")
	var errb bytes.Buffer
	code := runServe([]string{"-zone", zone, "-procs", "1", "-addr", "127.0.0.1:0", "-redis", addr, "-global-rate", "10r/s"}, io.Discard, &errb)
	if code != 1 || !strings.Contains(errb.String(), "worker serve: -redis: redis "+addr) {
		t.Fatalf("runServe = %d, %q; want 1 and a message naming the Redis", code, errb.String())
	}
	if _, err := os.Stat(zone); !os.IsNotExist(err) {
		t.Errorf("zone created before Redis was checked: %v", err)
	}
}

// A -redis URL's password is never printed: the master takes it out of the
// URL its messages show, and a URL that does not parse is not quoted.
func TestServeRedisURLPasswordNotPrinted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, tc := range []struct {
		name  string
		redis string
		code  int
		want  string // in the message
	}{
		{"down", "redis://:s3cret@" + addr + "/0", 1, "worker serve: -redis: redis redis://" + addr + "/0: "},
		{"user and password", "redis://u:s3cret@" + addr + "/0", 1, "redis redis://u@" + addr + "/0: "},
		{"bad port", "redis://:s3cret@127.0.0.1:bad/0", 2, `worker serve: -redis: bad URL: invalid port ":bad" after host`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errb bytes.Buffer
			args := []string{"-zone", filepath.Join(t.TempDir(), "z.zone"), "-procs", "1", "-addr", "127.0.0.1:0", "-redis", tc.redis, "-redis-password-in-url", "-global-rate", "10r/s"}
			code := runServe(args, io.Discard, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("runServe(-redis %s) = %d, %q; want %d and a message with %q", tc.redis, code, errb.String(), tc.code, tc.want)
			}
			if strings.Contains(errb.String(), "s3cret") {
				t.Errorf("runServe(-redis %s) printed the password: %q", tc.redis, errb.String())
			}
		})
	}
}

func TestServeHelpNamesEveryFlag(t *testing.T) {
	var errb bytes.Buffer
	if code := runServe([]string{"-h"}, io.Discard, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, f := range []string{"procs", "addr", "zone", "zone-size", "rate", "burst", "nodelay", "per-process", "drain", "ready-timeout", "slow-path", "slow", "unready-roll", "clock-file", "pid-header",
		"redis", "global-rate", "global-interval", "redis-policy", "redis-prefix",
		"redis-username", "redis-password-file", "redis-password-env", "redis-password-in-url"} {
		if !strings.Contains(errb.String(), "-"+f+" ") && !strings.Contains(errb.String(), "-"+f+"\n") {
			t.Errorf("help lacks -%s:\n%s", f, errb.String())
		}
	}
}

// /metrics is unlimited and counts the limited handler's decisions along
// with the zone's figures.
func TestServeMetrics(t *testing.T) {
	d, err := dict.Open(filepath.Join(t.TempDir(), "m.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l, err := limiter.NewReq(d, "t", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := serveHandler(context.Background(), serveConfig{NoDelay: true}, d, l)
	if err != nil {
		t.Fatal(err)
	}
	codes := ""
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://x/", nil))
		codes += rec.Result().Status[:3] + " "
	}
	if codes != "200 429 429 " {
		t.Fatalf("codes %q", codes)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://x/metrics", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("metrics: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	for _, want := range []string{
		`worker_serve_requests_total{result="allowed"} 1`,
		`worker_serve_requests_total{result="rejected"} 2`,
		"# TYPE worker_serve_requests_in_flight gauge\nworker_serve_requests_in_flight 0\n",
		"# TYPE shmzone_entries gauge\nshmzone_entries 2\n", // the client's state and the limiter's record
		"shmzone_capacity_bytes 1048576\n",
		"# TYPE shmzone_lost_total counter\nshmzone_lost_total 0\n",
		"# TYPE shmzone_protected_entries gauge\nshmzone_protected_entries 0\n",
		// A zone with room: the limiter evicted nothing.
		"# TYPE worker_serve_limiter_forcible_total counter\nworker_serve_limiter_forcible_total 0\n",
		"# TYPE worker_serve_limiter_retries_total counter\nworker_serve_limiter_retries_total 0\n",
		"# TYPE worker_serve_limiter_evicted_total counter\nworker_serve_limiter_evicted_total 0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

// /metrics reports the per-client limiter's limiter.Stats: in a zone too
// small for its clients, a decision's write evicts another client's state
// (Forcible), and that client, back while its state still held, starts
// afresh and is admitted again (Evicted).
func TestServeMetricsLimiterStats(t *testing.T) {
	// One shard: one eviction order for every client.
	d, err := dict.Open(filepath.Join(t.TempDir(), "m.zone"), dict.Options{Size: 1 << 17, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// A client's first request passes, then one a minute: every state
	// holds for the whole test.
	l, err := limiter.NewReq(d, "t", 1.0/60, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := serveHandler(context.Background(), serveConfig{NoDelay: true}, d, l)
	if err != nil {
		t.Fatal(err)
	}
	get := func(i int, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "http://x"+path, nil)
		req.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:1234", i>>16&255, i>>8&255, i&255)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	// New clients until the zone evicts one's state.
	const most = 1 << 16
	n := 0
	for ; d.Stats().Evictions == 0; n++ {
		if n == most {
			t.Fatalf("%d clients and no eviction: %+v", n, d.Stats())
		}
		if rec := get(n, "/"); rec.Code != http.StatusOK {
			t.Fatalf("first request of client %d = %d, want 200", n, rec.Code)
		}
	}
	// The earliest clients again, until one is admitted: its state was
	// evicted.
	again := -1
	for i := range n {
		if get(i, "/").Code == http.StatusOK {
			again = i
			break
		}
	}
	if again < 0 {
		t.Fatalf("none of %d clients admitted again after %d evictions", n, d.Stats().Evictions)
	}
	body := get(0, "/metrics").Body.String()
	st := l.Stats()
	t.Logf("%d clients filled the zone, client %d admitted again; %+v", n, again, st)
	for _, m := range []struct {
		name string
		v    uint64
		min  uint64
	}{
		{"worker_serve_limiter_forcible_total", st.Forcible, 1},
		{"worker_serve_limiter_retries_total", st.Retries, 0},
		{"worker_serve_limiter_evicted_total", st.Evicted, 1},
	} {
		re := regexp.MustCompile(`(?m)^# TYPE ` + m.name + ` counter\n` + m.name + ` (\d+)$`)
		got := re.FindStringSubmatch(body)
		if got == nil {
			t.Errorf("metrics lack a counter %s:\n%s", m.name, body)
			continue
		}
		v, err := strconv.ParseUint(got[1], 10, 64)
		if err != nil || v != m.v || v < m.min {
			t.Errorf("%s = %s, want the limiter's %d (at least %d)", m.name, got[1], m.v, m.min)
		}
	}
}

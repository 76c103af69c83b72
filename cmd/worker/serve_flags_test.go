package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	for _, args := range [][]string{{"-procs", "0"}, {"-rate", "fast"}, {"-burst", "-1"}, {"-drain", "0s"}, {"-ready-timeout", "0s"}, {"extra"}} {
		var errb bytes.Buffer
		if code := runServe(args, io.Discard, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errb.String())
		}
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
	_, _, c, err = serveFlags([]string{"-redis", "redis://:pw@127.0.0.1:6379/2", "-global-rate", "1000r/s"}, io.Discard)
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

func TestServeHelpNamesEveryFlag(t *testing.T) {
	var errb bytes.Buffer
	if code := runServe([]string{"-h"}, io.Discard, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, f := range []string{"procs", "addr", "zone", "zone-size", "rate", "burst", "nodelay", "per-process", "drain", "ready-timeout", "slow-path", "slow", "unready-roll",
		"redis", "global-rate", "global-interval", "redis-policy", "redis-prefix"} {
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
	h, err := serveHandler(serveConfig{NoDelay: true}, d, l)
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
		"# TYPE shmzone_entries gauge\nshmzone_entries 1\n",
		"shmzone_capacity_bytes 1048576\n",
		"# TYPE shmzone_lost_total counter\nshmzone_lost_total 0\n",
		"# TYPE shmzone_protected_entries gauge\nshmzone_protected_entries 0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

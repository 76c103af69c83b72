package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

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

func TestServeHelpNamesEveryFlag(t *testing.T) {
	var errb bytes.Buffer
	if code := runServe([]string{"-h"}, io.Discard, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, f := range []string{"procs", "addr", "zone", "zone-size", "rate", "burst", "nodelay", "per-process", "drain", "ready-timeout", "slow-path", "slow", "unready-roll"} {
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
	l, err := limiter.NewReq(d, 1, 0)
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
		"# TYPE shmzone_entries gauge\nshmzone_entries 1\n",
		"shmzone_capacity_bytes 1048576\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

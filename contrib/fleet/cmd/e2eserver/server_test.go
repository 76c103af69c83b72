package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

func TestHelperProcess(t *testing.T) {
	testutil.RunHelper(map[string]func(args []string) error{
		"e2eserver": func(args []string) error {
			if code := run(args, os.Stdout, os.Stderr); code != 0 {
				return fmt.Errorf("exit status %d", code)
			}
			return nil
		},
	})
}

// readyLineRE matches the line that says every child accepts.
var readyLineRE = regexp.MustCompile(`(?m)^ready children=(\d+),(\d+)$`)

// TestServe runs the server of each framework as real processes, two
// children under a master, with no limiter and with a limit of one
// request a minute, and with the middleware over a limiter that admits
// every request whatever its limit. Each request comes on a new connection, which the
// kernel may give to either child. The server answers "ok", and with the
// limit the second request gets 429, with or without the rate limit
// headers; the static limiter admits it, with the headers. SIGTERM ends the master cleanly.
func TestServe(t *testing.T) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: testutil.Hang}
	get := func(t *testing.T, url string) (int, http.Header, string) {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, string(body)
	}
	for _, framework := range []string{"nethttp", "fasthttp", "fiber"} {
		for _, tc := range []struct {
			name    string
			args    []string
			second  int  // the status of the second request
			headers bool // the second response carries RateLimit-Policy
		}{
			{"limiter=none", []string{"-limiter", "none"}, http.StatusOK, false},
			{"limiter=static/limit=1", []string{"-limiter", "static", "-limit", "1"}, http.StatusOK, true},
			{"limit=1", []string{"-limit", "1"}, http.StatusTooManyRequests, true},
			{"limit=1/headers=false", []string{"-limit", "1", "-headers=false"}, http.StatusTooManyRequests, false},
		} {
			t.Run("framework="+framework+"/"+tc.name, func(t *testing.T) {
				addr := freeAddr(t)
				args := append([]string{"-framework", framework, "-zone", testutil.TempZone(t), "-addr", addr}, tc.args...)
				m := testutil.StartMaster(t, 2, "e2eserver", args...)
				m.WaitFor(t, "ready line", func() bool { return readyLineRE.MatchString(m.String()) })
				// By slot in the ready line, in the order they came in the
				// reports.
				var named []int
				for _, p := range readyLineRE.FindStringSubmatch(m.String())[1:] {
					n, _ := strconv.Atoi(p)
					named = append(named, n)
				}
				reported := m.Pids(testutil.ReadyRE)
				slices.Sort(named)
				slices.Sort(reported)
				if !slices.Equal(named, reported) {
					t.Errorf("ready line names %v, want the children prefork reported ready, %v", named, reported)
				}

				url := "http://" + addr + "/"
				if status, _, body := get(t, url); status != http.StatusOK || body != "ok" {
					t.Errorf("first GET / = %d %q, want 200 \"ok\"", status, body)
				}
				status, h, _ := get(t, url)
				if status != tc.second {
					t.Errorf("second GET / = %d, want %d", status, tc.second)
				}
				if got := h.Get("RateLimit-Policy") != ""; got != tc.headers {
					t.Errorf("second response has RateLimit-Policy: %v, want %v", got, tc.headers)
				}
				if tc.second == http.StatusTooManyRequests && h.Get("Retry-After") == "" {
					t.Errorf("429 response without Retry-After")
				}

				if err := syscall.Kill(m.Pid(), syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				if err := m.Wait(); err != nil {
					t.Errorf("master after SIGTERM: %v; output:\n%s", err, m)
				}
			})
		}
	}
}

// TestServeProxy: with -proxy, each framework's middleware keys a request
// by the client its X-Forwarded-For names, so two clients behind the same
// proxy have a limit each.
func TestServeProxy(t *testing.T) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: testutil.Hang}
	status := func(t *testing.T, url, xff string) int {
		t.Helper()
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, framework := range []string{"nethttp", "fasthttp", "fiber"} {
		t.Run("framework="+framework, func(t *testing.T) {
			addr := freeAddr(t)
			m := testutil.StartMaster(t, 2, "e2eserver", "-framework", framework, "-zone", testutil.TempZone(t),
				"-addr", addr, "-limit", "1", "-proxy", "127.0.0.0/8")
			m.WaitFor(t, "ready line", func() bool { return readyLineRE.MatchString(m.String()) })
			url := "http://" + addr + "/"
			for i, step := range []struct {
				xff  string
				want int
			}{
				{"203.0.113.1", http.StatusOK},
				{"203.0.113.2", http.StatusOK},
				{"203.0.113.1", http.StatusTooManyRequests},
				{"198.51.100.9, 203.0.113.2", http.StatusTooManyRequests},
			} {
				if got := status(t, url, step.xff); got != step.want {
					t.Errorf("GET %d with X-Forwarded-For %q = %d, want %d", i+1, step.xff, got, step.want)
				}
			}
			if err := syscall.Kill(m.Pid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := m.Wait(); err != nil {
				t.Errorf("master after SIGTERM: %v; output:\n%s", err, m)
			}
		})
	}
}

// TestReadiness: the ready line comes once, when every slot has had a
// child ready, and names the last child ready in each slot.
func TestReadiness(t *testing.T) {
	var out bytes.Buffer
	r := newReadiness(&out, 2)
	r.logf("child pid=%d ready (slot %d)", 100, 0)
	r.logf("child pid=%d died: %v; replacing it in %v", 100, "exit status 1", "100ms")
	r.logf("child pid=%d ready (slot %d)", 102, 0)
	if strings.Contains(out.String(), "ready children") {
		t.Fatalf("ready line before slot 1 was ready:\n%s", out.String())
	}
	r.logf("child pid=%d ready (slot %d)", 101, 1)
	r.logf("child pid=%d ready (slot %d)", 103, 1)
	want := "child pid=100 ready (slot 0)\n" +
		"child pid=100 died: exit status 1; replacing it in 100ms\n" +
		"child pid=102 ready (slot 0)\n" +
		"child pid=101 ready (slot 1)\n" +
		"ready children=102,101\n" +
		"child pid=103 ready (slot 1)\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-framework", "gin"},
		{"-limiter", "req"},
		{"-limit", "0"},
		{"-children", "0"},
		{"-proxy", "nonsense"},
		{"stray"},
		{"-nosuch"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2; stderr %q", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "-framework") {
		t.Errorf("run(-h) = %d, stderr %q; want 0 and the flags", code, errb.String())
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

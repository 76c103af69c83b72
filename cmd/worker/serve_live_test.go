package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Tests of numbers set live with shmctl while worker serve runs. Time is
// the -clock-file's, which the test moves: every decision's time is known
// to the millisecond, whatever the machine's pace.
//
// shmctl reads the system clock. The children's clock starts an hour
// ahead of it, and moves by seconds. So shmctl finds their states
// unexpired, as a process of the host finds another's. The states' times
// stay within the day ahead that a Req takes from another process.

// serveClock is the time of a -clock-file.
type serveClock struct {
	path string
	ms   int64 // Unix ms
}

// newServeClock returns a -clock-file an hour ahead of the system clock.
func newServeClock(t *testing.T) *serveClock {
	t.Helper()
	c := &serveClock{path: filepath.Join(t.TempDir(), "clock")}
	c.set(t, time.Now().Add(time.Hour).UnixMilli())
	return c
}

// set moves the clock to ms. A rename replaces the file, so no child
// reads half a write.
func (c *serveClock) set(t *testing.T, ms int64) {
	t.Helper()
	tmp := c.path + ".new"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(ms, 10)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		t.Fatal(err)
	}
	c.ms = ms
}

// advance moves the clock by d.
func (c *serveClock) advance(t *testing.T, d time.Duration) {
	t.Helper()
	c.set(t, c.ms+d.Milliseconds())
}

// buildShmctl builds the shmctl command and returns the binary's path.
func buildShmctl(t *testing.T) string {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to build shmctl: %v", err)
		}
	}
	bin := filepath.Join(t.TempDir(), "shmctl")
	out, err := exec.Command(gobin, "build", "-o", bin, "github.com/shmzone/shmzone/cmd/shmctl").CombinedOutput()
	if err != nil {
		t.Fatalf("go build shmctl: %v\n%s", err, out)
	}
	return bin
}

// runShmctl runs shmctl with args, and returns its output. It fails the
// test unless shmctl exits 0.
func runShmctl(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("shmctl %q: %v; stderr:\n%s", args, err, errb.String())
	}
	return out.String()
}

// serveShown is one limiter of "shmctl limits show --json".
type serveShown struct {
	Kind    string  `json:"kind"`
	Name    string  `json:"name"`
	InForce string  `json:"in_force"`
	From    string  `json:"from"`
	Pid     int     `json:"pid"`
	At      string  `json:"at"`
	Built   *string `json:"built"`
	BuiltBy int     `json:"built_by"`
}

// showServe returns what shmctl limits show says of worker serve's
// limiter, the req named "serve".
func showServe(t *testing.T, bin, zone string) serveShown {
	t.Helper()
	out := runShmctl(t, bin, "limits", "show", "--json", zone)
	var rows []serveShown
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("limits show --json: %v in\n%s", err, out)
	}
	if len(rows) != 1 || rows[0].Kind != "req" || rows[0].Name != "serve" {
		t.Fatalf("limits show --json = %s, want the req named serve alone", out)
	}
	return rows[0]
}

// serveNumbers is what a decision's headers say of the numbers it used.
// With a burst of 19, a Req's policy is a quota of 20 requests that
// refills in 20/rate seconds, rounded up. A rejection on a full bucket
// resets once the excess of 19 leaks: in 19/rate seconds, rounded up.
type serveNumbers struct {
	policy string // RateLimit-Policy
	limit  string // X-RateLimit-Limit
	reset  string // X-RateLimit-Reset of a rejection
}

// serveRate returns the headers of a Req of burst 19 at rate per second,
// for rates that divide 20.
func serveRate(rate int) serveNumbers {
	w := strconv.Itoa(20 / rate)
	return serveNumbers{policy: `"default";q=20;w=` + w, limit: "20", reset: w}
}

// serveRound sends requests over new connections to addrs in turn, all at
// the clock's time, until it sent at least min and each child of pids
// answered. Each decision must report want. It returns how many were
// admitted. The connections spread over the children by their ports, as
// SO_REUSEPORT hashes them: the cap on requests guards against a hang.
func serveRound(t *testing.T, addrs []string, pids []int, want serveNumbers, min int) (admitted int) {
	t.Helper()
	client := &http.Client{Timeout: serveHang, Transport: &http.Transport{DisableKeepAlives: true}}
	seen := map[int]bool{}
	const most = 2000
	for n := 0; n < min || len(seen) < len(pids); n++ {
		if n == most {
			t.Fatalf("%d requests reached the children %v of %v alone", most, seen, pids)
		}
		resp, err := client.Get("http://" + addrs[n%len(addrs)] + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		pid, _ := strconv.Atoi(resp.Header.Get(servePidHeader))
		if !slices.Contains(pids, pid) {
			t.Fatalf("request %d answered by pid %q, not one of %v", n, resp.Header.Get(servePidHeader), pids)
		}
		seen[pid] = true
		h := resp.Header
		if got := h.Get("RateLimit-Policy"); got != want.policy {
			t.Errorf("request %d, pid %d: RateLimit-Policy %q, want %q", n, pid, got, want.policy)
		}
		if got := h.Get("X-RateLimit-Limit"); got != want.limit {
			t.Errorf("request %d, pid %d: X-RateLimit-Limit %q, want %q", n, pid, got, want.limit)
		}
		switch resp.StatusCode {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
			if got := h.Get("X-RateLimit-Reset"); got != want.reset {
				t.Errorf("request %d, pid %d, rejected: X-RateLimit-Reset %q, want %q", n, pid, got, want.reset)
			}
		default:
			t.Fatalf("request %d, pid %d: status %d", n, pid, resp.StatusCode)
		}
	}
	return admitted
}

// serveCheckZone fails the test if the zone at path fails Check.
func serveCheckZone(t *testing.T, path string) {
	t.Helper()
	d, err := dict.Open(path, dict.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Check(); err != nil {
		t.Errorf("zone Check: %v", err)
	}
}

// Must show 1 of issue 46: four children serve a limit of 20 r/s. After
// shmctl limits set returns, every decision of every child uses 5 r/s:
// its headers say so, and the children admit 5 a second together. After
// limits unset, 20 r/s again. The children are the same throughout.
func TestServeLiveRate(t *testing.T) {
	t.Parallel()
	shmctl := buildShmctl(t)
	clk := newServeClock(t)
	s := startServe(t, 4, "-rate", "20r/s", "-burst", "19", "-nodelay", "-clock-file", clk.path, "-pid-header")
	pids := s.stderr.serveReadyPids()
	addrs := []string{s.addr}
	// step moves the clock by d, then checks that every child decides by
	// rate, and that they admit want in all.
	step := func(what string, d time.Duration, rate, want int) {
		t.Helper()
		clk.advance(t, d)
		if got := serveRound(t, addrs, pids, serveRate(rate), 2*want+8); got != want {
			t.Errorf("%s: %v later at %d r/s, admitted %d, want %d", what, d, rate, got, want)
		}
	}
	step("built", 0, 20, 20) // a new bucket: burst + 1
	step("built", time.Second, 20, 20)
	step("built", 400*time.Millisecond, 20, 8)

	runShmctl(t, shmctl, "limits", "set", s.zone, "serve", "--rate", "5r/s")
	step("live", 0, 5, 0) // the bucket is full
	// Past the 1001ms that a full bucket lasts at 20 r/s: it lasts longer
	// at 5 r/s.
	step("live", 1200*time.Millisecond, 5, 6)
	step("live", time.Second, 5, 5)
	step("live", 400*time.Millisecond, 5, 2)
	step("live", 3*time.Second, 5, 15)

	runShmctl(t, shmctl, "limits", "unset", s.zone, "serve")
	step("unset", 0, 20, 0)
	step("unset", time.Second, 20, 20)
	step("unset", 400*time.Millisecond, 20, 8)

	if got := s.stderr.serveReadyPids(); !slices.Equal(got, pids) {
		t.Errorf("children ready %v, want the first %v alone: a child was restarted", got, pids)
	}
	serveCheckZone(t, s.zone)
}

// Must show 4 of issue 46: two masters built with different numbers under
// one name and one zone. Both decide by the newest construction's numbers,
// their headers say so, and shmctl limits show names its builder. A live
// rate then wins over every construction, that of a child started after
// it too: a child killed and replaced builds anew, and still decides by
// the live rate. Once unset, the newest construction's numbers apply: the
// replacement's.
func TestServeNewestAndLiveNumbers(t *testing.T) {
	t.Parallel()
	shmctl := buildShmctl(t)
	clk := newServeClock(t)
	common := []string{"-burst", "19", "-nodelay", "-clock-file", clk.path, "-pid-header"}
	a := startServe(t, 2, append([]string{"-rate", "20r/s"}, common...)...)
	zone := a.zone
	addrs := []string{a.addr}
	if got := serveRound(t, addrs, a.stderr.serveReadyPids(), serveRate(20), 48); got != 20 {
		t.Errorf("A alone at 20 r/s: admitted %d, want 20", got)
	}

	b := startServe(t, 2, append([]string{"-rate", "5r/s", "-zone", zone}, common...)...)
	bPids := b.stderr.serveReadyPids()
	addrs = append(addrs, b.addr)
	pids := func() []int { return append(a.stderr.serveReadyPids(), bPids...) }
	// step moves the clock by d, then checks that every child of both
	// masters decides by rate, and that they admit want in all.
	step := func(what string, d time.Duration, rate, want int, pids []int) {
		t.Helper()
		clk.advance(t, d)
		if got := serveRound(t, addrs, pids, serveRate(rate), 2*want+8); got != want {
			t.Errorf("%s: %v later at %d r/s, admitted %d, want %d", what, d, rate, got, want)
		}
	}
	step("B built newest", time.Second, 5, 5, pids())
	sh := showServe(t, shmctl, zone)
	builtAt := time.UnixMilli(clk.ms - time.Second.Milliseconds()).UTC().Format(time.RFC3339)
	if sh.InForce != "rate 5r/s, burst 19" || sh.From != "built" || !slices.Contains(bPids, sh.Pid) || sh.At != builtAt {
		t.Errorf("limits show after B started = %+v, want rate 5r/s, burst 19, built by one of B's children %v at %s", sh, bPids, builtAt)
	}

	runShmctl(t, shmctl, "limits", "set", zone, "serve", "--rate", "10r/s")
	step("live", time.Second, 10, 10, pids())
	sh = showServe(t, shmctl, zone)
	if sh.InForce != "rate 10r/s, burst 19" || sh.From != "live" || sh.Built == nil || *sh.Built != "rate 5r/s, burst 19" || !slices.Contains(bPids, sh.BuiltBy) {
		t.Errorf("limits show after limits set = %+v, want rate 10r/s live over B's rate 5r/s", sh)
	}

	victim := a.stderr.serveReadyPids()[0]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !serveWaitFor(serveHang, func() bool { return len(a.stderr.serveReadyPids()) == 3 }) {
		t.Fatalf("no child replaced pid %d; stderr:\n%s", victim, a.stderr)
	}
	replacement := a.stderr.serveReadyPids()[2]
	now := append(slices.DeleteFunc(a.stderr.serveReadyPids(), func(p int) bool { return p == victim }), bPids...)
	step("live, a child replaced", time.Second, 10, 10, now)
	sh = showServe(t, shmctl, zone)
	if sh.InForce != "rate 10r/s, burst 19" || sh.From != "live" || sh.Built == nil || *sh.Built != "rate 20r/s, burst 19" || sh.BuiltBy != replacement {
		t.Errorf("limits show after the replacement = %+v, want rate 10r/s live over rate 20r/s built by the replacement, pid %d", sh, replacement)
	}

	runShmctl(t, shmctl, "limits", "unset", zone, "serve")
	step("unset", time.Second, 20, 20, now)
	sh = showServe(t, shmctl, zone)
	if sh.InForce != "rate 20r/s, burst 19" || sh.From != "built" || sh.Pid != replacement {
		t.Errorf("limits show after limits unset = %+v, want rate 20r/s built by the replacement, pid %d", sh, replacement)
	}
	serveCheckZone(t, zone)
}

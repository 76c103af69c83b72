package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// serveTestEnv makes the test binary run as the worker command, so that the
// tests run real masters and children without building another binary.
const serveTestEnv = "WORKER_SERVE_TEST_MAIN"

func init() {
	if os.Getenv(serveTestEnv) == "1" {
		os.Exit(dispatch(os.Getenv(childEnv), os.Args[1:], os.Stdout, os.Stderr))
	}
}

// serveBuffer is the master's stderr, read while it is written.
type serveBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *serveBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *serveBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var serveReadyRE = regexp.MustCompile(`child pid=(\d+) ready`)

// serveReadyPids lists the children that reported ready, in order.
func (s *serveBuffer) serveReadyPids() []int {
	var pids []int
	for _, m := range serveReadyRE.FindAllStringSubmatch(s.String(), -1) {
		p, _ := strconv.Atoi(m[1])
		pids = append(pids, p)
	}
	return pids
}

// serveWaitFor polls until cond holds or d passes.
func serveWaitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

type serveTestServer struct {
	cmd    *exec.Cmd
	addr   string
	zone   string
	stderr *serveBuffer
	done   chan error
	procs  int
}

// startServe runs "worker serve" on a free loopback port with procs
// children and waits until every child listens.
func startServe(t *testing.T, procs int, args ...string) *serveTestServer {
	t.Helper()
	s := launchServe(t, procs, args...)
	s.waitReady(t)
	return s
}

// waitReady waits until every child of s listens.
func (s *serveTestServer) waitReady(t *testing.T) {
	t.Helper()
	if !serveWaitFor(10*time.Second, func() bool { return len(s.stderr.serveReadyPids()) >= s.procs }) {
		t.Fatalf("children not ready; stderr:\n%s", s.stderr)
	}
}

// launchServe starts "worker serve" like startServe without waiting.
func launchServe(t *testing.T, procs int, args ...string) *serveTestServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	zone := filepath.Join(t.TempDir(), "serve.zone")
	all := append([]string{"serve", "-procs", strconv.Itoa(procs), "-addr", addr, "-zone", zone, "-zone-size", "1048576"}, args...)
	cmd := exec.Command(os.Args[0], all...)
	cmd.Env = append(os.Environ(), serveTestEnv+"=1")
	s := &serveTestServer{procs: procs, cmd: cmd, addr: addr, zone: zone, stderr: &serveBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = io.Discard, s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// serveLoadResult counts a load run's answers.
type serveLoadResult struct {
	ok, limited, failed atomic.Int64
	span                time.Duration // from the first request sent to the last
	firstErr            atomic.Value  // the first failure, a string
}

func (r *serveLoadResult) String() string {
	s := fmt.Sprintf("200: %d, 429: %d, failed: %d, sent over %v", r.ok.Load(), r.limited.Load(), r.failed.Load(), r.span.Round(time.Millisecond))
	if e := r.firstErr.Load(); e != nil {
		s += fmt.Sprintf(" (first failure: %v)", e)
	}
	return s
}

// admits reports whether ok lies within rate over the load's span ± 10%,
// plus burst.
func (r *serveLoadResult) admits(rate, burst float64) bool {
	want := rate * r.span.Seconds()
	ok := float64(r.ok.Load())
	return ok >= 0.9*want && ok <= 1.1*want+burst+1
}

// load sends rate requests per second to url for d, each over a new
// connection, and waits for every answer.
func serveLoad(url string, rate int, d time.Duration) *serveLoadResult {
	res := &serveLoadResult{}
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}
	var wg sync.WaitGroup
	// Request i is sent at start + i/rate, at once when running late, so
	// that a busy machine sends late rather than never.
	interval := time.Second / time.Duration(rate)
	n := int(d.Seconds() * float64(rate))
	start := time.Now()
	for i := 0; i < n; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		res.span = time.Since(start)
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(url)
			if err != nil {
				res.failed.Add(1)
				res.firstErr.CompareAndSwap(nil, err.Error())
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				res.ok.Add(1)
			case http.StatusTooManyRequests:
				res.limited.Add(1)
			default:
				res.failed.Add(1)
				res.firstErr.CompareAndSwap(nil, resp.Status)
			}
		}()
	}
	wg.Wait()
	return res
}

// Must show 1: four children enforce one limit of 50 r/s; per-process
// limiters admit about four times as much. Both runs load at once, to keep
// the test short.
func TestServeSharedLimit(t *testing.T) {
	t.Parallel()
	const burst = 5
	limit := []string{"-rate", "50r/s", "-burst", strconv.Itoa(burst), "-nodelay"}
	shared := launchServe(t, 4, limit...)
	private := launchServe(t, 4, append(limit, "-per-process")...)
	shared.waitReady(t)
	private.waitReady(t)
	var sres, pres *serveLoadResult
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); sres = serveLoad("http://"+shared.addr+"/", 200, 5*time.Second) }()
	go func() { defer wg.Done(); pres = serveLoad("http://"+private.addr+"/", 200, 5*time.Second) }()
	wg.Wait()
	t.Logf("shared zone, 4 children, 50r/s, 200 r/s for 5s: %v", sres)
	t.Logf("per-process zones, same load: %v", pres)
	if !sres.admits(50, burst) || sres.failed.Load() != 0 {
		t.Errorf("shared: accepted %d, want 50/s ± 10%% + burst %d with no failures (%v)", sres.ok.Load(), burst, sres)
	}
	if ok := pres.ok.Load(); ok < 3*250 || pres.failed.Load() != 0 {
		t.Errorf("per-process: accepted %d, want at least 3x 250 with no failures (%v)", ok, pres)
	}
}

// Must show 2: a child killed with SIGKILL under load is replaced within a
// second, the limit holds, and the zone passes Check.
func TestServeReplacesKilledChild(t *testing.T) {
	t.Parallel()
	const burst = 5
	s := startServe(t, 4, "-rate", "50r/s", "-burst", strconv.Itoa(burst), "-nodelay")
	done := make(chan *serveLoadResult)
	go func() { done <- serveLoad("http://"+s.addr+"/", 200, 3*time.Second) }()
	serveAwaitLoad(t, s, 50)
	victim := s.stderr.serveReadyPids()[1]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if !serveWaitFor(2*time.Second, func() bool { return len(s.stderr.serveReadyPids()) >= 5 }) {
		t.Fatalf("no child replaced pid %d; stderr:\n%s", victim, s.stderr)
	}
	took := time.Since(killed)
	res := <-done
	t.Logf("killed pid %d, replaced in %v; shared zone, 50r/s, 200 r/s for 3s: %v", victim, took, res)
	if took > time.Second {
		t.Errorf("replacement took %v, want at most 1s", took)
	}
	// Connections queued on the killed child's socket wait for its
	// replacement: the master keeps the socket.
	if !res.admits(50, burst) || res.failed.Load() != 0 {
		t.Errorf("accepted %d, want 50/s ± 10%% + burst %d with no failures (%v)", res.ok.Load(), burst, res)
	}
	d, err := dict.Open(s.zone, dict.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Check(); err != nil {
		t.Errorf("zone Check: %v", err)
	}
}

// Must show 3, first half: SIGTERM lets an in-flight request finish, then the
// master exits 0.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	s := startServe(t, 2, "-rate", "1000r/s", "-burst", "100", "-slow-path", "/slow", "-slow", "700ms")
	type answer struct {
		body string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Get("http://" + s.addr + "/slow")
		if err != nil {
			got <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- answer{body: fmt.Sprint(resp.StatusCode, " ", string(b)), err: err}
	}()
	time.Sleep(200 * time.Millisecond) // the request is in the slow handler
	s.cmd.Process.Signal(syscall.SIGTERM)
	a := <-got
	if a.err != nil || a.body != "200 ok\n" {
		t.Fatalf("in-flight request: %q, %v; stderr:\n%s", a.body, a.err, s.stderr)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("master: %v; stderr:\n%s", err, s.stderr)
		}
		s.done <- err // for Cleanup
	case <-time.After(5 * time.Second):
		t.Fatalf("master did not exit; stderr:\n%s", s.stderr)
	}
	for _, pid := range s.stderr.serveReadyPids() {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("child %d outlived the master", pid)
		}
	}
}

// Must show 3, second half: SIGHUP rolls every child while requests keep
// coming, and none fails.
func TestServeRollsOnSIGHUP(t *testing.T) {
	t.Parallel()
	s := startServe(t, 2, "-rate", "1000r/s", "-burst", "100", "-nodelay")
	done := make(chan *serveLoadResult)
	go func() { done <- serveLoad("http://"+s.addr+"/", 100, 2*time.Second) }()
	serveAwaitLoad(t, s, 20)
	before := serveWrites(t, s.addr)
	s.cmd.Process.Signal(syscall.SIGHUP)
	rolled := serveWaitFor(5*time.Second, func() bool {
		return strings.Count(s.stderr.String(), "retired") >= 2
	})
	res := <-done
	t.Logf("SIGHUP roll of 2 children under 100 r/s: %v", res)
	if !rolled {
		t.Fatalf("roll did not finish; stderr:\n%s", s.stderr)
	}
	if res.failed.Load() != 0 || res.limited.Load() != 0 {
		t.Fatalf("requests failed during the roll: %v; stderr:\n%s", res, s.stderr)
	}
	if n := len(s.stderr.serveReadyPids()); n != 4 {
		t.Fatalf("%d children ready, want 2 + 2 new", n)
	}
	// The new children serve the same zone: its counters went on.
	if after := serveWrites(t, s.addr); after < before+100 {
		t.Fatalf("zone writes %d before the roll, %d after: the zone's state was lost", before, after)
	}
}

// serveAwaitLoad waits until the children have decided at least n
// requests between them (the zone's writes), so that what the test does
// next happens under load.
func serveAwaitLoad(t *testing.T, s *serveTestServer, n int) {
	t.Helper()
	if !serveWaitFor(5*time.Second, func() bool { return serveWrites(t, s.addr) >= n }) {
		t.Fatalf("the load did not reach %d decisions in 5s; stderr:\n%s", n, s.stderr)
	}
}

// serveWrites reads shmzone_writes_total from a child's /metrics.
func serveWrites(t *testing.T, addr string) int {
	t.Helper()
	b := serveMetricsText(t, addr)
	m := regexp.MustCompile(`(?m)^shmzone_writes_total (\d+)$`).FindStringSubmatch(b)
	if m == nil {
		t.Fatalf("no shmzone_writes_total in\n%s", b)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
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

	"github.com/shmzone/shmzone/internal/testutil"
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
	if !serveWaitFor(serveHang, func() bool { return len(s.stderr.serveReadyPids()) >= s.procs }) {
		t.Fatalf("children not ready; stderr:\n%s", s.stderr)
	}
}

// launchServe starts "worker serve" like startServe without waiting.
func launchServe(t *testing.T, procs int, args ...string) *serveTestServer {
	t.Helper()
	return launchServeEnv(t, procs, nil, args...)
}

// launchServeEnv is launchServe with env added to the master's environment.
func launchServeEnv(t *testing.T, procs int, env []string, args ...string) *serveTestServer {
	t.Helper()
	// A port that no other test, nor process, takes in the meantime: the
	// master refuses one another socket listens on.
	addr := testutil.ReservePort(t)
	zone := filepath.Join(t.TempDir(), "serve.zone")
	all := append([]string{"serve", "-procs", strconv.Itoa(procs), "-addr", addr, "-zone", zone, "-zone-size", "1048576"}, args...)
	cmd := exec.Command(os.Args[0], all...)
	cmd.Env = append(append(os.Environ(), serveTestEnv+"=1"), env...)
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
		case <-time.After(serveHang):
			cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// serveHang bounds every wait for something the test expects to happen (a
// child ready, a roll done, the load reaching the children): it is a guard
// against a hang, not a measure, so it is generous enough for a loaded
// machine and the race detector.
const serveHang = 30 * time.Second

// serveAnswer is one request of a load run: when it was sent, when its
// answer (or failure) came, and what it was.
type serveAnswer struct {
	sent, ended time.Time
	code        int    // 0 on failure
	err         error  // the client's error; nil with a code
	conn        string // the client's address on the request's connection; "" if none was made
	responded   bool   // whether a byte of the response came
}

// serveLoadResult is a load run's answers.
type serveLoadResult struct {
	answers             []serveAnswer
	ok, limited, failed int // 200, 429, anything else
}

func (r *serveLoadResult) String() string {
	s := fmt.Sprintf("200: %d, 429: %d, failed: %d, from the first request sent to the last answer %v",
		r.ok, r.limited, r.failed, r.elapsed().Round(time.Millisecond))
	for _, a := range r.answers {
		if a.err != nil || (a.code != http.StatusOK && a.code != http.StatusTooManyRequests) {
			s += fmt.Sprintf(" (first failure: %v)", a)
			break
		}
	}
	return s
}

func (a serveAnswer) String() string {
	if a.err != nil {
		return a.err.Error()
	}
	return http.StatusText(a.code)
}

// elapsed is the time from the first request sent to the last answer
// received: every decision of the run falls within it.
func (r *serveLoadResult) elapsed() time.Duration {
	if len(r.answers) == 0 {
		return 0
	}
	first, last := r.answers[0].sent, r.answers[0].ended
	for _, a := range r.answers {
		if a.sent.Before(first) {
			first = a.sent
		}
		if a.ended.After(last) {
			last = a.ended
		}
	}
	return last.Sub(first)
}

// mostAdmitted is what a limit of rate per second with burst (nodelay) lets
// through over the run: the bucket admits burst+1 requests at once, then
// rate a second of the time between its first decision's stamp and its
// last's. With -precise-clock every stamp is read after its request was
// sent and before it was answered, so that time lies within elapsed, but
// for the millisecond that a stamp's rounding down may add. (The zone's
// coarse clock would lag on a loaded machine, by as much as the scheduler
// delays its ticks, and a first stamp that lags lets the bucket admit
// rate × lag more, which no bound the test can see accounts for.)
func (r *serveLoadResult) mostAdmitted(rate, burst float64) int {
	return int(rate*(r.elapsed()+2*time.Millisecond).Seconds() + burst + 1)
}

// serveLoad sends rate requests per second to url for d, each over a new
// connection, and waits for every answer. It never retries: net/http
// retries a request only on a reused connection, and none is reused. A
// request whose connection fails is thus a failure of the run.
func serveLoad(url string, rate int, d time.Duration) *serveLoadResult {
	client := &http.Client{
		Timeout:   serveHang,
		Transport: &http.Transport{DisableKeepAlives: true},
	}
	n := int(d.Seconds() * float64(rate))
	res := &serveLoadResult{answers: make([]serveAnswer, n)}
	var wg sync.WaitGroup
	// Request i is sent at start + i/rate, at once when running late, so
	// that a busy machine sends late rather than never.
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		wg.Go(func() {
			a := &res.answers[i]
			// GotFirstResponseByte runs on the transport's goroutine.
			var responded atomic.Bool
			trace := &httptrace.ClientTrace{
				GotConn:              func(c httptrace.GotConnInfo) { a.conn = c.Conn.LocalAddr().String() },
				GotFirstResponseByte: func() { responded.Store(true) },
			}
			req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, url, nil)
			a.sent = time.Now()
			if err != nil {
				a.err, a.ended = err, a.sent
				return
			}
			resp, err := client.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				a.code = resp.StatusCode
			}
			a.err, a.ended, a.responded = err, time.Now(), responded.Load()
		})
	}
	wg.Wait()
	for _, a := range res.answers {
		switch {
		case a.err == nil && a.code == http.StatusOK:
			res.ok++
		case a.err == nil && a.code == http.StatusTooManyRequests:
			res.limited++
		default:
			res.failed++
		}
	}
	return res
}

// Must show 1: four children enforce one limit of 50 r/s: under 200 r/s,
// they admit no more than the bucket lets through over the run, measured
// from the first request sent to the last answer received.
func TestServeSharedLimit(t *testing.T) {
	t.Parallel()
	const rate, burst = 50, 5
	s := startServe(t, 4, "-rate", strconv.Itoa(rate)+"r/s", "-burst", strconv.Itoa(burst), "-nodelay", "-precise-clock")
	res := serveLoad("http://"+s.addr+"/", 200, 3*time.Second)
	t.Logf("shared zone, 4 children, %dr/s burst %d, 200 r/s for 3s: %v", rate, burst, res)
	if most := res.mostAdmitted(rate, burst); res.ok > most || res.failed != 0 {
		t.Errorf("accepted %d, want at most %d (%d/s over %v + burst %d + 1) and no failure (%v)",
			res.ok, most, rate, res.elapsed().Round(time.Millisecond), burst, res)
	}
}

// Per-process zones (-per-process, the baseline) admit more than one limit:
// each child has a bucket of its own. The rate is one a minute, so that
// what a bucket admits is its burst, whatever the time the run takes: the
// shared zone admits burst+1 in all, each private zone burst+1 of the
// requests its child got.
func TestServePerProcessLimits(t *testing.T) {
	t.Parallel()
	const burst = 10
	limit := []string{"-rate", "1r/m", "-burst", strconv.Itoa(burst), "-nodelay"}
	shared := launchServe(t, 4, limit...)
	private := launchServe(t, 4, append(limit, "-per-process")...)
	shared.waitReady(t)
	private.waitReady(t)
	var sres, pres *serveLoadResult
	var wg sync.WaitGroup
	wg.Go(func() { sres = serveLoad("http://"+shared.addr+"/", 100, 2*time.Second) })
	wg.Go(func() { pres = serveLoad("http://"+private.addr+"/", 100, 2*time.Second) })
	wg.Wait()
	t.Logf("shared zone, 4 children, 1r/m burst %d, 100 r/s for 2s: %v", burst, sres)
	t.Logf("per-process zones, same load: %v", pres)
	if most := sres.mostAdmitted(1.0/60, burst); sres.ok > most || sres.failed != 0 {
		t.Errorf("shared: accepted %d, want at most %d and no failure (%v)", sres.ok, most, sres)
	}
	// The 200 connections spread over the 4 children (SO_REUSEPORT hashes
	// their ports): the chance that one child gets all of them is 4^-199.
	if one := pres.mostAdmitted(1.0/60, burst); pres.ok <= one || pres.ok > 4*one || pres.failed != 0 {
		t.Errorf("per-process: accepted %d, want more than one limit's %d, at most 4 limits' %d, and no failure (%v)", pres.ok, one, 4*one, pres)
	}
}

// Must show 3, first half: SIGTERM lets an in-flight request finish, then the
// master exits 0.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	// -slow-path holds the request until the child is told to drain, so it
	// is in flight at SIGTERM whatever the machine's pace. The drain then
	// waits -slow for it. -drain is a guard against a hang, not a measure.
	s := startServe(t, 2, "-rate", "1000r/s", "-burst", "100", "-slow-path", "/slow", "-slow", "100ms", "-drain", serveHang.String())
	type answer struct {
		body string
		err  error
		at   time.Time
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Get("http://" + s.addr + "/slow")
		if err != nil {
			got <- answer{err: err, at: time.Now()}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- answer{body: fmt.Sprint(resp.StatusCode, " ", string(b)), err: err, at: time.Now()}
	}()
	// Each read of /metrics is a new connection, which either child may
	// get: wait until the one serving the request shows it in flight.
	if !serveWaitFor(serveHang, func() bool { return serveMetric(t, s.addr, "worker_serve_requests_in_flight") > 0 }) {
		t.Fatalf("the slow request never reached the handler; stderr:\n%s", s.stderr)
	}
	signalled := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	a := <-got
	if a.err != nil || a.body != "200 ok\n" {
		t.Fatalf("in-flight request: %q, %v; stderr:\n%s", a.body, a.err, s.stderr)
	}
	if a.at.Before(signalled) {
		t.Fatalf("the slow request was answered %v before SIGTERM, which -slow-path waits for", signalled.Sub(a.at))
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("master: %v; stderr:\n%s", err, s.stderr)
		}
		s.done <- err // for Cleanup
	case <-time.After(serveHang):
		t.Fatalf("master did not exit; stderr:\n%s", s.stderr)
	}
	for _, pid := range s.stderr.serveReadyPids() {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("child %d outlived the master", pid)
		}
	}
}

// Must show 3, second half: SIGHUP rolls every child while requests keep
// coming, and none fails. The burst exceeds the run's 200 requests, so no
// request is limited, however late the client sends them.
func TestServeRollsOnSIGHUP(t *testing.T) {
	t.Parallel()
	s := startServe(t, 2, "-rate", "1000r/s", "-burst", "1000", "-nodelay")
	done := make(chan *serveLoadResult)
	go func() { done <- serveLoad("http://"+s.addr+"/", 100, 2*time.Second) }()
	serveAwaitLoad(t, s, 20)
	s.cmd.Process.Signal(syscall.SIGHUP)
	rolled := serveWaitFor(serveHang, func() bool {
		return strings.Count(s.stderr.String(), "retired") >= 2
	})
	res := <-done
	t.Logf("SIGHUP roll of 2 children under 100 r/s: %v", res)
	if !rolled {
		t.Fatalf("roll did not finish; stderr:\n%s", s.stderr)
	}
	if res.failed != 0 || res.limited != 0 {
		t.Fatalf("requests failed during the roll: %v; stderr:\n%s", res, s.stderr)
	}
	if n := len(s.stderr.serveReadyPids()); n != 4 {
		t.Fatalf("%d children ready, want 2 + 2 new", n)
	}
	// The new children serve the same zone: it holds a write for every
	// request of the run, those the old children decided included. A
	// child adds its counts to the zone within a few hundred milliseconds
	// (dict.Dict.SyncStats), so the last ones may still be on their way.
	var writes int
	if !serveWaitFor(serveHang, func() bool {
		writes = serveMetric(t, s.addr, "shmzone_writes_total")
		return writes >= res.ok
	}) {
		t.Fatalf("zone writes %d after the roll, fewer than the %d requests admitted: the zone's state was lost", writes, res.ok)
	}
}

// serveAwaitLoad waits until the children have decided at least n
// requests between them (the zone's writes), so that what the test does
// next happens under load.
func serveAwaitLoad(t *testing.T, s *serveTestServer, n int) {
	t.Helper()
	if !serveWaitFor(serveHang, func() bool { return serveMetric(t, s.addr, "shmzone_writes_total") >= n }) {
		t.Fatalf("the load did not reach %d decisions; stderr:\n%s", n, s.stderr)
	}
}

// serveMetric reads the value of the metric name, without labels, from
// the /metrics of the child that the connection reaches.
func serveMetric(t *testing.T, addr, name string) int {
	t.Helper()
	b := serveMetricsText(t, addr)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\d+)$`).FindStringSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in\n%s", name, b)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

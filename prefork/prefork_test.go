package prefork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

func TestHelperProcess(t *testing.T) {
	testutil.RunHelper(map[string]func(args []string) error{
		"server":        helperServer,
		"failed-start":  helperFailedStart,
		"stubborn-roll": helperStubbornRoll,
		"extra-files":   helperExtraFiles,
		"broken":        helperBroken,
		"takeover":      helperTakeover,
	})
}

// helperServer runs a prefork server on args[0] with args[1] children and
// the master's reports on stdout. A child answers / with its pid, and
// /slow once it has been told to drain, having written "in flight pid=N"
// to stdout when the request came in.
func helperServer(args []string) error {
	children, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	return runHelperServer(Options{
		Addr:         args[0],
		Children:     children,
		ReadyTimeout: hang,
		DrainTimeout: hang,
	})
}

// runHelperServer runs helperServer's master with o, and its reports on
// stdout.
func runHelperServer(o Options) error {
	o.Logf = func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	return Run(context.Background(), o, func(ctx context.Context, ln net.Listener) error {
		pid := os.Getpid()
		mux := http.NewServeMux()
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "pid=%d", pid)
		})
		mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
			fmt.Printf("in flight pid=%d\n", pid)
			select {
			case <-ctx.Done():
			case <-r.Context().Done():
				return
			}
			fmt.Fprintf(w, "drained pid=%d", pid)
		})
		return Serve(ctx, &http.Server{Handler: mux}, ln, hang)
	})
}

// hang bounds every wait for something a test expects to happen: a guard
// against a hang, not a measure, generous enough for a loaded machine and
// the race detector.
const hang = time.Minute

// server is a helper master and the lines it and its children wrote.
type server struct {
	p    *testutil.Proc
	addr string
	mu   sync.Mutex
	out  strings.Builder
}

// startServer starts a helper master with n children on a free loopback
// port and waits until every child is ready.
func startServer(t *testing.T, n int) *server {
	t.Helper()
	s := &server{addr: freeAddr(t)}
	s.p = testutil.Start(t, testutil.Helper(t, "server", s.addr, strconv.Itoa(n)), func(line string) {
		s.mu.Lock()
		s.out.WriteString(line + "\n")
		s.mu.Unlock()
	})
	s.waitFor(t, "every child ready", func() bool { return len(s.pids(readyRE)) == n })
	return s
}

// freeAddr returns a loopback address whose port no other socket takes by
// binding port 0 while the test runs.
func freeAddr(t *testing.T) string {
	t.Helper()
	return testutil.ReservePort(t)
}

func (s *server) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

var (
	readyRE   = regexp.MustCompile(`child pid=(\d+) ready \(slot \d+\)`)
	retiredRE = regexp.MustCompile(`child pid=(\d+) retired`)
	flightRE  = regexp.MustCompile(`in flight pid=(\d+)`)
)

// pids returns the pids of the lines matching re, in order.
func (s *server) pids(re *regexp.Regexp) []int {
	var pids []int
	for _, m := range re.FindAllStringSubmatch(s.String(), -1) {
		p, _ := strconv.Atoi(m[1])
		pids = append(pids, p)
	}
	return pids
}

// waitFor polls cond, which reads what the processes reported, until it
// holds; it fails the test after hang.
func (s *server) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !waitFor(cond) {
		t.Fatalf("no %s within %v; output:\n%s", what, hang, s)
	}
}

func waitFor(cond func() bool) bool {
	for end := time.Now().Add(hang); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// get requests path on a new connection and returns the body.
func get(addr, path string) (string, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: hang}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(b), err
}

// answer is what get returned.
type answer struct {
	body string
	err  error
}

// getAsync runs get(addr, path) in a goroutine, for a request kept in
// flight, and returns where its answer comes.
func getAsync(addr, path string) <-chan answer {
	done := make(chan answer, 1)
	go func() {
		body, err := get(addr, path)
		done <- answer{body, err}
	}()
	return done
}

// gone reports whether pid has exited: no longer in /proc, or a zombie
// that its new parent (not this test) has yet to reap.
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	st := b[i+2]
	return st == 'Z' || st == 'X'
}

// A child killed is replaced by a new child, which serves: requests on
// new connections reach it until it answers.
func TestKilledChildIsReplaced(t *testing.T) {
	t.Parallel()
	s := startServer(t, 2)
	first := s.pids(readyRE)
	if err := syscall.Kill(first[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "replacement ready", func() bool { return len(s.pids(readyRE)) == 3 })
	if !strings.Contains(s.String(), fmt.Sprintf("child pid=%d died: signal: killed; replacing it in", first[0])) {
		t.Errorf("the master did not report child %d's death; output:\n%s", first[0], s)
	}
	repl := s.pids(readyRE)[2]
	if repl == first[0] || repl == first[1] {
		t.Fatalf("replacement pid %d is an old child's %v", repl, first)
	}
	if gone(repl) || gone(first[1]) {
		t.Fatalf("children %d and %d should run; output:\n%s", repl, first[1], s)
	}
	// The kernel spreads new connections over the two sockets: within a
	// few hundred requests, one reaches the replacement.
	served := map[string]int{}
	for i := 0; i < 1000 && served[fmt.Sprintf("pid=%d", repl)] == 0; i++ {
		body, err := get(s.addr, "/")
		if err != nil {
			t.Fatalf("request %d: %v; output:\n%s", i+1, err, s)
		}
		served[body]++
	}
	if served[fmt.Sprintf("pid=%d", repl)] == 0 {
		t.Fatalf("the replacement %d answered none of 1000 requests: %v", repl, served)
	}
	if served[fmt.Sprintf("pid=%d", first[0])] != 0 {
		t.Fatalf("the killed child answered: %v", served)
	}
}

// SIGTERM drains: a request in flight when the master gets SIGTERM is
// answered in full, every child exits, and the master exits 0.
func TestSIGTERMDrains(t *testing.T) {
	t.Parallel()
	s := startServer(t, 2)
	done := getAsync(s.addr, "/slow")
	s.waitFor(t, "request in flight", func() bool { return len(s.pids(flightRE)) == 1 })
	if err := syscall.Kill(s.p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a := <-done
	server := s.pids(flightRE)[0]
	if want := fmt.Sprintf("drained pid=%d", server); a.err != nil || a.body != want {
		t.Fatalf("request in flight at SIGTERM: %q, %v; want %q; output:\n%s", a.body, a.err, want, s)
	}
	if err := s.p.Wait(); err != nil {
		t.Fatalf("master after SIGTERM: %v; output:\n%s", err, s)
	}
	for _, pid := range s.pids(readyRE) {
		if !gone(pid) {
			t.Errorf("child %d still running after its master exited", pid)
		}
	}
	if n := len(s.pids(retiredRE)); n != 2 {
		t.Errorf("%d children retired, want 2; output:\n%s", n, s)
	}
	if _, err := get(s.addr, "/"); err == nil {
		t.Errorf("a request was served after the master exited")
	}
}

// A child ignores a SIGHUP that reaches it (a process group's hang-up,
// kill -HUP -PGID, pkill -HUP by name): it keeps its request in flight and
// answers it in full once the master drains it.
func TestChildIgnoresSIGHUP(t *testing.T) {
	t.Parallel()
	s := startServer(t, 1)
	child := s.pids(readyRE)[0]
	done := getAsync(s.addr, "/slow")
	s.waitFor(t, "request in flight", func() bool { return len(s.pids(flightRE)) == 1 })
	// The child's SIGHUP is pending before its master's SIGTERM is sent,
	// and is delivered first: a child that does not ignore it dies with
	// the request in flight.
	if err := syscall.Kill(child, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(s.p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if want := fmt.Sprintf("drained pid=%d", child); a.err != nil || a.body != want {
		t.Fatalf("request in flight at the child's SIGHUP: %q, %v; want %q; output:\n%s", a.body, a.err, want, s)
	}
	if err := s.p.Wait(); err != nil {
		t.Fatalf("master after SIGTERM: %v; output:\n%s", err, s)
	}
	if !strings.Contains(s.String(), fmt.Sprintf("child pid=%d retired: exit 0", child)) {
		t.Errorf("child %d did not retire with exit 0; output:\n%s", child, s)
	}
}

// The children exit when their master dies, even by SIGKILL. One of them
// is a replacement started by the master's loop after the first children:
// the parent-death signal follows the thread that forked a child, and the
// master forks every child from one locked thread.
func TestChildrenExitWithMaster(t *testing.T) {
	t.Parallel()
	s := startServer(t, 2)
	first := s.pids(readyRE)
	if err := syscall.Kill(first[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "replacement ready", func() bool { return len(s.pids(readyRE)) == 3 })
	pids := s.pids(readyRE)[1:]
	if err := syscall.Kill(s.p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if !waitFor(func() bool { return gone(pids[0]) && gone(pids[1]) }) {
		for _, pid := range pids {
			if !gone(pid) {
				t.Errorf("child %d alive %v after its master's SIGKILL", pid, time.Since(killed).Round(time.Millisecond))
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		t.FailNow()
	}
	t.Logf("children %v gone %v after the master's SIGKILL", pids, time.Since(killed).Round(time.Millisecond))
}

// A child that dies soon after its start is replaced after a delay that
// doubles up to BackoffMax; one that served for StableAfter at once.
func TestRestartDelay(t *testing.T) {
	m := newMaster(Options{Children: 1, StableAfter: time.Second, BackoffMin: 100 * time.Millisecond, BackoffMax: 500 * time.Millisecond})
	quick := &proc{slot: 0, ready: true, started: time.Now()}
	for i, want := range []time.Duration{100, 200, 400, 500, 500} {
		if got := m.restartDelay(quick); got != want*time.Millisecond {
			t.Fatalf("quick death %d: restartDelay = %v, want %v", i+1, got, want*time.Millisecond)
		}
	}
	stable := &proc{slot: 0, ready: true, started: time.Now().Add(-time.Second)}
	if got := m.restartDelay(stable); got != 0 {
		t.Fatalf("death after StableAfter: restartDelay = %v, want 0", got)
	}
	unready := &proc{slot: 0, started: time.Now().Add(-time.Hour)}
	if got := m.restartDelay(unready); got != 100*time.Millisecond {
		t.Fatalf("death of a child never ready, after a stable one: restartDelay = %v, want BackoffMin", got)
	}
	if got := m.restartDelay(quick); got != 200*time.Millisecond {
		t.Fatalf("quick death after one never ready: restartDelay = %v, want 200ms", got)
	}
}

func TestRunBadOptions(t *testing.T) {
	child := func(context.Context, net.Listener) error { t.Error("child called in the master"); return nil }
	for _, o := range []Options{
		{},
		{Addr: "127.0.0.1:0"},
		{Addr: "127.0.0.1"},
		{Addr: "127.0.0.1:8080", Children: -1},
		{Addr: "127.0.0.1:8080", BackoffMin: -time.Second},
		{Addr: "127.0.0.1:8080", MaxStartFailures: -1},
	} {
		if err := Run(context.Background(), o, child); !errors.Is(err, ErrBadOptions) {
			t.Errorf("Run(%+v) = %v, want ErrBadOptions", o, err)
		}
	}
}

// A port of 0 is refused however it is written, since net.Listen reads
// every spelling as 0 and would give each slot's socket its own port; a
// port net cannot read is refused too, and one it reads is kept. Options
// are checked without Run: a port let through would start a master in the
// test process.
func TestRunRefusesPortZeroHoweverWritten(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", false},
		{"127.0.0.1:00", false},
		{"127.0.0.1:+0", false},
		{"127.0.0.1:-0", false},
		{"[::1]:000", false},
		{":", false},
		{":65536", false},
		{":-1", false},
		{":nosuchservice", false},
		{"127.0.0.1:8080", true},
		{"127.0.0.1:080", true},
		{":http", true},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			err := Options{Addr: tc.addr}.check()
			if tc.ok && err != nil {
				t.Fatalf("check(Addr %q) = %v, want nil", tc.addr, err)
			}
			if !tc.ok && !errors.Is(err, ErrBadOptions) {
				t.Fatalf("check(Addr %q) = %v, want ErrBadOptions", tc.addr, err)
			}
		})
	}
}

// lines is output written by many processes, read while it is written.
type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The end of Run's context drains as SIGTERM does, and Run returns nil once
// every child has exited. The master runs in the test process; its
// children are helpers.
func TestContextEndDrains(t *testing.T) {
	addr := freeAddr(t)
	helper := testutil.Helper(t, "server", addr, "2")
	out := &lines{}
	o := Options{
		Addr:         addr,
		Children:     2,
		ReadyTimeout: hang,
		DrainTimeout: hang,
		Args:         helper.Args[1:],
		Env:          func(slot, roll int) []string { return helper.Env },
		Stdout:       out,
		Stderr:       out,
		Logf:         func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() {
		ran <- Run(ctx, o, func(context.Context, net.Listener) error { return errors.New("child called in the master") })
	}()
	count := func(re *regexp.Regexp) int { return len(re.FindAllString(out.String(), -1)) }
	if !waitFor(func() bool { return count(readyRE) == 2 }) {
		cancel()
		t.Fatalf("children not ready; Run: %v; output:\n%s", <-ran, out)
	}
	done := getAsync(addr, "/slow")
	if !waitFor(func() bool { return count(flightRE) == 1 }) {
		cancel()
		t.Fatalf("no request in flight; Run: %v; output:\n%s", <-ran, out)
	}
	cancel()
	a := <-done
	if a.err != nil || !strings.HasPrefix(a.body, "drained pid=") {
		t.Errorf("request in flight when the context ended: %q, %v; output:\n%s", a.body, a.err, out)
	}
	if err := <-ran; err != nil {
		t.Fatalf("Run = %v, want nil after a drain; output:\n%s", err, out)
	}
	if n := count(retiredRE); n != 2 {
		t.Errorf("%d children retired, want 2; output:\n%s", n, out)
	}
	for _, m := range readyRE.FindAllStringSubmatch(out.String(), -1) {
		pid, _ := strconv.Atoi(m[1])
		if !gone(pid) {
			t.Errorf("child %d running after Run returned", pid)
		}
	}
}

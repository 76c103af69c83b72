package testutil

// prefork.go: the prefork tests of the contrib middlewares, which run a
// real prefork server of their framework, its children real processes
// listening with SO_REUSEPORT, over one zone.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The prefork test server's limit and shape.
const (
	PreforkLimit  = 300 // requests per client per minute
	PreforkProcs  = 4   // children
	PreforkConns  = 32  // connections per client
	PreforkFactor = 3   // requests sent per client: factor × limit
)

// PreforkServer is what a prefork test server reads from its environment.
// It names the zone to open and the address to listen on.
type PreforkServer struct {
	Zone, Addr string
	ready      string
}

// Ready tells the test that this child listens. It makes a file named by
// its pid in the ready directory.
func (s PreforkServer) Ready() error {
	return os.WriteFile(filepath.Join(s.ready, strconv.Itoa(os.Getpid())), nil, 0o644)
}

// PreforkMain is a TestMain's first step. The prefork server of the tests
// runs in the test binary. StartPrefork re-executes the binary with
// prefix+"_HELPER" set, as the os/exec TestHelperProcess pattern does. The
// framework's prefork re-executes it again for each child, with the same
// arguments and environment. There PreforkMain runs serve and exits.
// Elsewhere it returns.
//
// serve is the server of the tests. Every request to "/" is limited per
// client address by a Count of PreforkLimit per minute. Every answer names
// the child's pid in X-Pid. Each child calls Ready once it listens.
func PreforkMain(prefix string, serve func(PreforkServer) error) {
	if os.Getenv(prefix+"_HELPER") != "prefork" {
		return
	}
	s := PreforkServer{Zone: os.Getenv(prefix + "_ZONE"), Addr: os.Getenv(prefix + "_ADDR"), ready: os.Getenv(prefix + "_READY")}
	if err := serve(s); err != nil {
		fmt.Fprintln(os.Stderr, "prefork server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// StartPrefork starts the prefork server (PreforkMain) over zone with
// PreforkProcs children. It returns the server's address and the
// children's pids once every child listens. The frameworks start
// GOMAXPROCS children, whatever the machine's cores. GOMAXPROCS in the
// master's environment sets their number. The server's process group is
// killed when the test ends.
func StartPrefork(t testing.TB, prefix, zone string) (addr string, pids []string) {
	t.Helper()
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	if err := os.Mkdir(ready, 0o755); err != nil {
		t.Fatal(err)
	}
	addr = FreeAddr(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		prefix+"_HELPER=prefork", prefix+"_ZONE="+zone, prefix+"_ADDR="+addr, prefix+"_READY="+ready,
		"GOMAXPROCS="+strconv.Itoa(PreforkProcs))
	exited := StartGroup(t, cmd)
	deadline := time.Now().Add(30 * time.Second)
	for {
		entries, _ := os.ReadDir(ready)
		if len(entries) == PreforkProcs {
			for _, e := range entries {
				pids = append(pids, e.Name())
			}
			return addr, pids
		}
		select {
		case err := <-exited:
			t.Fatalf("prefork server exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d children listening after 30s", len(entries), PreforkProcs)
		}
	}
}

// FreeAddr returns a loopback address with a port no one listens on, and
// that no other socket gets until the test ends: it is ReservePort's.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return ReservePort(t)
}

// ClientFrom returns an HTTP client whose connections leave from the
// loopback address src. keepAlive false makes each request a new
// connection.
func ClientFrom(src string, keepAlive bool) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			DisableKeepAlives:   !keepAlive,
			MaxIdleConnsPerHost: 1,
		},
	}
}

// preforkAnswer is what CheckPreforkLimit keeps of a response.
type preforkAnswer struct {
	status int
	pid    string
	h      http.Header
}

// CheckPreforkLimit checks the prefork server at addr, with children pids.
// It must admit exactly the limit per client across all of them. Each
// client's requests spread over many connections, and so over the
// children. The headers must be right.
func CheckPreforkLimit(t testing.TB, addr string, pids []string) {
	t.Helper()
	clients := []string{"127.0.0.1", "127.0.0.2"}
	answers := preforkAnswers(t, addr, clients)
	for _, src := range clients {
		checkPreforkClient(t, src, answers[src], pids)
	}
}

// preforkAnswers sends PreforkFactor × PreforkLimit requests from each of
// clients to the server at addr. Each client spreads them over
// PreforkConns connections. preforkAnswers returns the answers by client.
func preforkAnswers(t testing.TB, addr string, clients []string) map[string][]preforkAnswer {
	t.Helper()
	answers := make(map[string][]preforkAnswer)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(clients)*PreforkConns)
	for _, src := range clients {
		for c := range PreforkConns {
			// One persistent connection per goroutine: the kernel gives
			// each new connection to one child (SO_REUSEPORT).
			n := PreforkFactor * PreforkLimit / PreforkConns
			if c < PreforkFactor*PreforkLimit%PreforkConns {
				n++
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				hc := ClientFrom(src, true)
				defer hc.CloseIdleConnections()
				var mine []preforkAnswer
				for range n {
					resp, err := hc.Get("http://" + addr + "/")
					if err != nil {
						errs <- err
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					mine = append(mine, preforkAnswer{resp.StatusCode, resp.Header.Get("X-Pid"), resp.Header})
				}
				mu.Lock()
				answers[src] = append(answers[src], mine...)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return answers
}

// preforkRateLimit matches the RateLimit header of an answer.
var preforkRateLimit = regexp.MustCompile(`^"default";r=(\d+);t=(\d+)$`)

// preforkMaxReset is the most seconds a reset or retry may give. The
// window is 60 s, rounded up to whole seconds. A reset is 61 when the child
// that reads the key's TTL has a zone clock a little behind the one that
// started the window. Each process's coarse clock ticks on its own.
const preforkMaxReset = 61

// checkPreforkClient checks as, the answers to client src. Exactly
// PreforkLimit must be admitted, each with a remaining quota of its own.
// Each child in pids must have served some.
func checkPreforkClient(t testing.TB, src string, as []preforkAnswer, pids []string) {
	t.Helper()
	if len(as) != PreforkFactor*PreforkLimit {
		t.Fatalf("%s: %d answers, want %d", src, len(as), PreforkFactor*PreforkLimit)
	}
	var remaining []int
	served := map[string]int{}
	rejected := 0
	for _, a := range as {
		served[a.pid]++
		if rem, admitted := checkPreforkAnswer(t, src, a); admitted {
			remaining = append(remaining, rem)
		} else {
			rejected++
		}
	}
	if len(remaining) != PreforkLimit || rejected != len(as)-PreforkLimit {
		t.Errorf("%s: admitted %d, rejected %d; want exactly %d admitted", src, len(remaining), rejected, PreforkLimit)
	}
	// Each admission is one atomic decision: the remaining quotas
	// the allowed requests saw are limit-1 … 0, each once.
	slices.Sort(remaining)
	for i, r := range remaining {
		if r != i {
			t.Errorf("%s: allowed requests saw remaining %v…, want 0…%d each once", src, remaining[:min(len(remaining), i+3)], PreforkLimit-1)
			break
		}
	}
	for _, pid := range pids {
		if served[pid] == 0 {
			t.Errorf("%s: child %s served none of %d connections (served: %v)", src, pid, PreforkConns, served)
		}
	}
	if len(served) != PreforkProcs {
		t.Errorf("%s: served by %v, want the %d children %v", src, served, PreforkProcs, pids)
	}
	t.Logf("%s: %d admitted, %d rejected, per child %v", src, len(remaining), rejected, served)
}

// checkPreforkAnswer checks the status and headers of a, an answer to
// client src. It returns the remaining quota that a reports, and whether
// a admits the request.
func checkPreforkAnswer(t testing.TB, src string, a preforkAnswer) (rem int, admitted bool) {
	t.Helper()
	h := a.h
	if p := h.Get("RateLimit-Policy"); p != `"default";q=300;w=60` {
		t.Fatalf("%s: RateLimit-Policy %q", src, p)
	}
	if v := h.Get("X-RateLimit-Limit"); v != "300" {
		t.Fatalf("%s: X-RateLimit-Limit %q", src, v)
	}
	rem, err1 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	reset, err2 := strconv.Atoi(h.Get("X-RateLimit-Reset"))
	m := preforkRateLimit.FindStringSubmatch(h.Get("RateLimit"))
	if err1 != nil || err2 != nil || m == nil || m[1] != strconv.Itoa(rem) || reset < 1 || reset > preforkMaxReset {
		t.Fatalf("%s: bad headers %v", src, h)
	}
	switch a.status {
	case http.StatusOK:
		if m[2] != strconv.Itoa(reset) {
			t.Fatalf("%s: RateLimit t=%s, X-RateLimit-Reset %d", src, m[2], reset)
		}
		return rem, true
	case http.StatusTooManyRequests:
		ra, err := strconv.Atoi(h.Get("Retry-After"))
		if err != nil || ra < 1 || ra > preforkMaxReset || rem != 0 || m[2] != strconv.Itoa(ra) {
			t.Fatalf("%s: rejection with Retry-After %q, remaining %d, RateLimit %q", src, h.Get("Retry-After"), rem, h.Get("RateLimit"))
		}
		return rem, false
	default:
		t.Fatalf("%s: status %d", src, a.status)
		return rem, false
	}
}

// StartGroup starts cmd in a process group of its own. Its output goes to
// the test's stderr. The group is killed, and waited for, when the test
// ends. StartGroup returns what cmd's Wait returns once cmd has exited.
func StartGroup(t testing.TB, cmd *exec.Cmd) <-chan error {
	t.Helper()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	return exited
}

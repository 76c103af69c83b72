package testutil

// runcheck.go: the checks of a server of the contrib modules run under
// package prefork (StartMaster). Such a server answers "hello from pid N"
// from child N, or 429 once a client's limit is spent; or, for
// CheckRunDrain, holds every request until its child drains.

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// getFrom requests path from addr on a new connection that leaves from the
// loopback address src, and returns the status and the body.
func getFrom(src, addr, path string) (int, string, error) {
	resp, err := ClientFrom(src, false).Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// servedBy returns the pid that a body "hello from pid N" names.
func servedBy(body string) (int, error) {
	var pid int
	if _, err := fmt.Sscanf(body, "hello from pid %d\n", &pid); err != nil {
		return 0, fmt.Errorf("body %q names no pid: %w", body, err)
	}
	return pid, nil
}

// CheckRunLimit checks the server of m at addr. It must admit exactly
// limit requests of one client across its children. Each request goes on a
// new connection. Every ready child must admit some.
func CheckRunLimit(t testing.TB, m *Master, addr string, limit int) {
	t.Helper()
	pids := m.Pids(ReadyRE)
	const workers = 8
	sent := limit * 3 / 2
	var mu sync.Mutex
	served := map[int]int{}
	rejected := 0
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < sent; i += workers {
				status, body, err := getFrom("127.0.0.1", addr, "/")
				if err != nil {
					errs <- fmt.Errorf("request %d: %w", i+1, err)
					return
				}
				mu.Lock()
				switch status {
				case http.StatusOK:
					var pid int
					if pid, err = servedBy(body); err == nil {
						served[pid]++
					}
				case http.StatusTooManyRequests:
					rejected++
				default:
					err = fmt.Errorf("request %d: status %d, body %q", i+1, status, body)
				}
				mu.Unlock()
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v; output:\n%s", err, m)
	}
	admitted := 0
	for pid, n := range served {
		admitted += n
		if !slices.Contains(pids, pid) {
			t.Errorf("pid %d, no ready child of %v, admitted %d", pid, pids, n)
		}
	}
	if admitted != limit || rejected != sent-limit {
		t.Errorf("of %d requests, %d admitted and %d rejected; want %d admitted", sent, admitted, rejected, limit)
	}
	for _, pid := range pids {
		if served[pid] == 0 {
			t.Errorf("child %d admitted none of %d requests (admitted: %v)", pid, limit, served)
		}
	}
	t.Logf("%d admitted, %d rejected, per child %v", admitted, rejected, served)
}

// CheckRunRollAndReplace checks that SIGHUP to the master of m replaces
// each of its children. The old are retired once the new are ready. Only
// the new children serve then. It then kills a new child. It checks that a
// replacement starts and serves.
func CheckRunRollAndReplace(t testing.TB, m *Master, addr string) {
	t.Helper()
	old := m.Pids(ReadyRE)
	n := len(old)
	if err := syscall.Kill(m.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	m.WaitFor(t, fmt.Sprintf("%d children retired", n), func() bool { return len(m.Pids(RetiredRE)) == n })
	ready, retired := m.Pids(ReadyRE), m.Pids(RetiredRE)
	if len(ready) != 2*n {
		t.Fatalf("%d children ready, want %d old and %d new; output:\n%s", len(ready), n, n, m)
	}
	fresh := ready[n:]
	slices.Sort(old)
	if slices.Sort(retired); !slices.Equal(retired, old) {
		t.Fatalf("retired %v, want the old children %v; output:\n%s", retired, old, m)
	}
	for i := range 4 * n {
		status, body, err := getFrom("127.0.0.2", addr, "/")
		if err != nil || status != http.StatusOK {
			t.Fatalf("request %d after the roll: %d %q, %v; output:\n%s", i+1, status, body, err, m)
		}
		if pid, err := servedBy(body); err != nil || !slices.Contains(fresh, pid) {
			t.Fatalf("request %d after the roll answered %q, not by a new child %v", i+1, body, fresh)
		}
	}
	if err := syscall.Kill(fresh[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m.WaitFor(t, "a replacement ready", func() bool { return len(m.Pids(ReadyRE)) == 2*n+1 })
	if !slices.Contains(m.Pids(DiedRE), fresh[0]) {
		t.Errorf("the master did not report child %d's death; output:\n%s", fresh[0], m)
	}
	// The kernel spreads new connections over the sockets: one of a few
	// dozen reaches the replacement's. A client has a budget of tries.
	const tries = 100
	repl := m.Pids(ReadyRE)[2*n]
	for i := 0; ; i++ {
		if i == tries {
			t.Fatalf("the replacement %d answered none of %d requests; output:\n%s", repl, tries, m)
		}
		status, body, err := getFrom("127.0.0.3", addr, "/")
		if err != nil || status != http.StatusOK {
			t.Fatalf("request %d after the kill: %d %q, %v; output:\n%s", i+1, status, body, err, m)
		}
		pid, err := servedBy(body)
		if err != nil || pid == fresh[0] {
			t.Fatalf("request %d after the kill answered %q", i+1, body)
		}
		if pid == repl {
			break
		}
	}
}

// running returns the pids of m's children that are ready and have not
// retired or died.
func running(m *Master) []int {
	gone := append(m.Pids(RetiredRE), m.Pids(DiedRE)...)
	var pids []int
	for _, pid := range m.Pids(ReadyRE) {
		if !slices.Contains(gone, pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// CheckRunMasterKilled checks that every child of m exits once SIGKILL has
// killed the master. No one answers at addr then. It waits for the
// children's exits, for Hang at most.
func CheckRunMasterKilled(t testing.TB, m *Master, addr string) {
	t.Helper()
	pids := running(m)
	exits := make([]<-chan struct{}, len(pids))
	for i, pid := range pids {
		exits[i] = Exit(t, pid)
	}
	if status, body, err := getFrom("127.0.0.4", addr, "/"); err != nil || status != http.StatusOK {
		t.Fatalf("request before the kill: %d %q, %v; output:\n%s", status, body, err, m)
	}
	if err := syscall.Kill(m.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if !waitExits(t, pids, exits, "its master's SIGKILL") {
		t.FailNow()
	}
	t.Logf("children %v gone %v after the master's SIGKILL", pids, time.Since(killed).Round(time.Millisecond))
	if status, body, err := getFrom("127.0.0.4", addr, "/"); err == nil {
		t.Fatalf("answered after every child exited: %d %q", status, body)
	}
}

// waitExits waits until each process of pids has exited, as told by its
// channel of exits, for Hang at most. It reports each process still
// running then as an error of t, naming what it outlived, and kills it.
// It returns whether every process exited.
func waitExits(t testing.TB, pids []int, exits []<-chan struct{}, outlived string) bool {
	t.Helper()
	guard := time.After(Hang)
	expired, ok := false, true
	for i, pid := range pids {
		if !expired {
			select {
			case <-exits[i]:
				continue
			case <-guard:
				expired = true
			}
		}
		select {
		case <-exits[i]:
		default:
			t.Errorf("child %d running %v after %s", pid, Hang, outlived)
			syscall.Kill(pid, syscall.SIGKILL)
			ok = false
		}
	}
	return ok
}

// CheckRunDrain checks that a child told to drain answers a request in
// flight in full. It checks an old child when SIGHUP rolls. It checks again
// at SIGTERM. After that the master exits 0, and every child has exited.
// Each child of m holds every request until it drains. It answers
// "drained pid=N". It has written "in flight pid=N" on stdout when the
// request came in.
func CheckRunDrain(t testing.TB, m *Master, addr string) {
	t.Helper()
	flight := regexp.MustCompile(`in flight pid=(\d+)`)
	for i, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		pids := running(m)
		exits := make([]<-chan struct{}, len(pids))
		for j, pid := range pids {
			exits[j] = Exit(t, pid)
		}
		type answer struct {
			status int
			body   string
			err    error
		}
		done := make(chan answer, 1)
		go func() {
			status, body, err := getFrom("127.0.0.5", addr, "/slow")
			done <- answer{status, body, err}
		}()
		m.WaitFor(t, "a request in flight", func() bool { return len(m.Pids(flight)) == i+1 })
		child := m.Pids(flight)[i]
		if err := syscall.Kill(m.Pid(), sig); err != nil {
			t.Fatal(err)
		}
		a := <-done
		if want := fmt.Sprintf("drained pid=%d", child); a.err != nil || a.status != http.StatusOK || a.body != want {
			t.Fatalf("request in flight at %v: %d %q, %v; want %q; output:\n%s", sig, a.status, a.body, a.err, want, m)
		}
		if sig == syscall.SIGHUP {
			m.WaitFor(t, "the old children retired", func() bool { return len(m.Pids(RetiredRE)) == len(pids) })
			continue
		}
		if err := m.Wait(); err != nil {
			t.Fatalf("master after SIGTERM: %v; output:\n%s", err, m)
		}
		waitExits(t, pids, exits, "its master exited")
	}
}

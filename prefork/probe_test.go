package prefork

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

// helperTakeover runs helperServer's master with one child on args[0] and
// Takeover set.
func helperTakeover(args []string) error {
	return runHelperServer(Options{
		Addr:         args[0],
		Children:     1,
		ReadyTimeout: hang,
		DrainTimeout: hang,
		Takeover:     true,
	})
}

// runSecond runs, in the test process, a master on addr with one child and
// o's Takeover, and returns Run's error. Its context has already ended: a
// master that got past its checks would drain at once. Its children would
// be helper servers, not the test binary's tests.
func runSecond(t *testing.T, addr string, takeover bool) error {
	t.Helper()
	helper := testutil.Helper(t, "server", addr, "1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := Options{
		Addr:     addr,
		Children: 1,
		Takeover: takeover,
		Args:     helper.Args[1:],
		Env:      func(slot, roll int) []string { return helper.Env },
	}
	return Run(ctx, o, func(context.Context, net.Listener) error { return errors.New("child called in the master") })
}

// checkRefused fails the test unless err is Run's refusal of addr, held
// by pid.
func checkRefused(t *testing.T, err error, addr string, pid int) {
	t.Helper()
	if !errors.Is(err, ErrAddrInUse) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("Run = %v, want ErrAddrInUse wrapping EADDRINUSE", err)
	}
	for _, want := range []string{
		"prefork: address in use: " + addr + " is already served by another listening socket",
		"set Options.Takeover",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run = %q, want it to hold %q", err, want)
		}
	}
	if !strings.Contains(err.Error()+",", " "+strconv.Itoa(pid)+",") && !strings.Contains(err.Error(), " "+strconv.Itoa(pid)+")") {
		t.Errorf("Run = %q, want it to name pid %d", err, pid)
	}
}

// A second master on the address of a running one is refused, though
// SO_REUSEPORT would let it bind: the error names the address, the first
// master's pid and Options.Takeover. The first master serves on.
func TestSecondMasterIsRefused(t *testing.T) {
	s := startServer(t, 1)
	checkRefused(t, runSecond(t, s.addr, false), s.addr, s.p.Pid())
	child := s.pids(readyRE)[0]
	body, err := get(s.addr, "/")
	if want := fmt.Sprintf("pid=%d", child); err != nil || body != want {
		t.Fatalf("GET / = %q, %v; want %q from the first master's child; output:\n%s", body, err, want, s)
	}
}

// An address held by a plain listener, without SO_REUSEPORT, is refused
// too. With Takeover the bind itself fails.
func TestPlainListenerIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	checkRefused(t, runSecond(t, addr, false), addr, syscall.Getpid())
	err = runSecond(t, addr, true)
	if !errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, ErrAddrInUse) {
		t.Fatalf("Run with Takeover = %v, want EADDRINUSE from the bind", err)
	}
}

// With Takeover, a new master starts beside a running one, as in an
// upgrade, and serves alone once the old one has drained.
func TestTakeoverStartsBesideOldMaster(t *testing.T) {
	t.Parallel()
	old := startServer(t, 1)
	s := &server{addr: old.addr}
	s.p = testutil.Start(t, testutil.Helper(t, "takeover", s.addr), func(line string) {
		s.mu.Lock()
		s.out.WriteString(line + "\n")
		s.mu.Unlock()
	})
	s.waitFor(t, "the new master's child ready", func() bool { return len(s.pids(readyRE)) == 1 })
	if err := syscall.Kill(old.p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := old.p.Wait(); err != nil {
		t.Fatalf("old master after SIGTERM: %v; output:\n%s", err, old)
	}
	child := s.pids(readyRE)[0]
	for i := range 20 {
		body, err := get(s.addr, "/")
		if want := fmt.Sprintf("pid=%d", child); err != nil || body != want {
			t.Fatalf("request %d after the old master left: %q, %v; want %q; output:\n%s", i+1, body, err, want, s)
		}
	}
}

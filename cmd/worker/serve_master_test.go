package main

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// serveProcGone reports whether pid has exited: no longer in /proc, or a
// zombie that its new parent (not this test) has yet to reap.
func serveProcGone(pid int) bool {
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

// The children get SIGTERM when the master dies (Pdeathsig), even by
// SIGKILL, and exit: none outlives it by more than its drain of no
// requests. One of them is a replacement, started by the master's loop
// after the first children: Pdeathsig follows the thread that forked a
// child, and the master forks every child from one locked thread.
func TestServeChildrenExitWithMaster(t *testing.T) {
	t.Parallel()
	s := startServe(t, 2, "-rate", "1000r/s", "-burst", "100")
	first := s.stderr.serveReadyPids()
	if err := syscall.Kill(first[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !serveWaitFor(5*time.Second, func() bool { return len(s.stderr.serveReadyPids()) == 3 }) {
		t.Fatalf("no replacement for child %d; stderr:\n%s", first[0], s.stderr)
	}
	pids := s.stderr.serveReadyPids()[1:]
	for _, pid := range pids {
		if serveProcGone(pid) {
			t.Fatalf("child %d gone before the master died; stderr:\n%s", pid, s.stderr)
		}
	}
	// Not waiting for the master: its Wait returns only once the children
	// close the stderr they inherited.
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	gone := serveWaitFor(3*time.Second, func() bool {
		for _, pid := range pids {
			if !serveProcGone(pid) {
				return false
			}
		}
		return true
	})
	if !gone {
		for _, pid := range pids {
			if !serveProcGone(pid) {
				t.Errorf("child %d alive %v after the master's SIGKILL", pid, time.Since(killed).Round(time.Millisecond))
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		t.Fatalf("stderr:\n%s", s.stderr)
	}
	t.Logf("children %v gone %v after the master's SIGKILL", pids, time.Since(killed).Round(time.Millisecond))
}

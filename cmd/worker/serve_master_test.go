package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
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
// SIGKILL, and exit, having no request to drain. One of them is a replacement, started by the master's loop
// after the first children: Pdeathsig follows the thread that forked a
// child, and the master forks every child from one locked thread.
func TestServeChildrenExitWithMaster(t *testing.T) {
	t.Parallel()
	s := startServe(t, 2, "-rate", "1000r/s", "-burst", "100")
	first := s.stderr.serveReadyPids()
	if err := syscall.Kill(first[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !serveWaitFor(serveHang, func() bool { return len(s.stderr.serveReadyPids()) == 3 }) {
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
	gone := serveWaitFor(serveHang, func() bool {
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

var (
	serveUnreadyRE = regexp.MustCompile(`child pid=(\d+) not ready in`)
	serveRollEndRE = regexp.MustCompile(`ready \(slot \d+\)|keeps its child`)
)

// A SIGHUP roll whose new children never listen (-unready-roll) does not
// take the service down: the master kills each after -ready-timeout, the
// old children keep their slots and no request fails. A later SIGHUP rolls
// normally. The burst exceeds the run's 200 requests, so no request is
// limited, however late the client sends them.
func TestServeRollSurvivesUnreadyChild(t *testing.T) {
	t.Parallel()
	s := startServe(t, 2, "-rate", "1000r/s", "-burst", "1000", "-nodelay", "-ready-timeout", "3s", "-unready-roll", "1")
	old := s.stderr.serveReadyPids()
	done := make(chan *serveLoadResult)
	go func() { done <- serveLoad("http://"+s.addr+"/", 100, 2*time.Second) }()
	serveAwaitLoad(t, s, 10)

	// A loaded machine may give up children before the roll too: only
	// the roll's count.
	since := len(s.stderr.String())
	s.cmd.Process.Signal(syscall.SIGHUP)
	unready := func() []int {
		var pids []int
		for _, m := range serveUnreadyRE.FindAllStringSubmatch(s.stderr.String()[since:], -1) {
			p, _ := strconv.Atoi(m[1])
			pids = append(pids, p)
		}
		return pids
	}
	if !serveWaitFor(serveHang, func() bool { return len(unready()) == 2 }) {
		t.Fatalf("the unready children were not given up; stderr:\n%s", s.stderr)
	}
	for _, pid := range unready() {
		if !serveWaitFor(serveHang, func() bool { return serveProcGone(pid) }) {
			t.Errorf("unready child %d not killed", pid)
		}
	}
	if n := len(s.stderr.serveReadyPids()); n != 2 {
		t.Errorf("%d children ready after the failed roll, want the 2 old ones", n)
	}
	for _, pid := range old {
		if serveProcGone(pid) || strings.Contains(s.stderr.String(), fmt.Sprintf("pid=%d retired", pid)) {
			t.Errorf("old child %d left during the failed roll", pid)
		}
	}

	// A new child that a loaded machine starts later than -ready-timeout
	// is given up as the unready ones were, and its slot keeps the old
	// child: then the test rolls again.
	retired := func() bool {
		for _, pid := range old {
			if !strings.Contains(s.stderr.String(), fmt.Sprintf("pid=%d retired", pid)) {
				return false
			}
		}
		return true
	}
	rolled := false
	for try := 0; try < 5 && !rolled; try++ {
		from := len(s.stderr.String())
		s.cmd.Process.Signal(syscall.SIGHUP)
		ended := func() int { // slots whose roll ended: a new child ready, or given up
			return len(serveRollEndRE.FindAllString(s.stderr.String()[from:], -1))
		}
		if !serveWaitFor(serveHang, func() bool { return ended() >= 2 }) {
			t.Fatalf("the roll did not end; stderr:\n%s", s.stderr)
		}
		rolled = !strings.Contains(s.stderr.String()[from:], "keeps its child") &&
			serveWaitFor(serveHang, retired)
	}
	res := <-done
	t.Logf("a failed and a good roll of 2 children under 100 r/s: %v", res)
	if !rolled {
		t.Fatalf("the second roll did not retire the old children; stderr:\n%s", s.stderr)
	}
	if res.failed != 0 || res.limited != 0 {
		t.Fatalf("requests failed: %v; stderr:\n%s", res, s.stderr)
	}
}

var serveDiedRE = regexp.MustCompile(`child pid=\d+ died: .*; replacing it in (\S+)`)

// A child that cannot start is retried with a growing delay, not in a tight
// loop, and the slot serves again once the cause is gone. The zone path is
// pointed at a garbage file (the running children keep the real zone, which
// they have mapped), so every replacement fails to open it and exits.
// -max-start-failures is high: the master must not give up before the test
// puts the zone back.
func TestServeRestartBacksOff(t *testing.T) {
	t.Parallel()
	s := startServe(t, 2, "-rate", "1000r/s", "-burst", "100", "-nodelay", "-max-start-failures", "1000")
	saved := s.zone + ".saved"
	if err := os.Link(s.zone, saved); err != nil {
		t.Fatal(err)
	}
	bad := s.zone + ".bad"
	if err := os.WriteFile(bad, bytes.Repeat([]byte("not a zone "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bad, s.zone); err != nil {
		t.Fatal(err)
	}
	victim := s.stderr.serveReadyPids()[0]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// The victim and three replacements that cannot open the zone: the
	// delays after them must grow from serveBackoffMin, and the master
	// must really wait them out. Without a delay, the replacements die
	// every few milliseconds.
	deathsOf := func() [][]string { return serveDiedRE.FindAllStringSubmatch(s.stderr.String(), -1) }
	if !serveWaitFor(serveHang, func() bool { return len(deathsOf()) >= 4 }) {
		t.Fatalf("fewer than 4 child deaths of a zone that cannot open; stderr:\n%s", s.stderr)
	}
	took := time.Since(killed)
	deaths := deathsOf()[:4]
	// The victim's delay is 0 if it had served for serveStableAfter.
	var waited, prev time.Duration
	for i, m := range deaths {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		want := max(2*prev, serveBackoffMin)
		if i > 0 && d != want {
			t.Fatalf("restart delay %d is %v after %v, want %v; stderr:\n%s", i, d, prev, want, s.stderr)
		}
		if i < 3 {
			waited += d
		}
		prev = d
	}
	if took < waited {
		t.Fatalf("4 deaths %v after the kill, but the delays between them add up to %v; stderr:\n%s", took, waited, s.stderr)
	}
	select {
	case err := <-s.done:
		t.Fatalf("the master exited (%v) while a slot could not start; stderr:\n%s", err, s.stderr)
	default:
	}

	if err := os.Rename(saved, s.zone); err != nil {
		t.Fatal(err)
	}
	if !serveWaitFor(serveBackoffMax+serveHang, func() bool { return len(s.stderr.serveReadyPids()) == 3 }) {
		t.Fatalf("no child ready once the zone was back; stderr:\n%s", s.stderr)
	}
}

var serveLateRE = regexp.MustCompile(`child pid=(\d+) not ready in \S+; killing it\n`)

// A replacement child that never listens is killed after -ready-timeout
// and replaced in turn, until one listens. Here replacements block in
// dict.Open on the zone file's flock, which the test holds, as a process
// stuck creating the zone would; once it is released, a replacement that a
// loaded machine starts late is only replaced once more.
func TestServeUnreadyChildIsReplaced(t *testing.T) {
	t.Parallel()
	s := startServe(t, 2, "-rate", "1000r/s", "-burst", "100", "-nodelay", "-ready-timeout", "1s")
	f, err := os.OpenFile(s.zone, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// A loaded machine may kill late children at the start too: only the
	// replacements' count.
	since := len(s.stderr.String())
	if err := syscall.Kill(s.stderr.serveReadyPids()[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !serveWaitFor(serveHang, func() bool { return len(serveLateRE.FindAllString(s.stderr.String()[since:], -1)) >= 2 }) {
		t.Fatalf("replacements stuck before listening were not killed; stderr:\n%s", s.stderr)
	}
	if n := len(s.stderr.serveReadyPids()); n != 2 {
		t.Fatalf("%d children ready while the zone was locked, want the 2 first; stderr:\n%s", n, s.stderr)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if !serveWaitFor(serveBackoffMax+serveHang, func() bool { return len(s.stderr.serveReadyPids()) == 3 }) {
		t.Fatalf("no child ready once the zone was unlocked; stderr:\n%s", s.stderr)
	}
	// Every child killed for lateness has exited: no replacement is left
	// blocked behind the lock.
	for _, m := range serveLateRE.FindAllStringSubmatch(s.stderr.String(), -1) {
		pid, _ := strconv.Atoi(m[1])
		if !serveWaitFor(serveHang, func() bool { return serveProcGone(pid) }) {
			t.Errorf("child %d, killed for not listening, is still running", pid)
		}
	}
}

// The master's listening sockets stay non-blocking while it starts
// children: their open file descriptions are the children's, and a child
// whose accept blocks in the kernel cannot drain. Starting a child passes
// the socket to os/exec, which reads its Fd; a child of an -unready-roll
// never opens a listener of its own, which would make the socket
// non-blocking again.
func TestServeSocketsStayNonblocking(t *testing.T) {
	t.Parallel()
	s := startServe(t, 2, "-rate", "1000r/s", "-burst", "100", "-ready-timeout", "1h", "-unready-roll", "1")
	master := s.cmd.Process.Pid
	s.cmd.Process.Signal(syscall.SIGHUP)
	children := func() int {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", master, master))
		return len(strings.Fields(string(b)))
	}
	if !serveWaitFor(serveHang, func() bool { return children() == 3 }) {
		t.Fatalf("the roll started no child; stderr:\n%s", s.stderr)
	}
	dir := fmt.Sprintf("/proc/%d/fd", master)
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sockets := 0
	for _, fd := range fds {
		if link, err := os.Readlink(dir + "/" + fd.Name()); err != nil || !strings.HasPrefix(link, "socket:") {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", master, fd.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^flags:\s+([0-7]+)$`).FindSubmatch(info)
		if m == nil {
			t.Fatalf("no flags in fdinfo %s:\n%s", fd.Name(), info)
		}
		flags, _ := strconv.ParseUint(string(m[1]), 8, 64)
		if flags&syscall.O_NONBLOCK == 0 {
			t.Errorf("the master's socket fd %s is blocking (flags %s)", fd.Name(), m[1])
		}
		sockets++
	}
	if sockets < 2 {
		t.Fatalf("%d sockets in the master, want its 2 listeners", sockets)
	}
}

// A master whose children cannot start gives up after -max-start-failures
// of them in a row: it exits 1, names the failure, and closes the address,
// so that a client is refused instead of waiting. The zone is replaced by a
// garbage file once the first child serves, and that child is killed: every
// replacement then fails to open the zone.
func TestServeGivesUpOnChildrenThatCannotStart(t *testing.T) {
	t.Parallel()
	s := startServe(t, 1, "-rate", "1000r/s", "-burst", "100", "-max-start-failures", "2")
	bad := s.zone + ".bad"
	if err := os.WriteFile(bad, bytes.Repeat([]byte("not a zone "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bad, s.zone); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(s.stderr.serveReadyPids()[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-s.done:
		s.done <- err // for the cleanup, which waits for it too
	case <-time.After(serveHang):
		t.Fatalf("the master still runs %v after its children failed to start; stderr:\n%s", serveHang, s.stderr)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("master exited with %v, want exit status 1; stderr:\n%s", err, s.stderr)
	}
	want := regexp.MustCompile(`worker serve: prefork: children cannot start: slot 0: 2 children in a row exited before they were ready; the last, pid=\d+: exit status 1\n`)
	if !want.MatchString(s.stderr.String()) {
		t.Fatalf("stderr does not match %q:\n%s", want, s.stderr)
	}
	c, err := net.Dial("tcp", s.addr)
	if err == nil {
		c.Close()
		t.Fatalf("dial %s succeeded after the master gave up", s.addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s after the master gave up: %v, want connection refused", s.addr, err)
	}
}

// A second master on the address of a running one exits 1 with an error
// that says so, though SO_REUSEPORT would let it bind. With -takeover it
// starts beside the first, as in an upgrade.
func TestServeRefusesAddressInUse(t *testing.T) {
	t.Parallel()
	first := startServe(t, 1, "-rate", "1000r/s", "-burst", "100")
	second := launchServe(t, 1, "-rate", "1000r/s", "-burst", "100", "-addr", first.addr)
	var err error
	select {
	case err = <-second.done:
		second.done <- err // for the cleanup, which waits for it too
	case <-time.After(serveHang):
		t.Fatalf("a second master on %s still runs after %v; stderr:\n%s", first.addr, serveHang, second.stderr)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second master exited with %v, want exit status 1; stderr:\n%s", err, second.stderr)
	}
	want := fmt.Sprintf("worker serve: prefork: address in use: %s is already served by another listening socket (held by pid", first.addr)
	if !strings.Contains(second.stderr.String(), want) {
		t.Fatalf("second master's stderr does not hold %q:\n%s", want, second.stderr)
	}
	third := launchServe(t, 1, "-rate", "1000r/s", "-burst", "100", "-addr", first.addr, "-takeover")
	third.waitReady(t)
}

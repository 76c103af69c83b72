package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Must show 2: a child killed with SIGKILL under load is replaced, the
// replacement serves, the limit holds, and the zone passes Check.
//
// The client acts as a real one does when a server dies under it. It sends
// each request on a new connection and never retries. A request on a
// connection the victim held dies with it if no byte of its answer came:
// the test counts it apart, as lost with the child. Every other request is
// answered, 200 or 429.
//
// The test stops the victim before it kills it, and lists from /proc the
// connections the stopped victim holds. The list is exact: a stopped
// process accepts and closes nothing. Connections still queued on the
// victim's socket are not in the list: the master keeps the socket, and
// the replacement answers them.
//
// Whether any request is lost depends on the machine's pace, so the test
// logs the count and asserts nothing about it.
func TestServeReplacesKilledChild(t *testing.T) {
	t.Parallel()
	const rate, burst = 50, 5
	s := startServe(t, 4, "-rate", strconv.Itoa(rate)+"r/s", "-burst", strconv.Itoa(burst), "-nodelay", "-precise-clock")
	done := make(chan *serveLoadResult)
	go func() { done <- serveLoad("http://"+s.addr+"/", 200, 3*time.Second) }()
	serveAwaitLoad(t, s, 50)
	victim := s.stderr.serveReadyPids()[1]
	held := serveHeldConns(t, victim)
	killed := time.Now()
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !serveWaitFor(serveHang, func() bool { return len(s.stderr.serveReadyPids()) >= 5 }) {
		t.Fatalf("no child replaced pid %d; stderr:\n%s", victim, s.stderr)
	}
	took := time.Since(killed)
	// Each read of /metrics is a new connection, which any child may get:
	// read until the replacement answers one.
	replacement := s.stderr.serveReadyPids()[4]
	if !serveWaitFor(serveHang, func() bool { return serveMetric(t, s.addr, "worker_serve_pid") == replacement }) {
		t.Fatalf("replacement pid %d never answered; stderr:\n%s", replacement, s.stderr)
	}
	res := <-done
	t.Logf("killed pid %d, replaced in %v by pid %d; shared zone, %dr/s burst %d, 200 r/s for 3s: %v",
		victim, took.Round(time.Millisecond), replacement, rate, burst, res)

	lost := 0
	for _, a := range res.answers {
		switch {
		case a.err == nil && (a.code == http.StatusOK || a.code == http.StatusTooManyRequests):
		case serveLostWith(a, held, killed):
			lost++
		default:
			t.Errorf("request sent %s, on a connection from %q (held by the victim: %v, a response byte came: %v): %v",
				serveWhen(a.sent, killed), a.conn, held[a.conn], a.responded, a)
		}
	}
	t.Logf("%d requests lost with pid %d, which held %d connections when stopped; %d answered, %d failed otherwise",
		lost, victim, len(held), res.ok+res.limited, res.failed-lost)

	// A shard whose lock the victim held is rebuilt, and the rebuild drops
	// the entry it was writing: the bucket may start over, full, once per
	// rebuild.
	recoveries := serveMetric(t, s.addr, "shmzone_recoveries_total")
	if most := res.mostAdmitted(rate, burst) + recoveries*(burst+1); res.ok > most {
		t.Errorf("accepted %d, want at most %d (%d/s over %v + burst %d + 1, and burst + 1 for each of %d shard rebuilds) (%v)",
			res.ok, most, rate, res.elapsed().Round(time.Millisecond), burst, recoveries, res)
	}
	t.Logf("%d shard rebuilds", recoveries)
	d, err := dict.Open(s.zone, dict.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Check(); err != nil {
		t.Errorf("zone Check: %v", err)
	}
}

// serveLostWith reports whether a is a request lost with a child killed at
// killed: sent before the kill, on a connection in held, and failed at the
// connection level before any byte of its answer. A timeout is no such
// failure: the kill closes the victim's connections at once.
func serveLostWith(a serveAnswer, held map[string]bool, killed time.Time) bool {
	var ne net.Error
	return a.err != nil && !a.responded && held[a.conn] && a.sent.Before(killed) &&
		!(errors.As(a.err, &ne) && ne.Timeout())
}

// serveWhen says when t was, relative to a kill at killed.
func serveWhen(t, killed time.Time) string {
	d := t.Sub(killed).Round(time.Millisecond)
	if d < 0 {
		return fmt.Sprintf("%v before the kill", -d)
	}
	return fmt.Sprintf("%v after the kill", d)
}

// serveHeldConns stops pid with SIGSTOP, waits until each of its threads
// is stopped, and returns the peer addresses of the TCP connections it
// holds. The peers are the clients: the children's listeners are IPv4.
func serveHeldConns(t *testing.T, pid int) map[string]bool {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	proc := "/proc/" + strconv.Itoa(pid)
	if !serveWaitFor(serveHang, func() bool { return serveStopped(proc) }) {
		t.Fatalf("pid %d not stopped after SIGSTOP", pid)
	}
	fds, err := os.ReadDir(proc + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(proc + "/fd/" + fd.Name())
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	// sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
	b, err := os.ReadFile(proc + "/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		const listen = "0A"
		if len(f) < 10 || !inodes[f[9]] || f[3] == listen {
			continue
		}
		peer, err := serveProcAddr(f[2])
		if err != nil {
			t.Fatalf("%s/net/tcp: %v in %q", proc, err, line)
		}
		held[peer] = true
	}
	return held
}

// serveStopped reports whether every thread of the process at proc is
// stopped by a signal.
func serveStopped(proc string) bool {
	tasks, err := os.ReadDir(proc + "/task")
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(proc + "/task/" + task.Name() + "/stat")
		if err != nil {
			return false
		}
		// pid (comm) state ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// serveProcAddr parses an IPv4 address of /proc/net/tcp: the address as a
// 32-bit word in hex, in the host's byte order, a colon, the port in hex.
func serveProcAddr(s string) (string, error) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return "", fmt.Errorf("address %q: no port", s)
	}
	ip, err := strconv.ParseUint(ipHex, 16, 32)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", s, err)
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", s, err)
	}
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], uint32(ip))
	return netip.AddrPortFrom(netip.AddrFrom4(b), uint16(port)).String(), nil
}

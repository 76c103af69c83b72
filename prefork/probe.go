package prefork

// probe.go: before the master binds its SO_REUSEPORT sockets, it checks
// that no other socket listens on the address. SO_REUSEPORT would let a
// second master bind beside a running one and take a share of its
// connections.

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// probe returns an error wrapping ErrAddrInUse if another socket listens
// on addr. It binds addr without SO_REUSEPORT and closes the socket at
// once: such a bind fails with EADDRINUSE while any socket listens there,
// with SO_REUSEPORT or without. Another master may still bind between the
// probe and the master's own sockets; the probe does not close that race.
func probe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln.Close()
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("prefork: %w", err)
	}
	held := ""
	switch pids := listeners(addr); len(pids) {
	case 0:
	case 1:
		held = fmt.Sprintf(" (held by pid %s)", pids[0])
	default:
		held = fmt.Sprintf(" (held by pids %s)", strings.Join(pids, ", "))
	}
	return fmt.Errorf("%w: %s is already served by another listening socket%s; set Options.Takeover to share it with an old master during an upgrade: %w",
		ErrAddrInUse, addr, held, err)
}

// maxListeners bounds the pids listeners returns.
const maxListeners = 8

// listeners returns the pids of the processes that hold a socket listening
// on addr's port, in increasing order, as far as /proc shows them: a
// process of another user hides its descriptors. It returns nil when it
// finds none.
func listeners(addr string) []string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	port, err := net.LookupPort("tcp", p)
	if err != nil {
		return nil
	}
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listenInodes(f, port, inodes)
	}
	if len(inodes) == 0 {
		return nil
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	var pids []int
	for _, fd := range fds {
		link, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if !inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			continue
		}
		pid, err := strconv.Atoi(strings.Split(fd, "/")[2])
		if err == nil && !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	var s []string
	for _, pid := range pids[:min(len(pids), maxListeners)] {
		s = append(s, strconv.Itoa(pid))
	}
	return s
}

// listenInodes adds to inodes the inode of every socket that file, in the
// format of /proc/net/tcp, shows listening on port.
func listenInodes(file string, port int, inodes map[string]bool) {
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		_, hexPort, ok := strings.Cut(fs[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
			inodes[fs[9]] = true
		}
	}
}

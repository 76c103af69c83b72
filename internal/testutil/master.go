package testutil

// master.go: a master of package prefork run as a helper process, for the
// tests of servers that run under it. The test learns what the master did
// from its reports, one a line on stdout.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Hang bounds every wait of a Master for what a test expects. It guards
// against a hang and measures nothing.
const Hang = 2 * time.Minute

// The reports of a prefork master that a test reads. They follow the words
// of prefork's Logf reports.
var (
	ReadyRE   = regexp.MustCompile(`child pid=(\d+) ready \(slot \d+\)`)
	RetiredRE = regexp.MustCompile(`child pid=(\d+) retired`)
	DiedRE    = regexp.MustCompile(`child pid=(\d+) died`)
)

// Master is a helper process that runs a prefork master, and the lines it
// and its children wrote to stdout.
type Master struct {
	*Proc
	mu      sync.Mutex
	out     strings.Builder
	changed chan struct{} // closed and replaced at each line
}

// StartMaster starts the helper name with args. The helper runs a prefork
// master whose Logf writes each report as a line on stdout. StartMaster
// returns once n children are ready. It fails the test if they are not
// ready within Hang.
func StartMaster(t testing.TB, n int, name string, args ...string) *Master {
	t.Helper()
	m := &Master{changed: make(chan struct{})}
	m.Proc = Start(t, Helper(t, name, args...), func(line string) {
		m.mu.Lock()
		m.out.WriteString(line + "\n")
		close(m.changed)
		m.changed = make(chan struct{})
		m.mu.Unlock()
	})
	m.WaitFor(t, fmt.Sprintf("%d children ready", n), func() bool { return len(m.Pids(ReadyRE)) >= n })
	return m
}

// String returns the lines written so far.
func (m *Master) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out.String()
}

// Pids returns the pids that the lines matching re name, in order.
func (m *Master) Pids(re *regexp.Regexp) []int {
	var pids []int
	for _, sub := range re.FindAllStringSubmatch(m.String(), -1) {
		p, _ := strconv.Atoi(sub[1])
		pids = append(pids, p)
	}
	return pids
}

// WaitFor waits until cond, which reads the lines written, holds. It checks
// cond at each new line. It fails the test when the master exits first or
// after Hang, with what the master wrote.
func (m *Master) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	guard := time.After(Hang)
	for {
		m.mu.Lock()
		changed := m.changed
		m.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-m.Done():
			if cond() {
				return
			}
			t.Fatalf("no %s: the master exited: %v; output:\n%s", what, m.Wait(), m)
		case <-guard:
			t.Fatalf("no %s within %v; output:\n%s", what, Hang, m)
		}
	}
}

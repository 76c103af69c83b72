package prefork

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// helperBroken runs a master on args[0] with args[1] children,
// MaxStartFailures args[2] and a backoff of brokenBackoff, its reports on
// stdout. args[3] picks the children that cannot start:
//
//   - "all": every child;
//   - "none": no child;
//   - "second-fourth": the second and fourth children the master starts;
//   - "roll": the children of every roll.
//
// With mode "ready-exit", every child reports ready, by reading its
// listener's address, and then exits 1 at once.
//
// A child that cannot start writes "cannot open the zone" to stderr and
// exits 1 before it accepts, as a child given a bad zone path does. The
// others answer / with their pid.
func helperBroken(args []string) error {
	children, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	limit, err := strconv.Atoi(args[2])
	if err != nil {
		return err
	}
	var starts atomic.Int32
	broken := func(roll int) bool {
		n := starts.Add(1)
		switch args[3] {
		case "all":
			return true
		case "second-fourth":
			return n == 2 || n == 4
		case "roll":
			return roll > 0
		}
		return false
	}
	o := Options{
		Addr:             args[0],
		Children:         children,
		ReadyTimeout:     hang,
		DrainTimeout:     hang,
		BackoffMin:       brokenBackoff,
		BackoffMax:       brokenBackoff,
		MaxStartFailures: limit,
		Env: func(slot, roll int) []string {
			if broken(roll) {
				return []string{"PREFORK_TEST_BROKEN=1"}
			}
			return nil
		},
		Logf: func(format string, a ...any) { fmt.Printf(format+"\n", a...) },
	}
	return Run(context.Background(), o, func(ctx context.Context, ln net.Listener) error {
		if args[3] == "ready-exit" {
			ln.Addr()
			return errors.New("died once ready")
		}
		if os.Getenv("PREFORK_TEST_BROKEN") != "" {
			return errors.New("cannot open the zone")
		}
		pid := os.Getpid()
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "pid=%d", pid) })
		return Serve(ctx, &http.Server{Handler: h}, ln, hang)
	})
}

// brokenBackoff is helperBroken's BackoffMin and BackoffMax: tiny, so that
// a test waits for no real delay.
const brokenBackoff = time.Millisecond

// startBroken starts helperBroken with children, limit and mode.
func startBroken(t *testing.T, children, limit int, mode string) *server {
	t.Helper()
	s := &server{addr: freeAddr(t)}
	cmd := testutil.Helper(t, "broken", s.addr, strconv.Itoa(children), strconv.Itoa(limit), mode)
	s.p = testutil.Start(t, cmd, func(line string) {
		s.mu.Lock()
		s.out.WriteString(line + "\n")
		s.mu.Unlock()
	})
	return s
}

var failedStartRE = regexp.MustCompile(`died: exit status 1; replacing it in \S+ \((\d+) of (\d+) failed starts\)`)

// A master whose children exit before they are ready gives up after
// MaxStartFailures of them in a row. Its error names the failure: the
// slot, the count, the last child's pid and exit status. Its socket is
// closed afterwards, so that a client is refused instead of waiting.
func TestChildThatCannotStartStopsMaster(t *testing.T) {
	t.Parallel()
	s := startBroken(t, 2, 3, "all")
	exited := make(chan error, 1)
	go func() { exited <- s.p.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(hang):
		t.Fatalf("the master still runs %v after its start; output:\n%s", hang, s)
	}
	if err == nil {
		t.Fatalf("the master exited 0 with children that cannot start; output:\n%s", s)
	}
	msg := err.Error()
	re := regexp.MustCompile(`helper broken: prefork: children cannot start: slot [01]: 3 children in a row exited before they were ready; the last, pid=(\d+): exit status 1\n`)
	m := re.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("master's error does not match %q:\n%s\noutput:\n%s", re, msg, s)
	}
	if !strings.Contains(msg, "cannot open the zone") {
		t.Errorf("the children's stderr did not reach the master's:\n%s", msg)
	}
	if last, _ := strconv.Atoi(m[1]); !gone(last) {
		t.Errorf("the last child %d still runs", last)
	}
	// Every failure but the last was retried, and the log counts them.
	for i, f := range failedStartRE.FindAllStringSubmatch(s.String(), -1) {
		if f[2] != "3" || f[1] == "3" {
			t.Errorf("report %d of a failed start: %q, want 1 or 2 of 3", i+1, f[0])
		}
	}
	if n := len(failedStartRE.FindAllString(s.String(), -1)); n < 2 {
		t.Errorf("%d failed starts reported before the master gave up, want 2 at least; output:\n%s", n, s)
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

// A child that served and then died does not count as a failed start: a
// master with MaxStartFailures 1 replaces its ready child, SIGKILLed, three
// times over.
func TestServedChildIsReplacedDespiteLimit(t *testing.T) {
	t.Parallel()
	s := startBroken(t, 1, 1, "none")
	for i := 1; i <= 3; i++ {
		s.waitFor(t, fmt.Sprintf("child %d ready", i), func() bool { return len(s.pids(readyRE)) == i })
		if err := syscall.Kill(s.pids(readyRE)[i-1], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	s.waitFor(t, "child 4 ready", func() bool { return len(s.pids(readyRE)) == 4 })
	repl := s.pids(readyRE)[3]
	body, err := get(s.addr, "/")
	if want := fmt.Sprintf("pid=%d", repl); err != nil || body != want {
		t.Fatalf("GET / = %q, %v; want %q; output:\n%s", body, err, want, s)
	}
	if strings.Contains(s.String(), "failed starts") {
		t.Errorf("a killed ready child counted as a failed start; output:\n%s", s)
	}
}

// A child that becomes ready resets its slot's count of failed starts.
// With MaxStartFailures 2, the second and fourth children fail: without
// the reset by the third, the fourth would end the master.
func TestReadyChildResetsFailures(t *testing.T) {
	t.Parallel()
	s := startBroken(t, 1, 2, "second-fourth")
	for i := 1; i <= 2; i++ {
		s.waitFor(t, fmt.Sprintf("good child %d ready", i), func() bool { return len(s.pids(readyRE)) == i })
		if err := syscall.Kill(s.pids(readyRE)[i-1], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	s.waitFor(t, "good child 3 ready", func() bool { return len(s.pids(readyRE)) == 3 })
	fails := failedStartRE.FindAllStringSubmatch(s.String(), -1)
	if len(fails) != 2 || fails[0][1] != "1" || fails[1][1] != "1" {
		t.Fatalf("failed starts %q, want two, each the first of its run; output:\n%s", fails, s)
	}
	if _, err := get(s.addr, "/"); err != nil {
		t.Fatalf("GET / after the reset: %v; output:\n%s", err, s)
	}
}

var keepsRE = regexp.MustCompile(`child pid=\d+ died: exit status 1; slot \d+ keeps its child`)

// A roll whose new children cannot start leaves the old children serving,
// however low MaxStartFailures is: each slot keeps its child, and the
// failures are logged, not counted.
func TestRollOfChildrenThatCannotStart(t *testing.T) {
	t.Parallel()
	s := startBroken(t, 2, 1, "roll")
	s.waitFor(t, "every child ready", func() bool { return len(s.pids(readyRE)) == 2 })
	old := s.pids(readyRE)
	for roll := 1; roll <= 2; roll++ {
		if err := syscall.Kill(s.p.Pid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		s.waitFor(t, fmt.Sprintf("roll %d given up in both slots", roll), func() bool {
			return len(keepsRE.FindAllString(s.String(), -1)) == 2*roll
		})
	}
	if n := len(s.pids(readyRE)); n != 2 {
		t.Fatalf("%d children ready, want the 2 old ones; output:\n%s", n, s)
	}
	for _, pid := range old {
		if gone(pid) {
			t.Fatalf("old child %d gone after the failed rolls; output:\n%s", pid, s)
		}
	}
	body, err := get(s.addr, "/")
	if err != nil || (body != fmt.Sprintf("pid=%d", old[0]) && body != fmt.Sprintf("pid=%d", old[1])) {
		t.Fatalf("GET / = %q, %v; want an old child %v; output:\n%s", body, err, old, s)
	}
}

// A child that reported ready and died at once did start: its ready report
// reaches the master before its exit, however the two race. With
// MaxStartFailures 1, such children are replaced over and over.
func TestReadyThenDeadChildIsNotAFailedStart(t *testing.T) {
	t.Parallel()
	s := startBroken(t, 1, 1, "ready-exit")
	s.waitFor(t, "5 children ready", func() bool { return len(s.pids(readyRE)) >= 5 })
	if strings.Contains(s.String(), "failed starts") || strings.Contains(s.String(), "cannot start") {
		t.Fatalf("a child that was ready counted as a failed start; output:\n%s", s)
	}
}

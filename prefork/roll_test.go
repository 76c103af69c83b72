package prefork

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// SIGHUP replaces every child, each old one only once its replacement is
// ready, and the new children serve.
func TestSIGHUPRolls(t *testing.T) {
	t.Parallel()
	s := startServer(t, 2)
	old := s.pids(readyRE)
	if err := syscall.Kill(s.p.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "two children retired", func() bool { return len(s.pids(retiredRE)) == 2 })
	ready, retired := s.pids(readyRE), s.pids(retiredRE)
	if len(ready) != 4 {
		t.Fatalf("%d children ready, want 2 old and 2 new; output:\n%s", len(ready), s)
	}
	if !(retired[0] == old[0] && retired[1] == old[1] || retired[0] == old[1] && retired[1] == old[0]) {
		t.Fatalf("retired %v, want the old children %v; output:\n%s", retired, old, s)
	}
	// Each retirement comes after a new child's ready report.
	out := s.String()
	for _, pid := range retired {
		at := strings.Index(out, fmt.Sprintf("child pid=%d retired", pid))
		if n := len(readyRE.FindAllString(out[:at], -1)); n < 3 {
			t.Errorf("child %d retired with %d children ever ready, before its replacement; output:\n%s", pid, n, out)
		}
	}
	for i := range 20 {
		body, err := get(s.addr, "/")
		if err != nil {
			t.Fatalf("request %d after the roll: %v", i+1, err)
		}
		if body != fmt.Sprintf("pid=%d", ready[2]) && body != fmt.Sprintf("pid=%d", ready[3]) {
			t.Fatalf("request %d after the roll answered by %s, not a new child %v", i+1, body, ready[2:])
		}
	}
}

// helperStubbornRoll runs a master with one child on args[0], its reports
// on stdout and a DrainTimeout of stubbornDrain. Its first child (started
// by no roll) ignores the end of its context and serves on, as a child
// wedged in a request or with a broken drain does, for hang: longer than a
// test waits, yet bounded, so that a test that fails does not leave it
// running (the master's death only ends its context too). The children of
// rolls drain. A child answers / with its pid.
func helperStubbornRoll(args []string) error {
	o := Options{
		Addr:         args[0],
		Children:     1,
		ReadyTimeout: hang,
		DrainTimeout: stubbornDrain,
		Env: func(slot, roll int) []string {
			if roll == 0 {
				return []string{"PREFORK_TEST_STUBBORN=1"}
			}
			return nil
		},
		Logf: func(format string, a ...any) { fmt.Printf(format+"\n", a...) },
	}
	return Run(context.Background(), o, func(ctx context.Context, ln net.Listener) error {
		pid := os.Getpid()
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "pid=%d", pid) })
		if os.Getenv("PREFORK_TEST_STUBBORN") != "" {
			go http.Serve(ln, h)
			<-ctx.Done()
			time.Sleep(hang) // not draining
			return nil
		}
		return Serve(ctx, &http.Server{Handler: h}, ln, hang)
	})
}

// stubbornDrain is helperStubbornRoll's DrainTimeout.
const stubbornDrain = 100 * time.Millisecond

// In a SIGHUP roll, an old child still running DrainTimeout after it was
// told to drain is killed, as at the master's drain, instead of serving on
// until the master exits; its replacement is left alone and serves.
func TestRollKillsOldChildStillDraining(t *testing.T) {
	t.Parallel()
	s := &server{addr: freeAddr(t)}
	s.p = testutil.Start(t, testutil.Helper(t, "stubborn-roll", s.addr), func(line string) {
		s.mu.Lock()
		s.out.WriteString(line + "\n")
		s.mu.Unlock()
	})
	s.waitFor(t, "first child ready", func() bool { return len(s.pids(readyRE)) == 1 })
	old := s.pids(readyRE)[0]
	if err := syscall.Kill(s.p.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	killed := fmt.Sprintf("child pid=%d still draining after %v; killing it", old, stubbornDrain)
	retired := fmt.Sprintf("child pid=%d retired: signal: killed", old)
	s.waitFor(t, "old child killed", func() bool { return strings.Contains(s.String(), retired) })
	out := s.String()
	ready := s.pids(readyRE)
	if len(ready) != 2 {
		t.Fatalf("%d children ready, want the old and its replacement; output:\n%s", len(ready), out)
	}
	if at := strings.Index(out, killed); at < 0 || at < strings.Index(out, fmt.Sprintf("child pid=%d ready", ready[1])) {
		t.Fatalf("no %q after the replacement was ready; output:\n%s", killed, out)
	}
	if !gone(old) || gone(ready[1]) {
		t.Fatalf("old child %d gone %v, replacement %d gone %v; want only the old gone; output:\n%s", old, gone(old), ready[1], gone(ready[1]), out)
	}
	// The slot's socket is the only one, and the replacement its only
	// child now.
	for i := range 5 {
		if body, err := get(s.addr, "/"); err != nil || body != fmt.Sprintf("pid=%d", ready[1]) {
			t.Fatalf("request %d after the old child was killed: %q, %v; want pid=%d", i+1, body, err, ready[1])
		}
	}
	if err := syscall.Kill(s.p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.p.Wait(); err != nil {
		t.Fatalf("master after SIGTERM: %v; output:\n%s", err, s)
	}
	if want := fmt.Sprintf("child pid=%d retired: exit 0", ready[1]); !strings.Contains(s.String(), want) {
		t.Errorf("no %q: the replacement did not drain; output:\n%s", want, s)
	}
}

// The master's timer for a roll's old child finds the child itself, not a
// pid: once the child's exit is reported, the timer kills nothing, even if
// the pid (reused) is now another child's.
func TestRetireeTimerSparesOtherProcess(t *testing.T) {
	var logs []string
	m := newMaster(Options{Children: 1, DrainTimeout: time.Second, Logf: func(format string, a ...any) {
		logs = append(logs, fmt.Sprintf(format, a...))
	}})
	// A process that has exited and been reaped: Kill on it signals
	// nothing, whatever now holds its pid.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	retiree := &proc{id: 1, cmd: cmd, retiring: true}
	// The retiree's exit was reported: it is no longer a child.
	if m.killRetiree(retiree) {
		t.Errorf("killRetiree(child whose exit was reported) = true, want false")
	}
	// A later child has the retiree's pid.
	m.children[2] = &proc{id: 2, cmd: &exec.Cmd{Process: cmd.Process}}
	if m.killRetiree(retiree) {
		t.Errorf("killRetiree(child whose pid is another child's) = true, want false")
	}
	if len(logs) != 0 {
		t.Errorf("killRetiree logged %q, want nothing", logs)
	}
	// Still a child: it is killed.
	m.children[1] = retiree
	if !m.killRetiree(retiree) {
		t.Errorf("killRetiree(child still running) = false, want true")
	}
	if want := fmt.Sprintf("child pid=%d still draining after 1s; killing it", cmd.Process.Pid); len(logs) != 1 || logs[0] != want {
		t.Errorf("killRetiree logged %q, want %q", logs, want)
	}
}

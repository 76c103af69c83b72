package prefork

import (
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// helperFailedStart runs helperServer's master with one child on args[0],
// StableAfter args[1] and BackoffMin failedStartBackoff, whose second child
// cannot be started: its environment holds a NUL byte, which exec refuses,
// as fork or exec refuse a child for a while on EAGAIN, EMFILE or ENOMEM.
func helperFailedStart(args []string) error {
	stable, err := time.ParseDuration(args[1])
	if err != nil {
		return err
	}
	var starts atomic.Int32
	return runHelperServer(Options{
		Addr:         args[0],
		Children:     1,
		ReadyTimeout: hang,
		DrainTimeout: hang,
		StableAfter:  stable,
		BackoffMin:   failedStartBackoff,
		BackoffMax:   hang,
		Env: func(slot, roll int) []string {
			if starts.Add(1) == 2 {
				return []string{"BAD=\x00"}
			}
			return nil
		},
	})
}

// failedStartBackoff is helperFailedStart's BackoffMin.
const failedStartBackoff = 10 * time.Millisecond

// A slot whose replacement child cannot be started is tried again after
// its backoff, and the child started then serves: with one child, the
// slot's socket is the only one, and without the retry the connections the
// kernel queues on it would never be accepted. The dead child is replaced
// at once (it served for StableAfter) or after a delay (it died young); in
// both, the failed start doubles the slot's backoff.
func TestFailedStartIsRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stable time.Duration // StableAfter: the death is stable, or young
		want   []string      // lines of the master after the death, in order
	}{
		{"stable death", time.Nanosecond, []string{
			"replacing it in 0s",
			"slot 0: start child: ",
			"; trying again in 10ms",
		}},
		{"young death", time.Hour, []string{
			"replacing it in 10ms",
			"slot 0: start child: ",
			"; trying again in 20ms",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &server{addr: freeAddr(t)}
			s.p = testutil.Start(t, testutil.Helper(t, "failed-start", s.addr, tc.stable.String()), func(line string) {
				s.mu.Lock()
				s.out.WriteString(line + "\n")
				s.mu.Unlock()
			})
			s.waitFor(t, "first child ready", func() bool { return len(s.pids(readyRE)) == 1 })
			first := s.pids(readyRE)[0]
			if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			s.waitFor(t, "replacement ready", func() bool { return len(s.pids(readyRE)) == 2 })
			out := s.String()
			_, after, _ := strings.Cut(out, fmt.Sprintf("child pid=%d died: signal: killed; ", first))
			for _, w := range tc.want {
				i := strings.Index(after, w)
				if i < 0 {
					t.Fatalf("no %q after the death of child %d, in order; output:\n%s", w, first, out)
				}
				after = after[i+len(w):]
			}
			repl := s.pids(readyRE)[1]
			body, err := get(s.addr, "/")
			if want := fmt.Sprintf("pid=%d", repl); err != nil || body != want {
				t.Fatalf("GET / = %q, %v; want %q from the replacement; output:\n%s", body, err, want, out)
			}
		})
	}
}

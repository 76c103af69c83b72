package testutil

import (
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"testing"
)

// TestLockstep drives three shell helpers that speak FollowSteps' protocol
// through three steps: after each Step every helper has printed its line,
// and Close ends them.
func TestLockstep(t *testing.T) {
	ls := NewLockstep(t)
	var (
		mu  sync.Mutex
		got []string
		ps  []*Proc
	)
	for i := 0; i < 3; i++ {
		script := fmt.Sprintf(`while read n; do echo "%d $n"; printf '\000testutil-step-done %%s\n' "$n"; done; echo "%d end"`, i, i)
		ps = append(ps, ls.Start(exec.Command("sh", "-c", script), func(line string) {
			mu.Lock()
			got = append(got, line)
			mu.Unlock()
		}))
	}
	for n := int64(1); n <= 3; n++ {
		ls.Step(n)
		mu.Lock()
		if len(got) != 3*int(n) {
			t.Fatalf("after Step(%d): lines %q, want 3 per step", n, got)
		}
		mu.Unlock()
	}
	ls.Close()
	for _, p := range ps {
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 9+3 {
		t.Errorf("lines %q, want 9 steps and 3 ends", got)
	}
}

// TestLockstepHelperDies: Step fails the test, not hangs, when a helper
// ends without finishing the step.
func TestLockstepHelperDies(t *testing.T) {
	ft := &fatalT{TB: t}
	ls := NewLockstep(t)
	ls.t = ft
	ls.Start(exec.Command("sh", "-c", "read n; exit 3"), nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ls.Step(1)
	}()
	<-done
	if ft.msg == "" {
		t.Fatal("Step(1) with a dead helper did not fail the test")
	}
	t.Logf("Step failed as wanted: %s", ft.msg)
}

// fatalT records Fatalf and ends the goroutine instead of the test.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

package testutil

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// stepDone is the line a helper writes to stdout when it has finished a
// step; Lockstep's onLine wrapper consumes it.
const stepDone = "\x00testutil-step-done "

// stepWait bounds how long Step waits for every helper to finish a step.
const stepWait = time.Minute

// Lockstep drives helper processes through numbered steps together.
// Step(n) sends n to every helper's stdin. It returns once each has
// finished it. Helpers can so share a simulated clock the test moves. Time
// can then run faster than real time across processes.
type Lockstep struct {
	t     testing.TB
	ws    []*os.File
	ps    []*Proc
	acks  chan int
	dead  chan struct{} // closed when the first helper ends
	once  sync.Once     // closes dead
	close sync.Once
}

// NewLockstep returns a Lockstep without helpers. The helpers' stdin are
// closed at the latest when the test ends. That ends FollowSteps.
func NewLockstep(t testing.TB) *Lockstep {
	t.Helper()
	ls := &Lockstep{t: t, acks: make(chan int, 1024), dead: make(chan struct{})}
	t.Cleanup(ls.Close)
	return ls
}

// Start starts cmd, from Helper, as Start does. Its stdin is a pipe from
// the Lockstep. The helper must run FollowSteps. onLine sees every line but
// FollowSteps' acknowledgements.
func (ls *Lockstep) Start(cmd *exec.Cmd, onLine func(line string)) *Proc {
	ls.t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		ls.t.Fatalf("testutil: pipe: %v", err)
	}
	cmd.Stdin = r
	i := len(ls.ps)
	p := Start(ls.t, cmd, func(line string) {
		if strings.HasPrefix(line, stepDone) {
			ls.acks <- i
			return
		}
		if onLine != nil {
			onLine(line)
		}
	})
	r.Close()
	go func() {
		<-p.Done()
		ls.once.Do(func() { close(ls.dead) })
	}()
	ls.ws, ls.ps = append(ls.ws, w), append(ls.ps, p)
	return p
}

// Step sends step n to every helper and waits until each has finished it.
// It fails the test when a helper ends or does not finish within a minute.
func (ls *Lockstep) Step(n int64) {
	ls.t.Helper()
	line := []byte(strconv.FormatInt(n, 10) + "\n")
	for i, w := range ls.ws {
		if _, err := w.Write(line); err != nil {
			ls.t.Fatalf("testutil: step %d to helper %d: %v (helper: %v)", n, ls.ps[i].Pid(), err, ls.ps[i].Wait())
		}
	}
	timeout := time.After(stepWait)
	for range ls.ws {
		select {
		case <-ls.acks:
		case <-timeout:
			ls.t.Fatalf("testutil: step %d not finished by every helper within %v", n, stepWait)
		case <-ls.dead:
			for _, p := range ls.ps {
				select {
				case <-p.Done():
					ls.t.Fatalf("testutil: helper %d ended during step %d: %v", p.Pid(), n, p.Wait())
				default:
				}
			}
		}
	}
}

// Close closes every helper's stdin. FollowSteps returns in each.
func (ls *Lockstep) Close() {
	ls.close.Do(func() {
		for _, w := range ls.ws {
			w.Close()
		}
	})
}

// FollowSteps is called by a helper started by Lockstep.Start. It calls fn
// with each step the test sends, in order. It acknowledges a step once fn
// returns. It returns nil when the test closes the Lockstep, or fn's first
// error. fn may print to stdout. Its lines reach the test's onLine before
// the acknowledgement.
func FollowSteps(fn func(step int64) error) error {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		n, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			return fmt.Errorf("testutil: bad step %q", sc.Text())
		}
		if err := fn(n); err != nil {
			return err
		}
		fmt.Println(stepDone + sc.Text())
	}
	return sc.Err()
}

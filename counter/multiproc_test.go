package counter_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shmzone/shmzone/counter"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// Multi-process tests: real OS processes, re-executions of this test
// binary, each with its own Counter over one zone.

// TestHelperProcess runs the helper processes of this package's
// multi-process tests; in an ordinary test run it does nothing.
func TestHelperProcess(t *testing.T) {
	testutil.RunHelper(map[string]func(args []string) error{
		"script": helperScript,
		"hammer": helperHammer,
	})
}

// helperScript runs a Counter (syncing by hand) over the zone at args[0]
// and obeys one command per line of stdin, answering each with one line:
// "ok" and the result, or "err" and the error. Commands: incr KEY N, sync,
// get KEY, reset KEY N, close. It exits at the end of stdin.
func helperScript(args []string) error {
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	c, err := counter.New(d, 0)
	if err != nil {
		return err
	}
	defer c.Close()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		n := int64(0)
		if len(f) == 3 {
			if n, err = strconv.ParseInt(f[2], 10, 64); err != nil {
				return err
			}
		}
		var out int64
		err = nil
		switch {
		case f[0] == "incr" && len(f) == 3:
			c.Incr(f[1], n)
		case f[0] == "sync" && len(f) == 1:
			err = c.Sync()
		case f[0] == "get" && len(f) == 2:
			out, err = c.Get(f[1])
		case f[0] == "reset" && len(f) == 3:
			out, err = c.Reset(f[1], n)
		case f[0] == "close" && len(f) == 1:
			err = c.Close()
		default:
			return fmt.Errorf("bad command %q", sc.Text())
		}
		if err != nil {
			fmt.Println("err", err)
		} else {
			fmt.Println("ok", out)
		}
	}
	return sc.Err()
}

// scripted is a helperScript process that the test drives one command at
// a time.
type scripted struct {
	t     *testing.T
	name  string
	stdin io.WriteCloser
	lines chan string
	p     *testutil.Proc
}

func startScripted(t *testing.T, name, path string) *scripted {
	t.Helper()
	cmd := testutil.Helper(t, "script", path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{t: t, name: name, stdin: stdin, lines: make(chan string, 1)}
	s.p = testutil.Start(t, cmd, func(line string) { s.lines <- line })
	return s
}

// do sends one command and returns the answer.
func (s *scripted) do(cmd string) string {
	s.t.Helper()
	if _, err := fmt.Fprintln(s.stdin, cmd); err != nil {
		s.t.Fatalf("process %s: %s: %v", s.name, cmd, err)
	}
	select {
	case line := <-s.lines:
		return line
	case <-s.p.Done():
		s.t.Fatalf("process %s ended at %s: %v", s.name, cmd, s.p.Wait())
	case <-time.After(time.Minute):
		s.t.Fatalf("process %s: no answer to %s after a minute", s.name, cmd)
	}
	return ""
}

// end closes the process's stdin and waits for it to exit.
func (s *scripted) end() {
	s.t.Helper()
	s.stdin.Close()
	if err := s.p.Wait(); err != nil {
		s.t.Errorf("process %s: %v", s.name, err)
	}
}

// TestSpecVector runs a scripted sequence of increments, syncs and resets
// with two processes, A and B, and reads the zone from each and from the test
// process (Z) between the steps.
func TestSpecVector(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	path := d.Path()
	z, err := counter.New(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	procs := map[string]*scripted{"A": startScripted(t, "A", path), "B": startScripted(t, "B", path)}
	notFound := "err " + dict.ErrNotFound.Error()
	steps := []struct{ who, cmd, want string }{
		{"A", "incr a 1", "ok 0"},
		{"A", "incr a 5", "ok 0"},
		{"A", "incr a 2", "ok 0"},
		{"B", "incr a 10", "ok 0"},
		{"B", "incr b -3", "ok 0"},
		// Before any sync the zone has nothing.
		{"Z", "get a", notFound},
		{"A", "get a", notFound},
		{"B", "get b", notFound},
		{"A", "sync", "ok 0"},
		{"Z", "get a", "ok 8"},
		{"B", "get a", "ok 8"},
		{"Z", "get b", notFound},
		{"B", "sync", "ok 0"},
		{"Z", "get a", "ok 18"},
		{"A", "get a", "ok 18"},
		{"Z", "get b", "ok -3"},
		{"A", "reset a 10", "ok 8"},
		{"B", "reset zz 7", "ok 0"},
		{"Z", "get a", "ok 8"},
		{"Z", "get zz", "ok 0"},
		// Nothing is left to sync: closing changes nothing.
		{"A", "close", "ok 0"},
		{"B", "close", "ok 0"},
		{"Z", "get a", "ok 8"},
		{"Z", "get b", "ok -3"},
	}
	for i, s := range steps {
		var got string
		if s.who == "Z" {
			got = zGet(z, strings.TrimPrefix(s.cmd, "get "))
		} else {
			got = procs[s.who].do(s.cmd)
		}
		if got != s.want {
			t.Fatalf("step %d: %s: %s = %q, want %q", i, s.who, s.cmd, got, s.want)
		}
	}
	for _, p := range procs {
		p.end()
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
}

// zGet answers "get KEY" in the test process as helperScript would.
func zGet(z *counter.Counter, key string) string {
	n, err := z.Get(key)
	if err != nil {
		return "err " + err.Error()
	}
	return "ok " + strconv.FormatInt(n, 10)
}

const (
	hammerProcs      = 4
	hammerOps        = 1_000_000 // Incr calls per process
	hammerKeys       = 100
	hammerGoroutines = 2 // per process, sharing its Counter
)

// TestMultiProcTotals runs hammerProcs processes that each make hammerOps
// Incr calls over hammerKeys keys from hammerGoroutines goroutines, with a
// Counter that syncs every 10 ms on its own, and then Close: the zone
// holds exactly the totals. Key k gets steps of k+1, so a count that lands
// on the wrong key shows.
func TestMultiProcTotals(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	path := d.Path()
	g := testutil.NewGate(t)
	var mu sync.Mutex
	syncs := make([]string, 0, hammerProcs)
	procs := make([]*testutil.Proc, hammerProcs)
	for i := range procs {
		cmd := testutil.Helper(t, "hammer", path, strconv.Itoa(hammerOps))
		g.Attach(cmd)
		procs[i] = testutil.Start(t, cmd, func(line string) {
			mu.Lock()
			defer mu.Unlock()
			syncs = append(syncs, line)
		})
	}
	start := time.Now()
	g.Open()
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("hammer helper %d: %v", i, err)
		}
	}
	elapsed := time.Since(start)
	for k := 0; k < hammerKeys; k++ {
		want := int64(hammerProcs*hammerOps/hammerKeys) * int64(k+1)
		if v, _, err := d.Get(key(k)); err != nil || v.Kind() != dict.KindInt || v.Int() != want {
			t.Errorf("Get(%q) = %v, %v; want Int %d", key(k), v, err, want)
		}
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
	t.Logf("%d processes × %d Incr in %v (%.0f Incr/s); per process: %s", hammerProcs, hammerOps, elapsed,
		float64(hammerProcs*hammerOps)/elapsed.Seconds(), strings.Join(syncs, "; "))
}

// helperHammer is one process of TestMultiProcTotals; args are the zone
// path and the number of Incr calls. It waits for one timer sync after its
// increments, so that the timer is seen to work, then closes the Counter
// and prints its Stats.
func helperHammer(args []string) error {
	ops, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	c, err := counter.New(d, 10*time.Millisecond)
	if err != nil {
		return err
	}
	keys := make([]string, hammerKeys)
	for k := range keys {
		keys[k] = key(k)
	}
	if err := testutil.AwaitGate(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for g := 0; g < hammerGoroutines; g++ {
		wg.Go(func() {
			// Goroutine g makes the calls i ≡ g (mod hammerGoroutines).
			for i := g; i < ops; i += hammerGoroutines {
				k := i % hammerKeys
				c.Incr(keys[k], int64(k+1))
			}
		})
	}
	wg.Wait()
	timerSyncs := c.Stats().Syncs
	for deadline := time.Now().Add(time.Minute); c.Stats().Syncs == timerSyncs; {
		if time.Now().After(deadline) {
			return errors.New("no timer sync in a minute")
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("Close() = %w", err)
	}
	st := c.Stats()
	if st.Failures != 0 || st.LastError != nil {
		return fmt.Errorf("Stats() = %+v, want no failures", st)
	}
	fmt.Printf("%d syncs, %d writes\n", st.Syncs, st.Writes)
	return nil
}

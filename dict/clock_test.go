package dict

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/coarseclock"
	"github.com/shmzone/shmzone/internal/testutil"
)

// The process clock under Dicts: stopped by the last Close, and silent in a
// real idle process. internal/coarseclock tests the clock itself.

// TestClockLastCloseStops: the process's coarse clock runs while a Dict
// without an injected clock reads it, keeps running when one of two such
// Dicts closes, and its goroutine ends when the last closes.
func TestClockLastCloseStops(t *testing.T) {
	if refs := coarseclock.Users(); refs != 0 {
		t.Fatalf("%d Dicts without an injected clock are open before the test: a test left them open", refs)
	}
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	d1, err := Open(filepath.Join(dir, "a.zone"), Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	d2, err := Open(filepath.Join(dir, "b.zone"), Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	lo := time.Now().UnixMilli()
	if _, err := d1.Set("k", Int(1), time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if got := d2.Now(); got < lo {
		t.Fatalf("d2.Now() = %d, before the test's time.Now %d", got, lo)
	}
	if s := coarseclock.State(); s&coarseclock.StateLive == 0 {
		t.Fatalf("after a TTL write: clock state %s, want live", coarseclock.StateName(s))
	}
	if err := d1.Close(); err != nil {
		t.Fatal(err)
	}
	if s := coarseclock.State(); s&coarseclock.StateOpen == 0 {
		t.Fatalf("after closing one of two Dicts: clock state %s, want open", coarseclock.StateName(s))
	}
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
	if s := coarseclock.State(); s != 0 {
		t.Fatalf("after closing the last Dict: clock state %s, want closed", coarseclock.StateName(s))
	}
	testutil.WaitGoroutines(t, before, 10*time.Second)
	// Reads after the last Close are the system's time, and start nothing.
	lo = time.Now().UnixMilli()
	if got, hi := coarseclock.Now(), time.Now().UnixMilli(); got < lo || got > hi {
		t.Fatalf("coarseclock.Now() after the last Close = %d, want %d..%d", got, lo, hi)
	}
	if s := coarseclock.State(); s != 0 {
		t.Fatalf("after a read of a closed clock: state %s, want closed", coarseclock.StateName(s))
	}
}

// HelperClockIdle is the idle process of TestClockIdleWakeups (registered in
// multiproc_test.go's TestHelperProcess): it opens the zone with the coarse
// clock, writes a key with a TTL, which reads the clock and starts its ticker,
// waits for the ticker to stop for want of reads, says "ready", and idles
// until stdin closes.
func HelperClockIdle(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("want path, got %q", args)
	}
	d, err := Open(args[0], Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	if _, err := d.Set("k", Int(1), time.Hour, 0); err != nil {
		return err
	}
	if s := coarseclock.State(); s&coarseclock.StateLive == 0 {
		return fmt.Errorf("after a TTL write: clock state %s, want live", coarseclock.StateName(s))
	}
	coarseclock.WaitStopped() // the ticker stops two check periods on
	if s := coarseclock.State(); s != coarseclock.StateOpen {
		return fmt.Errorf("idle: clock state %s, want open", coarseclock.StateName(s))
	}
	fmt.Println("ready")
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

// TestClockIdleWakeups: a process with an open Dict whose clock nobody reads
// sleeps: over a second it switches off the CPU voluntarily (each wakeup of
// a timer is one such switch) fewer than idleWakeups times, where a ticker
// of a millisecond makes a thousand or more.
//
// The second starts once the process has settled: once a settle interval
// has passed with at most settledWakeups switches. Right after "ready" the
// Go runtime's sysmon thread still polls, its sleeps growing from 20 µs to
// 10 ms, until it finds every P idle and parks. On a quiet machine that is
// over before the second starts (3 or 4 switches in it); when the tests of
// other packages hold both cores it is not, and sysmon's polls fell in the
// second (52 and 64 switches, nearly all of sysmon's thread, in 2 of 14
// runs beside go test of five other packages; 0 in 16 runs so with the
// settling). A ticker that runs never settles: the test then fails after
// maxSettle (a goroutine with a 1 ms ticker: 196 switches per interval).
func TestClockIdleWakeups(t *testing.T) {
	const (
		window         = time.Second
		idleWakeups    = 50
		settle         = 100 * time.Millisecond
		settledWakeups = 2
		maxSettle      = time.Minute
	)
	path := testutil.TempZone(t)
	d, err := Open(path, Options{Size: 1 << 20, Clock: func() int64 { return 1_700_000_000_000 }})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()

	g := testutil.NewGate(t)
	cmd := testutil.Helper(t, "clock-idle", path)
	g.Attach(cmd)
	ready := make(chan struct{})
	p := testutil.Start(t, cmd, func(line string) {
		if line == "ready" {
			close(ready)
			return
		}
		t.Errorf("clock-idle helper printed %q", line)
	})
	select {
	case <-ready:
	case <-p.Done():
		t.Fatalf("clock-idle helper exited before ready: %v", p.Wait())
	case <-time.After(time.Minute):
		t.Fatal("clock-idle helper not ready after a minute")
	}
	sw0, cpu0, err := procSwitches(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	for settling := time.Now(); ; {
		time.Sleep(settle)
		sw, cpu, err := procSwitches(p.Pid())
		if err != nil {
			t.Fatal(err)
		}
		if sw-sw0 <= settledWakeups {
			break
		}
		if time.Since(settling) > maxSettle {
			t.Fatalf("idle process not settled after %v: %d voluntary context switches in the last %v", maxSettle, sw-sw0, settle)
		}
		sw0, cpu0 = sw, cpu
	}
	start := time.Now()
	time.Sleep(window)
	sw1, cpu1, err := procSwitches(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	g.Open()
	if err := p.Wait(); err != nil {
		t.Fatalf("clock-idle helper: %v", err)
	}
	t.Logf("idle process over %v: %d voluntary context switches, %d CPU clock ticks", elapsed.Round(time.Millisecond), sw1-sw0, cpu1-cpu0)
	if n := sw1 - sw0; n >= idleWakeups {
		t.Errorf("idle process over %v: %d voluntary context switches, want < %d", elapsed.Round(time.Millisecond), n, idleWakeups)
	}
}

// procSwitches returns the voluntary context switches of every thread of
// process pid, and its user and system CPU time in clock ticks.
func procSwitches(pid int) (switches, cpu int64, err error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		return 0, 0, fmt.Errorf("threads of %d: %v (%d found)", pid, err, len(tasks))
	}
	for _, path := range tasks {
		f, err := os.Open(path)
		if err != nil {
			continue // the thread exited
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "voluntary_ctxt_switches:"); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					f.Close()
					return 0, 0, fmt.Errorf("%s: %v", path, err)
				}
				switches += n
			}
		}
		f.Close()
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command, which is in parentheses and may hold
	// spaces: state is field 3, utime 14 and stime 15.
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields after the command", pid, len(f))
	}
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/stat: %v", pid, err)
		}
		cpu += n
	}
	return switches, cpu, nil
}

// BenchmarkCoarseNow is the cost of reading a Dict's default clock, on every
// core at once, against time.Now. ns/op is the time of all the reads over
// their number; ns/read is what one read costs the core that makes it.
func BenchmarkCoarseNow(b *testing.B) {
	b.Run("clock=coarse", func(b *testing.B) {
		d, err := Open(filepath.Join(b.TempDir(), "now.zone"), Options{Size: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			var sum, n int64
			for pb.Next() {
				sum += d.Now()
				n++
			}
			if n > 0 && sum == 0 {
				b.Error("Now() read 0")
			}
		})
		perRead(b)
	})
	b.Run("clock=system", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var sum, n int64
			for pb.Next() {
				sum += time.Now().UnixMilli()
				n++
			}
			if n > 0 && sum == 0 {
				b.Error("time.Now read 0")
			}
		})
		perRead(b)
	})
}

// perRead reports ns/read of a RunParallel benchmark whose goroutines, one
// per core, each read the clock in a loop: the elapsed time of all of them,
// times the cores, over the reads.
func perRead(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())*float64(runtime.GOMAXPROCS(0))/float64(b.N), "ns/read")
}

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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// The coarse clock's tests: its states driven by an injected time and
// ticker, its readers under the race detector, the process's clock stopped
// by the last Close, and a real process whose idle clock makes no wakeups.

// coarseDriver holds a coarse clock (c) under test and drives what it
// reads: it stands in for the system time (wall, Unix ms) and for the
// ticker, whose starts and stops it counts; each tick advances the time by a
// millisecond first. It is not a fake clock for a Dict (testutil.Clock is):
// the clock it drives is the real coarse clock's code.
type coarseDriver struct {
	c       clock
	wall    atomic.Int64
	ticks   chan time.Time
	starts  atomic.Int64
	stops   atomic.Int64
	stopped chan struct{} // one send per stopped ticker
}

func newCoarseDriver(start int64) *coarseDriver {
	dr := &coarseDriver{ticks: make(chan time.Time), stopped: make(chan struct{}, 1<<16)}
	dr.wall.Store(start)
	dr.c.wall = dr.wall.Load
	dr.c.ticker = func() (<-chan time.Time, func()) {
		dr.starts.Add(1)
		return dr.ticks, func() {
			dr.stops.Add(1)
			dr.stopped <- struct{}{}
		}
	}
	return dr
}

// tick advances the time by 1 ms and hands a live ticker its tick. When the
// send returns, the ticker has finished with every tick before this one.
func (dr *coarseDriver) tick(t *testing.T) {
	t.Helper()
	dr.wall.Add(1)
	select {
	case dr.ticks <- time.Time{}:
	case <-time.After(time.Minute):
		t.Fatalf("tick at %d: no ticker took it in a minute", dr.wall.Load())
	}
}

// state returns the clock's state bits.
func (dr *coarseDriver) state() int64 { return atomic.LoadInt64(&dr.c.word) & stateMask }

// stateName names a clock state for failure messages.
func stateName(s int64) string {
	if s == 0 {
		return "closed"
	}
	var names []string
	for _, f := range []struct {
		bit  int64
		name string
	}{{clockOpen, "open"}, {clockLive, "live"}, {clockCheck, "check"}} {
		if s&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, "|")
}

func (dr *coarseDriver) wantState(t *testing.T, when string, want int64) {
	t.Helper()
	if got := dr.state(); got != want {
		t.Fatalf("%s: state %s, want %s", when, stateName(got), stateName(want))
	}
}

// wantStopped waits for the ticker to stop on its own.
func (dr *coarseDriver) wantStopped(t *testing.T, when string) {
	t.Helper()
	select {
	case <-dr.stopped:
	case <-time.After(time.Minute):
		t.Fatalf("%s: the ticker did not stop in a minute; state %s", when, stateName(dr.state()))
	}
	dr.wantState(t, when, clockOpen)
}

// TestClockStopsAndRestarts: the ticker starts at the first read, not at
// acquire; it stops after the second check period without a read; a read
// after that returns the time of that moment, not the time the ticker last
// stored, and restarts it; Close of the last user stops it for good.
func TestClockStopsAndRestarts(t *testing.T) {
	dr := newCoarseDriver(1_000_000)
	c := &dr.c
	if got, want := c.now(), int64(1_000_000); got != want {
		t.Fatalf("now() before acquire = %d, want the system time %d", got, want)
	}
	c.acquire()
	dr.wantState(t, "after acquire", clockOpen)
	if n := dr.starts.Load(); n != 0 {
		t.Fatalf("after acquire: %d tickers started, want 0", n)
	}

	dr.wall.Store(2_000_000)
	if got, want := c.now(), int64(2_000_000); got != want {
		t.Fatalf("first now() = %d, want %d", got, want)
	}
	dr.wantState(t, "after the first read", clockRunning)
	for i := 1; i <= checkTicks; i++ {
		dr.tick(t)
	}
	dr.tick(t) // the check tick is done: the ticker asks for a read
	dr.wantState(t, "after a check tick", clockRunning|clockCheck)
	if got, want := c.now(), dr.wall.Load(); got != want && got != want-1 {
		t.Fatalf("now() after %d ticks = %d, want %d or %d", checkTicks+1, got, want-1, want)
	}
	dr.wantState(t, "after a read answered the check", clockRunning)
	for i := 0; i < 20; i++ { // later reads find nothing to answer
		c.now()
		dr.wantState(t, "after more reads", clockRunning)
	}

	// Read once in each of ten periods: the ticker keeps running.
	for p := 0; p < 10; p++ {
		for i := 0; i < checkTicks; i++ {
			dr.tick(t)
		}
		c.now()
	}
	if n := dr.stops.Load(); n != 0 {
		t.Fatalf("read once a period: the ticker stopped %d times", n)
	}

	// No read from here: the ticker raises its flag at the next check tick
	// and stops at the one after.
	sent := 1 + checkTicks + 10*checkTicks
	stopAt := (sent/checkTicks + 2) * checkTicks
	for n := sent + 1; n < stopAt; n++ {
		dr.tick(t)
		if st := dr.stops.Load(); st != 0 {
			t.Fatalf("unread: the ticker stopped by tick %d, want at tick %d", n-1, stopAt)
		}
	}
	dr.tick(t)
	dr.wantStopped(t, "unread for two check periods")
	stale := atomic.LoadInt64(&c.word) >> stateBits

	dr.wall.Add(60_000) // a minute passes, no ticks
	if got, want := c.now(), dr.wall.Load(); got != want {
		t.Fatalf("now() after idling = %d, want %d (the ticker's last time was %d)", got, want, stale)
	}
	dr.wantState(t, "after the read that restarts", clockRunning)
	dr.tick(t)
	dr.tick(t)
	if got, want := c.now(), dr.wall.Load(); got != want && got != want-1 {
		t.Fatalf("now() after a restart and two ticks = %d, want %d or %d", got, want-1, want)
	}

	c.release()
	if s, st := dr.starts.Load(), dr.stops.Load(); s != 2 || st != 2 {
		t.Fatalf("after release: %d tickers started, %d stopped, want 2 and 2", s, st)
	}
	dr.wantState(t, "after release", 0)
	dr.wall.Add(5)
	if got, want := c.now(), dr.wall.Load(); got != want {
		t.Fatalf("now() after release = %d, want the system time %d", got, want)
	}
	dr.wantState(t, "a read after release", 0)
	if s := dr.starts.Load(); s != 2 {
		t.Fatalf("a read after release started a ticker: %d started", s)
	}

	// A later acquire works as the first did.
	c.acquire()
	dr.wantState(t, "after acquire again", clockOpen)
	dr.wall.Add(5)
	if got, want := c.now(), dr.wall.Load(); got != want {
		t.Fatalf("now() after acquire again = %d, want %d", got, want)
	}
	dr.tick(t)
	c.release()
	if s, st := dr.starts.Load(), dr.stops.Load(); s != 3 || st != 3 {
		t.Fatalf("after the second release: %d tickers started, %d stopped, want 3 and 3", s, st)
	}
}

// TestClockRestartOnce: many goroutines that read a stopped clock at once
// all get the time of that moment, and start one ticker between them.
func TestClockRestartOnce(t *testing.T) {
	dr := newCoarseDriver(1_000_000)
	c := &dr.c
	c.acquire()
	c.now()
	for i := 0; i < 2*checkTicks; i++ {
		dr.tick(t)
	}
	dr.wantStopped(t, "unread")
	dr.wall.Add(1000)
	want := dr.wall.Load()

	const readers = 16
	gate := make(chan struct{})
	got := make([]int64, readers)
	var wg sync.WaitGroup
	for g := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			got[g] = c.now()
		}()
	}
	close(gate)
	wg.Wait()
	for g, v := range got {
		if v != want {
			t.Errorf("reader %d: now() = %d, want %d", g, v, want)
		}
	}
	dr.wantState(t, "after the reads", clockRunning)
	c.release() // waits for every ticker started
	if s := dr.starts.Load(); s != 2 {
		t.Fatalf("%d readers of a stopped clock started %d tickers, want 1", readers, s-1)
	}
}

// TestClockStopRacesRestart: a read that restarts the clock while the
// ticker that stopped it has not yet returned (here, inside its check)
// starts the only live ticker: the stopping one still ends. Were it to see
// the new ticker's live word and go on, two tickers would tick, and one
// delayed between its read of the time and its store would put back a
// time older than the other's (TestClockConcurrentReaders saw a read 3
// ticks behind so, under -race beside other packages' tests).
func TestClockStopRacesRestart(t *testing.T) {
	dr := newCoarseDriver(1_000_000)
	c := &dr.c
	var once atomic.Bool
	restarted := make(chan struct{})
	c.check = func(bool) {
		if atomic.LoadInt64(&c.word)&clockLive == 0 && !once.Swap(true) {
			c.now() // the clock just stopped: this read restarts it
			close(restarted)
		}
	}
	c.acquire()
	c.now()
	for i := 0; i < 2*checkTicks; i++ {
		dr.tick(t)
	}
	select {
	case <-restarted:
	case <-time.After(time.Minute):
		t.Fatalf("no check found the clock stopped in a minute after %d unread ticks", 2*checkTicks)
	}
	select {
	case <-dr.stopped:
	case <-time.After(time.Minute):
		t.Fatalf("the ticker that stopped the clock still runs a minute later, beside the one the read started (%d started, %d stopped)", dr.starts.Load(), dr.stops.Load())
	}
	dr.wantState(t, "after the restart", clockRunning)
	dr.tick(t) // the new ticker takes it: it has started
	dr.tick(t) // and has stored the tick before
	if s, st := dr.starts.Load(), dr.stops.Load(); s != 2 || st != 1 {
		t.Fatalf("%d tickers started, %d stopped: want 2 and 1", s, st)
	}
	if got, want := c.now(), dr.wall.Load()-1; got < want {
		t.Errorf("now() = %d after two ticks of the restarted clock, want at least %d", got, want)
	}
	c.release()
	if s, st := dr.starts.Load(), dr.stops.Load(); s != st {
		t.Fatalf("after release: %d tickers started, %d stopped", s, st)
	}
}

// TestClockConcurrentReaders: readers on several goroutines, in rounds
// between which the ticker stops, never get a time more than two ticks
// behind the time when they started to read (one tick taken but not yet
// stored, one being handed over), nor one after the time when the read
// returned. Run it with -race.
func TestClockConcurrentReaders(t *testing.T) {
	const (
		readers = 8
		rounds  = 5
		reads   = 20_000
	)
	dr := newCoarseDriver(1_000_000)
	c := &dr.c
	c.acquire()
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		errs := make(chan string, readers)
		for g := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < reads; i++ {
					lo := dr.wall.Load()
					v := c.now()
					hi := dr.wall.Load()
					if v < lo-2 || v > hi {
						errs <- fmt.Sprintf("round %d reader %d read %d: now() = %d, time was %d..%d", r, g, i, v, lo, hi)
						return
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
	reading:
		for {
			dr.wall.Add(1)
			select {
			case dr.ticks <- time.Time{}:
			case <-done:
				break reading
			}
		}
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		// Nobody reads: tick until the ticker stops.
		for len(dr.stopped) > 0 {
			<-dr.stopped
		}
		if dr.state()&clockLive == 0 {
			continue
		}
	idle:
		for {
			dr.wall.Add(1)
			select {
			case dr.ticks <- time.Time{}:
			case <-dr.stopped:
				break idle
			}
		}
	}
	c.release()
	t.Logf("%d rounds: %d tickers started", rounds, dr.starts.Load())
	if s, st := dr.starts.Load(), dr.stops.Load(); s != st || s < rounds {
		t.Fatalf("%d tickers started, %d stopped: want as many stopped, and at least one a round (%d)", s, st, rounds)
	}
}

// TestClockLastCloseStops: the process's coarse clock runs while a Dict
// without an injected clock reads it, keeps running when one of two such
// Dicts closes, and its goroutine ends when the last closes.
func TestClockLastCloseStops(t *testing.T) {
	coarse.mu.Lock()
	refs := coarse.refs
	coarse.mu.Unlock()
	if refs != 0 {
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
	if s := atomic.LoadInt64(&coarse.word) & stateMask; s&clockLive == 0 {
		t.Fatalf("after a TTL write: clock state %s, want live", stateName(s))
	}
	if err := d1.Close(); err != nil {
		t.Fatal(err)
	}
	if s := atomic.LoadInt64(&coarse.word) & stateMask; s&clockOpen == 0 {
		t.Fatalf("after closing one of two Dicts: clock state %s, want open", stateName(s))
	}
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
	if s := atomic.LoadInt64(&coarse.word) & stateMask; s != 0 {
		t.Fatalf("after closing the last Dict: clock state %s, want closed", stateName(s))
	}
	testutil.WaitGoroutines(t, before, 10*time.Second)
	// Reads after the last Close are the system's time, and start nothing.
	lo = time.Now().UnixMilli()
	if got, hi := coarseNow(), time.Now().UnixMilli(); got < lo || got > hi {
		t.Fatalf("coarseNow() after the last Close = %d, want %d..%d", got, lo, hi)
	}
	if s := atomic.LoadInt64(&coarse.word) & stateMask; s != 0 {
		t.Fatalf("after a read of a closed clock: state %s, want closed", stateName(s))
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
	if s := atomic.LoadInt64(&coarse.word) & stateMask; s&clockLive == 0 {
		return fmt.Errorf("after a TTL write: clock state %s, want live", stateName(s))
	}
	coarse.wg.Wait() // the ticker stops two check periods on
	if s := atomic.LoadInt64(&coarse.word) & stateMask; s != clockOpen {
		return fmt.Errorf("idle: clock state %s, want open", stateName(s))
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

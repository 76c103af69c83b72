package coarseclock

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The clock's tests: its states driven by an injected time and ticker, and
// its readers under the race detector. dict's tests check the process
// clock under real Dicts and a real idle process.

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
	period  atomic.Int64  // of the ticker started last
	stopped chan struct{} // one send per stopped ticker
}

func newCoarseDriver(start int64) *coarseDriver {
	dr := &coarseDriver{ticks: make(chan time.Time), stopped: make(chan struct{}, 1<<16)}
	dr.wall.Store(start)
	dr.c.wall = dr.wall.Load
	dr.c.ticker = func(period time.Duration) (<-chan time.Time, func()) {
		dr.period.Store(int64(period))
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
func (dr *coarseDriver) state() int64 { return atomic.LoadInt64(&dr.c.word) & StateMask }

func (dr *coarseDriver) wantState(t *testing.T, when string, want int64) {
	t.Helper()
	if got := dr.state(); got != want {
		t.Fatalf("%s: state %s, want %s", when, StateName(got), StateName(want))
	}
}

// wantStopped waits for the ticker to stop on its own.
func (dr *coarseDriver) wantStopped(t *testing.T, when string) {
	t.Helper()
	select {
	case <-dr.stopped:
	case <-time.After(time.Minute):
		t.Fatalf("%s: the ticker did not stop in a minute; state %s", when, StateName(dr.state()))
	}
	dr.wantState(t, when, StateOpen)
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
	dr.wantState(t, "after acquire", StateOpen)
	if n := dr.starts.Load(); n != 0 {
		t.Fatalf("after acquire: %d tickers started, want 0", n)
	}

	dr.wall.Store(2_000_000)
	if got, want := c.now(), int64(2_000_000); got != want {
		t.Fatalf("first now() = %d, want %d", got, want)
	}
	dr.wantState(t, "after the first read", Running)
	for i := 1; i <= checkTicks; i++ {
		dr.tick(t)
	}
	dr.tick(t) // the check tick is done: the ticker asks for a read
	dr.wantState(t, "after a check tick", Running|StateCheck)
	if got, want := c.now(), dr.wall.Load(); got != want && got != want-1 {
		t.Fatalf("now() after %d ticks = %d, want %d or %d", checkTicks+1, got, want-1, want)
	}
	dr.wantState(t, "after a read answered the check", Running)
	for i := 0; i < 20; i++ { // later reads find nothing to answer
		c.now()
		dr.wantState(t, "after more reads", Running)
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
	stale := atomic.LoadInt64(&c.word) >> StateBits

	dr.wall.Add(60_000) // a minute passes, no ticks
	if got, want := c.now(), dr.wall.Load(); got != want {
		t.Fatalf("now() after idling = %d, want %d (the ticker's last time was %d)", got, want, stale)
	}
	dr.wantState(t, "after the read that restarts", Running)
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
	dr.wantState(t, "after acquire again", StateOpen)
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
	dr.wantState(t, "after the reads", Running)
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
		if atomic.LoadInt64(&c.word)&StateLive == 0 && !once.Swap(true) {
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
	dr.wantState(t, "after the restart", Running)
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
// returned: with a clock that always ticks, and with clocks that go
// direct, stay direct, and switch. Run it with -race.
func TestClockConcurrentReaders(t *testing.T) {
	for _, tt := range []struct {
		name string
		hot  int64
	}{
		{"ticking", 0},
		{"adapting", 5},      // ticks every millisecond after its first tick
		{"direct", 1 << 40},  // never reaches the rate
		{"switching", 2_000}, // goes back and forth as the readers' pace varies
	} {
		t.Run(tt.name, func(t *testing.T) { concurrentReaders(t, tt.hot) })
	}
}

func concurrentReaders(t *testing.T, hot int64) {
	const (
		readers = 8
		rounds  = 5
		reads   = 20_000
	)
	dr := newCoarseDriver(1_000_000)
	c := &dr.c
	c.hot = hot
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
		// Nobody reads: tick until the ticker stops. A ticker also calls
		// its stop when it changes its period, and goes on: only a stop
		// that finds the word no longer live is its end. Ending the loop
		// on any stop would leave a live ticker a millisecond behind the
		// time, and the next round's readers a third tick behind.
		for dr.state()&StateLive != 0 {
			dr.wall.Add(1)
			select {
			case dr.ticks <- time.Time{}:
			case <-dr.stopped:
			}
		}
		for len(dr.stopped) > 0 {
			<-dr.stopped
		}
	}
	c.release()
	t.Logf("%d rounds: %d tickers started", rounds, dr.starts.Load())
	if s, st := dr.starts.Load(), dr.stops.Load(); s != st || s < rounds {
		t.Fatalf("%d tickers started, %d stopped: want as many stopped, and at least one a round (%d)", s, st, rounds)
	}
}

// TestClockAdapts: a clock starts direct, and read rarely it stays so:
// reads return the system's time, and the ticker wakes only for its
// checks, every checkTicks ms. Read often, it ticks every millisecond. A
// probe that counts enough reads keeps it ticking. Unread, it stops as a
// ticking clock does.
func TestClockAdapts(t *testing.T) {
	const hot = 5 // reads a millisecond
	dr := newCoarseDriver(1_000_000)
	c := &dr.c
	c.hot = hot
	checked := make(chan struct{}, 1000)
	c.check = func(bool) { checked <- struct{}{} }
	waitChecks := func(when string, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			select {
			case <-checked:
			case <-time.After(time.Minute):
				t.Fatalf("%s: check %d of %d not made in a minute", when, i+1, n)
			}
		}
	}
	c.acquire()
	defer c.release()
	wantPeriod := func(when string, want time.Duration) {
		t.Helper()
		if got := time.Duration(dr.period.Load()); got != want {
			t.Fatalf("%s: ticker period %v, want %v", when, got, want)
		}
	}
	c.now()
	dr.wantState(t, "after the first read", Running|StateDirect)
	dr.wall.Add(7) // no tick: a direct read sees the system's time
	if got, want := c.now(), dr.wall.Load(); got != want {
		t.Fatalf("a direct read = %d, want the system's time %d", got, want)
	}
	dr.wall.Add(probeTicks - 1 - 7)
	dr.tick(t) // the first tick, probeTicks ms on: one read counted
	waitChecks("the first tick", 1)
	c.now()    // answers its check
	dr.tick(t) // the ticker of the new period took it: a direct check
	wantPeriod("after a first tick that counted one read", checkTicks*time.Millisecond)
	if s := dr.state(); s&(Running|StateDirect) != Running|StateDirect {
		t.Fatalf("after a first tick that counted one read: state %s, want open, live and direct", StateName(s))
	}
	waitChecks("the second tick", 1)

	// Direct: every tick is a check; reads below the rate keep it direct.
	for p := 0; p < 5; p++ {
		for i := 0; i < hot*checkTicks-1; i++ {
			c.now()
		}
		dr.wall.Add(checkTicks - 1) // a direct tick is checkTicks ms
		dr.tick(t)
		waitChecks("direct", 1)
	}
	wantPeriod("direct, read below the rate", checkTicks*time.Millisecond)

	// Read at the rate: the next check ticks every millisecond again.
	for i := 0; i < hot*checkTicks; i++ {
		c.now()
	}
	dr.tick(t)
	waitChecks("direct, read at the rate", 1)
	dr.tick(t) // the switch is done: the new ticker took this one
	wantPeriod("direct, read at the rate", time.Millisecond)
	if s := dr.state(); s&StateDirect != 0 || s&Running != Running {
		t.Fatalf("back to ticking: state %s, want open and live, not direct", StateName(s))
	}
	dr.tick(t)
	if got, want := c.now(), dr.wall.Load(); got != want && got != want-1 {
		t.Fatalf("ticking again: now() = %d, want %d or %d", got, want-1, want)
	}

	// The next probe comes probeEvery checks on; read at the rate in it
	// and the clock keeps ticking every millisecond.
	starts := dr.starts.Load()
	for probing := false; ; {
		dr.tick(t)
		c.now()
		if dr.state()&StateDirect != 0 {
			probing = true
			for i := 0; i < hot*probeTicks; i++ {
				c.now()
			}
		} else if probing {
			break
		}
		if dr.wall.Load() > 1_000_000+100*checkTicks*probeEvery {
			t.Fatal("no probe in a hundred check periods")
		}
	}
	if s := dr.starts.Load(); s != starts {
		t.Fatalf("a probe that counted the rate started %d tickers, want none", s-starts)
	}
	wantPeriod("after a probe at the rate", time.Millisecond)

	// Unread, direct or not, it stops. A ticker stopped for a switch of
	// period is not the clock stopping: tick on until the word says so.
	for len(dr.stopped) > 0 {
		<-dr.stopped
	}
	for stopped := false; !stopped; {
		select {
		case dr.ticks <- time.Time{}:
			dr.wall.Add(1)
		case <-dr.stopped:
			stopped = dr.state()&StateLive == 0
		case <-time.After(time.Minute):
			t.Fatalf("unread: the ticker did not stop in a minute; state %s", StateName(dr.state()))
		}
	}
	dr.wantState(t, "unread", StateOpen)
}

// TestClockStartsHot: a clock read at the rate from its start ticks every
// millisecond from its first tick on, probeTicks ms after the start.
func TestClockStartsHot(t *testing.T) {
	const hot = 5
	dr := newCoarseDriver(1_000_000)
	c := &dr.c
	c.hot = hot
	c.acquire()
	defer c.release()
	for i := 0; i <= hot*probeTicks; i++ {
		c.now()
	}
	dr.wall.Add(probeTicks - 1)
	dr.tick(t)
	dr.tick(t) // the ticker of the new period took it
	if got := time.Duration(dr.period.Load()); got != time.Millisecond {
		t.Fatalf("read %d times in the first %d ms: ticker period %v, want 1ms", hot*probeTicks, probeTicks, got)
	}
	dr.tick(t)
	if s := dr.state(); s&StateDirect != 0 {
		t.Fatalf("ticking every millisecond: state %s, want not direct", StateName(s))
	}
	if got, want := c.now(), dr.wall.Load(); got != want && got != want-1 {
		t.Fatalf("now() = %d, want %d or %d", got, want-1, want)
	}
}

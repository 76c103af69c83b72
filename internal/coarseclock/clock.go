// Package coarseclock is a per-process clock in Unix milliseconds that a
// read costs one atomic load.
//
// While something reads it often, one goroutine stores the time every
// millisecond. Read less often, it is the system's time, and the goroutine
// wakes every 100 ms only. The goroutine stops after 100 to 200 ms without
// a read, and the next read starts it again. A process that never reads it
// never ticks.
//
// Concurrency: every function is safe for use by many goroutines.
package coarseclock

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The clock: while something reads it, one goroutine per process
// stores the Unix time in milliseconds every millisecond, so that an
// operation reads the time with one atomic load instead of a time.Now call
// that costs more than the operation (as nginx caches its time once per
// event-loop turn). dict reads it only when an entry has or gets a TTL.
//
// A tick is not free: waking the goroutine costs a few microseconds of
// CPU, and tens on some virtual machines. A time.Now call costs tens of
// nanoseconds. So the ticker pays off only for a process that reads the
// clock more than some hundred times a millisecond, as a benchmark loop
// or a flood does. A server of a few thousand requests a second per
// process would spend more CPU on ticks than on the reads they save. The
// ticker so measures how often the clock is read. In the direct state a
// read takes time.Now and counts itself. While the ticker ticks every
// millisecond, every probeEvery checks it leaves the word direct for
// probeTicks ticks, to count. Fewer than hotReads reads a millisecond,
// and the clock stays direct: the ticker wakes only for its checks, every
// checkTicks milliseconds, and goes back to ticking every millisecond
// once a check counts hotReads reads a millisecond again. A clock starts
// direct, and decides at its first tick, probeTicks ms on.
//
// It costs nothing when idle. Every checkTicks ticks the ticker raises a
// "still read?" flag in the word that readers load; the first read that sees
// the flag clears it, so that readers write the word at most once a check
// period, never on every read. A ticker that finds its flag still raised at
// the next check, some 100 to 200 ms after the last read, marks the word
// stopped and ends. The next read takes the slow path: it returns time.Now and
// restarts the ticker, once, under the mutex; a read never returns the time
// a stopped ticker last stored. The first user's Acquire starts nothing, so
// a process that never reads the clock never ticks. The last user's Release
// stops the ticker for good, and reads after that return time.Now.
//
// The word holds the time shifted left by StateBits, and the state in its
// low bits: open (a user holds the clock), live (a ticker runs), check
// (the ticker's flag) and direct (reads take the system's time). A read in
// the steady state, open|live, is one load, a mask and a compare.

const (
	// StateBits is the number of low bits of the word that hold its state;
	// the time is the word shifted right by StateBits.
	StateBits = 4
	// StateMask selects the state bits of the word.
	StateMask = 1<<StateBits - 1

	StateOpen   = 1 << 0 // some user holds the clock: a read may restart it
	StateLive   = 1 << 1 // a ticker runs: without StateDirect, the word's time is fresh
	StateCheck  = 1 << 2 // the ticker asks whether anybody read since it set this
	StateDirect = 1 << 3 // a read takes the system's time, and counts itself

	// Running is the steady state under reads: the word's time is fresh.
	Running = StateOpen | StateLive

	// checkTicks is the ticks between two checks for readers: an unread
	// clock stops after between one and two check periods.
	checkTicks = 100

	// hotReads is the reads a millisecond from which the ticker stores
	// the time every millisecond; below it, reads take the system's time.
	hotReads = 200
	// probeTicks is how many ticks a probe of the read rate lasts, and
	// probeEvery the checks from one probe to the next.
	probeTicks = 10
	probeEvery = 50
)

// clock is a coarse clock; coarse is the process's, and tests make others
// with an injected time and ticker.
type clock struct {
	// word is the time and state: written by the ticker each tick (CAS),
	// by a reader that clears StateCheck (CAS), and under mu otherwise.
	// Every access is a sync/atomic call; it is a plain int64, not an
	// atomic.Int64, so that dict's Dict.Now, which loads it through a pointer,
	// stays within the inliner's budget. As a struct's first word, and at
	// offset 64 in coarse, it is 64-bit aligned on 32-bit platforms too.
	word int64
	_    [56]byte // the rest of the word's cache line: Acquire and Release write mu

	// reads counts the reads in the direct state, on a line of its own.
	reads atomic.Int64
	_     [56]byte

	mu   sync.Mutex
	refs int            // users holding the clock, under mu
	stop chan struct{}  // made by the first acquire, closed by the last release; under mu
	wg   sync.WaitGroup // the ticker goroutines, of which at most one is live

	wall   func() int64                                          // the time in Unix ms
	ticker func(period time.Duration) (<-chan time.Time, func()) // a tick source of a period and its stop
	check  func(last bool)                                       // called by the ticker at each check (last: the one that stops it), nil for none
	hot    int64                                                 // hotReads, or 0 for a clock that always ticks every millisecond
}

// coarse is the process's clock, its word on a cache line of its own.
var coarse = struct {
	_ [64]byte // the line before the word's: whatever precedes coarse
	clock
}{clock: clock{wall: systemMillis, ticker: newTicker, hot: hotReads}}

// systemMillis returns the system's time in Unix ms.
func systemMillis() int64 { return time.Now().UnixMilli() }

// newTicker ticks every period.
func newTicker(period time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(period)
	return t.C, t.Stop
}

// Now returns the process clock's time in Unix ms.
func Now() int64 { return coarse.now() }

// Word returns the process clock's word, for a reader that inlines Now: a
// load of the word whose state is Running holds the time, shifted left by
// StateBits. Any other state needs a call of Now.
func Word() *int64 { return &coarse.word }

// IsRunning reports whether the process clock's ticker runs, and so makes
// its checks, and does not ask for a read: whether it stores the time
// every millisecond or reads take the system's time.
func IsRunning() bool { return atomic.LoadInt64(&coarse.word)&(StateMask&^StateDirect) == Running }

// Acquire counts one more user of the process clock. The ticker starts at
// the first read after it.
func Acquire() { coarse.acquire() }

// Release counts one user less. The last user's Release stops the ticker
// for good: reads after it return time.Now.
func Release() { coarse.release() }

// OnCheck makes the process clock's ticker call f at each check for
// readers, about every 100 ms, and once more as it stops, with last true.
// It must be called before the first Acquire, from an init function.
func OnCheck(f func(last bool)) { coarse.check = f }

// Users returns the number of users the process clock has.
func Users() int {
	coarse.mu.Lock()
	defer coarse.mu.Unlock()
	return coarse.refs
}

// State returns the process clock's state bits.
func State() int64 { return atomic.LoadInt64(&coarse.word) & StateMask }

// WaitStopped waits until the process clock's ticker has stopped.
func WaitStopped() { coarse.wg.Wait() }

// now returns the time in Unix ms: one atomic load while the ticker runs.
func (c *clock) now() int64 {
	if w := atomic.LoadInt64(&c.word); w&StateMask == Running {
		return w >> StateBits
	}
	return c.nowStale()
}

// nowStale is now outside the steady state: it answers the ticker's check,
// reads the system time in the direct state or once all users are gone,
// and restarts a stopped ticker.
func (c *clock) nowStale() int64 {
	for {
		w := atomic.LoadInt64(&c.word)
		switch w & StateMask {
		case Running:
			return w >> StateBits
		case Running | StateCheck:
			if atomic.CompareAndSwapInt64(&c.word, w, w&^StateCheck) {
				return w >> StateBits
			}
		case Running | StateDirect:
			c.reads.Add(1)
			return c.wall()
		case Running | StateDirect | StateCheck:
			if atomic.CompareAndSwapInt64(&c.word, w, w&^StateCheck) {
				c.reads.Add(1)
				return c.wall()
			}
		case StateOpen:
			return c.restart()
		default: // no user: the clock is closed
			return c.wall()
		}
	}
}

// restart starts a stopped ticker, unless another read did first or the
// last user went, and returns the time.
func (c *clock) restart() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.wall()
	if atomic.LoadInt64(&c.word)&StateMask == StateOpen {
		w := now<<StateBits | Running
		if c.hot != 0 {
			w |= StateDirect // until the first tick (adapt.start)
		}
		c.reads.Store(0) // the stopped ticker's last reads are not this one's
		atomic.StoreInt64(&c.word, w)
		c.startTicker()
	}
	return now
}

// startTicker starts a ticker goroutine; c.mu is held and the word is live.
func (c *clock) startTicker() {
	c.wg.Add(1)
	go c.tick(c.stop)
}

// tick stores the time every tick until stop closes or a check finds that
// nobody read since the check before. A clock with hot set probes the
// read rate, and runs direct below it (adapt).
func (c *clock) tick(stop <-chan struct{}) {
	defer c.wg.Done()
	a := adapt{direct: c.hot != 0, period: probeTicks}
	ticks, stopTicks := c.ticker(a.start())
	defer func() { stopTicks() }()
	for n := 1; ; n++ {
		select {
		case <-ticks:
		case <-stop:
			return
		}
		check := a.direct || n%checkTicks == 0
		direct, period := a.next(c, check)
		now := c.wall() << StateBits
		var next int64
		for {
			w := atomic.LoadInt64(&c.word)
			switch {
			case !check:
				next = now | w&(StateMask&^StateDirect)
			case w&StateCheck != 0:
				next = now | StateOpen // unread for a whole period: stop
			default:
				next = now | Running | StateCheck
			}
			if next&StateLive != 0 && direct {
				next |= StateDirect
			}
			if atomic.CompareAndSwapInt64(&c.word, w, next) {
				break
			}
		}
		if check && c.check != nil {
			c.check(next&StateLive == 0)
		}
		// Whether this ticker stopped the clock is what it stored, not
		// what the word holds now: a read may have restarted the clock
		// since, with a ticker of its own. Going on beside it, this one
		// could store a time older than the other's.
		if next&StateLive == 0 {
			return
		}
		if period != 0 {
			stopTicks()
			ticks, stopTicks = c.ticker(period)
		}
	}
}

// adapt is a ticker's choice between ticking every millisecond and the
// direct state, from the reads it counts in its probes.
type adapt struct {
	direct bool // reads take the system's time; every tick is a check
	period int  // the ms between two ticks when direct: probeTicks at the start, then checkTicks
	probe  int  // ticks left in the current probe, ticking every millisecond
	checks int  // checks since the ticker started, ticking every millisecond
}

// start returns the ticker's first period: a started clock is direct, and
// its first tick, probeTicks ms on, tells from its reads whether to tick
// every millisecond. A busy process so loses no more than that to direct
// reads, and one that reads now and then does not tick a hundred times
// each time its clock restarts. A clock with hot 0 ticks every
// millisecond from the start.
func (a *adapt) start() time.Duration {
	if !a.direct {
		return time.Millisecond
	}
	return time.Duration(a.period) * time.Millisecond
}

// next moves a to the state of this tick, a check tick or not, and returns
// whether the word is to be direct, and the new period of the ticker when
// it changes (0 when it does not).
func (a *adapt) next(c *clock, check bool) (direct bool, period time.Duration) {
	if c.hot == 0 {
		return false, 0
	}
	switch {
	case a.direct:
		// Every tick is a check, a.period ms after the one before.
		if c.reads.Swap(0) >= c.hot*int64(a.period) {
			a.direct, a.checks = false, 1
			return false, time.Millisecond
		}
		if a.period != checkTicks {
			a.period = checkTicks
			return true, checkTicks * time.Millisecond
		}
		return true, 0
	case a.probe > 0:
		a.probe--
		if a.probe > 0 {
			return true, 0
		}
		if c.reads.Swap(0) < c.hot*probeTicks {
			a.direct, a.period = true, checkTicks
			return true, checkTicks * time.Millisecond
		}
		return false, 0
	case check:
		if a.checks%probeEvery == 0 {
			c.reads.Store(0)
			a.probe = probeTicks
		}
		a.checks++
		return a.probe > 0, 0
	}
	return false, 0
}

// acquire counts one more user; the ticker starts at the first read.
func (c *clock) acquire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refs++
	if c.refs > 1 {
		return
	}
	c.stop = make(chan struct{})
	atomic.StoreInt64(&c.word, StateOpen)
}

// release counts one user less, and stops the ticker when the last goes.
func (c *clock) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refs--
	if c.refs > 0 {
		return
	}
	close(c.stop)
	c.wg.Wait()
	atomic.StoreInt64(&c.word, 0)
}

// StateName names the state bits s, for messages.
func StateName(s int64) string {
	if s == 0 {
		return "closed"
	}
	var names []string
	for _, f := range []struct {
		bit  int64
		name string
	}{{StateOpen, "open"}, {StateLive, "live"}, {StateCheck, "check"}, {StateDirect, "direct"}} {
		if s&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, "|")
}

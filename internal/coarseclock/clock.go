// Package coarseclock is a per-process clock in Unix milliseconds that a
// read costs one atomic load.
//
// While something reads it, one goroutine stores the time every
// millisecond. The goroutine stops after 100 to 200 ms without a read, and
// the next read starts it again. A process that never reads it never ticks.
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
// low bits: open (a user holds the clock), live (a ticker stores the time)
// and check (the ticker's flag). A read in the steady state, open|live, is
// one load, a mask and a compare.

const (
	// StateBits is the number of low bits of the word that hold its state;
	// the time is the word shifted right by StateBits.
	StateBits = 3
	// StateMask selects the state bits of the word.
	StateMask = 1<<StateBits - 1

	StateOpen  = 1 << 0 // some user holds the clock: a read may restart it
	StateLive  = 1 << 1 // a ticker stores the time: the word's time is fresh
	StateCheck = 1 << 2 // the ticker asks whether anybody read since it set this

	// Running is the steady state under reads: the word's time is fresh.
	Running = StateOpen | StateLive

	// checkTicks is the ticks between two checks for readers: an unread
	// clock stops after between one and two check periods.
	checkTicks = 100
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

	mu   sync.Mutex
	refs int            // users holding the clock, under mu
	stop chan struct{}  // made by the first acquire, closed by the last release; under mu
	wg   sync.WaitGroup // the ticker goroutines, of which at most one is live

	wall   func() int64                      // the time in Unix ms
	ticker func() (<-chan time.Time, func()) // a tick source and its stop
	check  func(last bool)                   // called by the ticker at each check (last: the one that stops it), nil for none
}

// coarse is the process's clock, its word on a cache line of its own.
var coarse = struct {
	_ [64]byte // the line before the word's: whatever precedes coarse
	clock
}{clock: clock{wall: systemMillis, ticker: millisecondTicker}}

// systemMillis returns the system's time in Unix ms.
func systemMillis() int64 { return time.Now().UnixMilli() }

// millisecondTicker ticks every millisecond.
func millisecondTicker() (<-chan time.Time, func()) {
	t := time.NewTicker(time.Millisecond)
	return t.C, t.Stop
}

// Now returns the process clock's time in Unix ms.
func Now() int64 { return coarse.now() }

// Word returns the process clock's word, for a reader that inlines Now: a
// load of the word whose state is Running holds the time, shifted left by
// StateBits. Any other state needs a call of Now.
func Word() *int64 { return &coarse.word }

// IsRunning reports whether the process clock's ticker stores the time.
func IsRunning() bool { return atomic.LoadInt64(&coarse.word)&StateMask == Running }

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
// restarts a stopped ticker, or reads the system time once all users are
// gone.
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
		atomic.StoreInt64(&c.word, now<<StateBits|Running)
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
// nobody read since the check before.
func (c *clock) tick(stop <-chan struct{}) {
	defer c.wg.Done()
	ticks, stopTicks := c.ticker()
	defer stopTicks()
	for n := 1; ; n++ {
		select {
		case <-ticks:
		case <-stop:
			return
		}
		now := c.wall() << StateBits
		var next int64
		for {
			w := atomic.LoadInt64(&c.word)
			switch {
			case n%checkTicks != 0:
				next = now | w&StateMask
			case w&StateCheck != 0:
				next = now | StateOpen // unread for a whole period: stop
			default:
				next = now | Running | StateCheck
			}
			if atomic.CompareAndSwapInt64(&c.word, w, next) {
				break
			}
		}
		if n%checkTicks == 0 && c.check != nil {
			c.check(next&StateLive == 0)
		}
		// Whether this ticker stopped the clock is what it stored, not
		// what the word holds now: a read may have restarted the clock
		// since, with a ticker of its own. Going on beside it, this one
		// could store a time older than the other's.
		if next&StateLive == 0 {
			return
		}
	}
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
	}{{StateOpen, "open"}, {StateLive, "live"}, {StateCheck, "check"}} {
		if s&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, "|")
}

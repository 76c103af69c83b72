package shm

import (
	"runtime"
	"sync/atomic"
	"time"
)

// A lock word is a uint64 in the zone: 0 when free, otherwise its owner: the
// owner slot of the zone that took it in the low 32 bits and that slot's
// generation when it was claimed in the high 32 (I5, owner.go). Goroutines
// of one zone contend on the word like processes do; the zone's own word is
// live to it, unless the caller tracks its goroutines' holds and none holds
// the word (kin.go).

// LockResult says how a lock was taken. It is 0 when the lock was free at
// once.
type LockResult uint8

const (
	// LockWaited is set when the lock was not free at first.
	LockWaited LockResult = 1 << iota
	// LockRecovered is set when the lock was taken over from a dead owner.
	// The caller must repair what the lock protects before using it.
	LockRecovered
)

// LockState is what a lock word says of its holder.
type LockState uint8

const (
	// LockFree is a word that nobody holds.
	LockFree LockState = iota
	// LockLive is a word that a live owner holds. This zone is a live
	// owner.
	LockLive
	// LockDead is a word whose owner is gone, or that names no owner at
	// all. The next Lock takes it over, with LockRecovered.
	LockDead
)

// Tuning of the wait: spins, then yields, then sleeps with backoff; the owner
// is checked for life once the wait passes deadCheckAfter, or the timeout
// when that is shorter, so a dead owner is taken over whatever the timeout.
// The clock is read only once spinning and yielding have failed: the
// uncontended path and a short wait read no clock.
const (
	lockSpins      = 64
	lockYields     = 32
	sleepMin       = 20 * time.Microsecond
	sleepMax       = 2 * time.Millisecond
	deadCheckAfter = 5 * time.Millisecond
	// lookGapMax is the most that the time between two looks of a wait
	// counts toward its timeout. A waiter that the kernel did not run for
	// longer saw nothing of the holder meanwhile, and a machine that ran
	// nobody for a while ran no holder either: after such a stall, every
	// waiter would find its timeout passed at its first look, before any
	// holder ran again.
	lookGapMax = 10 * time.Millisecond
)

// monoNow is the clock of lock waits, which tests replace.
var monoNow = time.Now

// Lock takes the lock word w, and waits without bound. w is a word of this
// zone's mapping. For a read-only zone, it is a word of the process's own
// memory. Lock waits for a live owner, however long it holds w. Another
// goroutine of this zone is a live owner. Lock takes a dead owner's word
// over, and returns LockRecovered. LockWithin bounds the wait.
func (z *Zone) Lock(w *uint64) LockResult {
	if atomic.CompareAndSwapUint64(w, 0, z.own.word) {
		return 0
	}
	r, _ := z.lockSlow(w, 0, kin{})
	return r
}

// LockWithin takes w as Lock does, but waits for a live owner at most
// about timeout. A timeout of 0 or less waits without bound. The wait is
// measured on the monotonic clock. A dead owner is taken over, whatever the
// timeout.
//
// LockWithin returns ErrLockTimeout if a live owner held w for the whole
// timeout. It then leaves w as it was, still the other owner's. The timeout
// counts the time the wait's looks saw: a stretch in which the waiter was
// not run counts 10ms at most, since the holder may not have run either.
func (z *Zone) LockWithin(w *uint64, timeout time.Duration) (LockResult, error) {
	if atomic.CompareAndSwapUint64(w, 0, z.own.word) {
		return 0, nil
	}
	return z.lockSlow(w, timeout, kin{})
}

// TryLock takes w if it is free, and reports whether it did. It does not
// wait.
func (z *Zone) TryLock(w *uint64) bool { return atomic.CompareAndSwapUint64(w, 0, z.own.word) }

// Unlock releases w. The caller must hold it. The store is atomic, so the
// process that takes w next sees every write made before it.
func Unlock(w *uint64) { atomic.StoreUint64(w, 0) }

// LockState reports whether w is free, held by a live owner, or held by a
// dead one. A word that no owner wrote counts as dead. LockState changes
// nothing.
func (z *Zone) LockState(w *uint64) LockState {
	switch word := atomic.LoadUint64(w); {
	case word == 0:
		return LockFree
	case z.ownerDead(word):
		return LockDead
	}
	return LockLive
}

// LockWithinWatching is LockWithinCounted for a lock whose holder may hold
// it long while it shows progress. The holder shows progress by changing
// the word at progress while it holds w. The timeout then counts only the
// time since the last progress seen. A look sees progress when the progress
// word has changed since the look before, or w names another owner: a lock
// handed from owner to owner is not stuck, however long the waiter waits
// for its turn. A holder that changes the progress word as its work
// advances is never taken for stuck. One that stops changing it times its
// waiters out as before. progress is read atomically. nil watches nothing.
func (z *Zone) LockWithinWatching(w *uint64, c *Holders, timeout time.Duration, progress *uint64) (LockResult, error) {
	if c.swap(w, 0, z.own.word) {
		return 0, nil
	}
	return z.lockWatch(w, timeout, kin{c: c}, progress)
}

// lockSlow waits for w; timeout <= 0 waits without bound. k tells the zone's
// own word held by a goroutine of the zone from a corrupt one.
func (z *Zone) lockSlow(w *uint64, timeout time.Duration, k kin) (LockResult, error) {
	return z.lockWatch(w, timeout, k, nil)
}

// watch is what a wait knows of its holder's progress: the owner and the
// progress word at the last look, and when progress was last seen.
type watch struct {
	word  *uint64
	owner uint64
	last  uint64
	since time.Duration // the wait's time at the last progress seen
}

// saw looks at the progress word with w held by owner at the wait's time
// waited. It reports the wait's time from which the timeout counts.
func (p *watch) saw(owner uint64, waited time.Duration) time.Duration {
	if p.word == nil {
		return 0
	}
	v := atomic.LoadUint64(p.word)
	if (owner != p.owner && p.owner != 0) || v != p.last {
		p.since = waited
	}
	p.owner, p.last = owner, v
	return p.since
}

// lockWatch is lockSlow that watches progress (LockWithinWatching).
func (z *Zone) lockWatch(w *uint64, timeout time.Duration, k kin, progress *uint64) (LockResult, error) {
	self := z.own.word
	if tryHard(w, self, k.c) {
		return LockWaited, nil
	}
	start := monoNow() // carries a monotonic reading: Sub uses it
	deadAfter := deadCheckAfter
	if timeout > 0 && timeout < deadAfter {
		deadAfter = timeout
	}
	sleep := sleepMin
	pw := watch{word: progress}
	// seen is the wait's time as its looks saw it: each gap between two
	// looks counts lookGapMax at most. The timeout counts seen time.
	var seen, prev time.Duration
	for {
		owner := atomic.LoadUint64(w)
		if owner == 0 {
			if k.c.swap(w, 0, self) {
				return LockWaited, nil
			}
			continue
		}
		waited := monoNow().Sub(start)
		seen += min(waited-prev, lookGapMax)
		prev = waited
		idle := seen - pw.saw(owner, seen)
		if owner != self {
			k.quiet = 0
		}
		if waited >= deadAfter && owner == self && k.orphan(w, self, waited) {
			return LockWaited | LockRecovered, nil
		}
		if waited >= deadAfter && z.ownerDead(owner) {
			if k.c.swap(w, owner, self) {
				return LockWaited | LockRecovered, nil
			}
			continue
		}
		if timeout > 0 && idle >= timeout {
			// The deadline is judged on a fresh try, not on the one look
			// after a sleep: a waiter that was itself descheduled past the
			// deadline would otherwise give up on a lock that other
			// processes take and release all the time.
			if tryHard(w, self, k.c) {
				return LockWaited, nil
			}
			return 0, ErrLockTimeout
		}
		if timeout > 0 && sleep > timeout-idle {
			sleep = timeout - idle // wake at the deadline, not past it
		}
		time.Sleep(sleep)
		if sleep < sleepMax {
			sleep *= 2
		}
	}
}

// tryHard tries to take w for self by spinning, then yielding, and reports
// whether it did: the wait before any clock is read. Its swaps are counted
// in c, when not nil.
func tryHard(w *uint64, self uint64, c *Holders) bool {
	for i := 0; i < lockSpins; i++ {
		if atomic.LoadUint64(w) == 0 && c.swap(w, 0, self) {
			return true
		}
	}
	for i := 0; i < lockYields; i++ {
		runtime.Gosched()
		if atomic.LoadUint64(w) == 0 && c.swap(w, 0, self) {
			return true
		}
	}
	return false
}

// Unswap undoes a TryLock on w that succeeded. It stores 0 in w if w still
// holds this zone's lock word, and leaves w alone otherwise. It is for a
// caller that took w on a guess of where a lock word is, and found the
// guess stale. Such a caller must not write a word that is no longer its
// own.
func (z *Zone) Unswap(w *uint64) { atomic.CompareAndSwapUint64(w, z.own.word, 0) }

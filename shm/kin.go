package shm

import (
	"sync/atomic"
	"time"
)

// Every goroutine of a zone writes the zone's one owner word into the locks
// it takes, so the word does not say which of them holds a lock. A wait
// takes the zone's own word as a sibling's hold, and waits on. A corrupt
// word that happens to equal the owner word would then time out every wait
// of the zone for it, and its repair too. A caller that knows its
// goroutines' holds of a lock says so in one of two ways:
//   - Holders: the lock's takers count themselves in it, from before their
//     swap to after their release (TryLockCounted, LockWithinCounted,
//     UnlockCounted). The count is exact. A taker swaps only when its
//     count rose from 0, so two of the zone's goroutines never swap or
//     judge the word at once.
//   - held: a function the wait asks (LockWithinAsking), for a lock whose
//     takers mark their holds with plain stores, and whose waiter knows that
//     no new hold can begin while it waits.
//
// A wait that has waited deadCheckAfter on the zone's own word, and learns
// that no goroutine of the zone holds it, takes the word over as a dead
// owner's: LockRecovered.

// Holders counts the goroutines of one zone that hold one lock word, or
// that are swapping it from 0 to the zone's word. Every goroutine of a zone
// writes the same word, so a plain wait takes the zone's own word for a
// sibling's hold. With a count, a wait can tell that no sibling holds it,
// and take it over. The zero value counts none. The lock must be taken and
// released only through TryLockCounted, LockWithinCounted and
// UnlockCounted.
type Holders struct{ n atomic.Int32 }

// TryLockCounted is TryLock counted in c. It fails while another
// goroutine of the zone is counted in c.
func (z *Zone) TryLockCounted(w *uint64, c *Holders) bool { return c.swap(w, 0, z.own.word) }

// LockWithinCounted is LockWithin counted in c. It takes over a word that
// is the zone's own while c counts no other holder, and returns
// LockRecovered.
func (z *Zone) LockWithinCounted(w *uint64, c *Holders, timeout time.Duration) (LockResult, error) {
	if c.swap(w, 0, z.own.word) {
		return 0, nil
	}
	return z.lockSlow(w, timeout, kin{c: c})
}

// UnlockCounted releases w, which the caller took counted in c.
func UnlockCounted(w *uint64, c *Holders) {
	Unlock(w)
	c.n.Add(-1)
}

// LockWithinAsking is LockWithin for a word whose holds by the zone's
// goroutines held reports. held is called only when w holds the zone's own
// word, once the wait has passed the few milliseconds before owners are
// judged. If held reports false on eight looks in a row, over at least
// 50ms, LockWithinAsking takes w over and returns LockRecovered.
//
// The caller must know that no goroutine of the zone begins a hold of w
// while it waits. A swap that the goroutine undoes at once is allowed.
func (z *Zone) LockWithinAsking(w *uint64, timeout time.Duration, held func() bool) (LockResult, error) {
	if atomic.CompareAndSwapUint64(w, 0, z.own.word) {
		return 0, nil
	}
	return z.lockSlow(w, timeout, kin{held: held})
}

// swap is a compare-and-swap of w from old to new, counted in c when c is
// not nil. The count rises before the swap and falls again if it fails. A
// counted swap is tried only when the count rose from 0: no other goroutine
// of the zone holds w, swaps it, or judges it (orphan). So the count
// orders the zone's own goroutines, and the word orders the processes.
func (c *Holders) swap(w *uint64, old, new uint64) bool {
	if c == nil {
		return atomic.CompareAndSwapUint64(w, old, new)
	}
	if c.n.Add(1) == 1 && atomic.CompareAndSwapUint64(w, old, new) {
		return true
	}
	c.n.Add(-1)
	return false
}

// kin is what a wait knows of its zone's goroutines' holds of the word: a
// count, a function to ask, or neither. quiet counts the wait's looks in a
// row at its own word that held answered false, the first at quietFrom.
type kin struct {
	c         *Holders
	held      func() bool
	quiet     int
	quietFrom time.Duration
}

// An asked wait takes its own word over only after askLooks looks in a row,
// over askQuiet of its wait, found the word unmarked. A sibling marks its
// hold a few instructions after its swap, and held cannot see it between
// the two. The looks are the wait's own: a process stopped and resumed
// looks again, so its siblings run before it judges.
const (
	askLooks = 8
	askQuiet = 50 * time.Millisecond
)

// orphan takes over w, which holds self, the zone's own word, when no
// goroutine of the zone holds it, and reports whether it did. With a count,
// the waiter counts itself first. A count that rose from 0 is the waiter
// alone: no sibling holds w, and none can swap it until the waiter's count
// falls (swap). A sibling may have let w go since the waiter read it, so
// the takeover is a swap from self: it fails on a w that holds 0.
func (k *kin) orphan(w *uint64, self uint64, waited time.Duration) bool {
	switch {
	case k.c != nil:
		alone := k.c.n.Add(1) == 1
		if orphanHook != nil {
			orphanHook()
		}
		if alone && atomic.CompareAndSwapUint64(w, self, self) {
			return true
		}
		k.c.n.Add(-1)
	case k.held != nil:
		if k.held() {
			k.quiet = 0
			return false
		}
		if k.quiet == 0 {
			k.quietFrom = waited
		}
		k.quiet++
		return k.quiet >= askLooks && waited-k.quietFrom >= askQuiet && atomic.CompareAndSwapUint64(w, self, self)
	}
	return false
}

// orphanHook, when set, runs in a counted orphan between the count and the
// takeover, for tests of what siblings do there.
var orphanHook func()

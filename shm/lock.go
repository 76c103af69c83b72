package shm

import (
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A lock word is a uint32 in the zone: 0 when free, otherwise the pid of the
// process that holds it (I5). Goroutines of one process contend on it like
// processes do.

// LockResult says how a lock was taken.
type LockResult uint8

const (
	// LockWaited is set when the lock was held by another owner at first.
	LockWaited LockResult = 1 << iota
	// LockRecovered is set when the lock was taken over from a dead owner: the
	// caller must repair what the lock protects before using it.
	LockRecovered
)

// Self is this process's pid as a lock owner.
var Self = uint32(os.Getpid())

// Tuning of the wait: spins, then yields, then sleeps with backoff; the owner
// is checked for life once the wait passes deadCheckAfter.
const (
	lockSpins      = 64
	lockYields     = 32
	sleepMin       = 20 * time.Microsecond
	sleepMax       = 2 * time.Millisecond
	deadCheckAfter = 5 * time.Millisecond
)

// Lock takes the lock word w for this process. It never fails: a live owner is
// waited for, a dead one is taken over (LockRecovered).
func Lock(w *uint32) LockResult {
	if atomic.CompareAndSwapUint32(w, 0, Self) {
		return 0
	}
	return lockSlow(w)
}

// TryLock takes w if it is free and reports whether it did.
func TryLock(w *uint32) bool { return atomic.CompareAndSwapUint32(w, 0, Self) }

// Unlock releases w. The caller must hold it.
func Unlock(w *uint32) { storeRelease(w, 0) }

// Owner returns the pid holding w, or 0.
func Owner(w *uint32) uint32 { return atomic.LoadUint32(w) }

func lockSlow(w *uint32) LockResult {
	for i := 0; i < lockSpins; i++ {
		if atomic.LoadUint32(w) == 0 && atomic.CompareAndSwapUint32(w, 0, Self) {
			return LockWaited
		}
	}
	for i := 0; i < lockYields; i++ {
		runtime.Gosched()
		if atomic.LoadUint32(w) == 0 && atomic.CompareAndSwapUint32(w, 0, Self) {
			return LockWaited
		}
	}
	start := time.Now()
	sleep := sleepMin
	for {
		owner := atomic.LoadUint32(w)
		if owner == 0 {
			if atomic.CompareAndSwapUint32(w, 0, Self) {
				return LockWaited
			}
			continue
		}
		if time.Since(start) >= deadCheckAfter && owner != Self && !Alive(owner) {
			if atomic.CompareAndSwapUint32(w, owner, Self) {
				return LockWaited | LockRecovered
			}
			continue
		}
		time.Sleep(sleep)
		if sleep < sleepMax {
			sleep *= 2
		}
	}
}

// Alive reports whether a process with the given pid exists. A pid it may not
// signal (EPERM) exists.
func Alive(pid uint32) bool {
	if pid == 0 || pid > 1<<22 {
		return false
	}
	err := unix.Kill(int(pid), 0)
	return err == nil || err == unix.EPERM
}

// Steal takes w from a dead owner without waiting, and reports whether it
// did; for repair tools. It fails when w is free or its owner lives.
func Steal(w *uint32) bool {
	owner := atomic.LoadUint32(w)
	if owner == 0 || owner == Self || Alive(owner) {
		return false
	}
	return atomic.CompareAndSwapUint32(w, owner, Self)
}

package shm

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A lock word is a uint64 in the zone: 0 when free, otherwise its owner: the
// pid in the low 32 bits and, in the high 32, a token of that process's
// incarnation, the low bits of its start time (I5). The token tells a live
// process from a dead one whose pid was handed out again, which in a
// container that restarts is often the same pid, even this process's own.
// Goroutines of one process contend on the word like processes do.

// LockResult says how a lock was taken.
type LockResult uint8

const (
	// LockWaited is set when the lock was held by another owner at first.
	LockWaited LockResult = 1 << iota
	// LockRecovered is set when the lock was taken over from a dead owner: the
	// caller must repair what the lock protects before using it.
	LockRecovered
)

var (
	// Self is this process's pid as a lock owner.
	Self = uint32(os.Getpid())
	// selfWord is the lock word this process writes: pid and token.
	selfWord = ownerWord(Self, startToken(Self))
)

// ownerWord returns the lock word of a process with this pid and token.
func ownerWord(pid, token uint32) uint64 { return uint64(pid) | uint64(token)<<32 }

// startToken returns the low 32 bits of a process's start time in clock ticks
// since boot (field 22 of /proc/PID/stat), or 0 when it cannot be read.
func startToken(pid uint32) uint32 {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 20 { // fields 3.. ; start time is field 22
		return 0
	}
	t, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0
	}
	return uint32(t)
}

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
)

// Lock takes the lock word w for this process, waiting without bound: a live
// owner is waited for, however long it holds w, and a dead one is taken over
// (LockRecovered). LockWithin bounds the wait.
func Lock(w *uint64) LockResult {
	if atomic.CompareAndSwapUint64(w, 0, selfWord) {
		return 0
	}
	r, _ := lockSlow(w, 0)
	return r
}

// LockWithin takes w as Lock does, but waits at most about timeout for a live
// owner: then it returns ErrLockTimeout and w is left as it was, still the
// other owner's. A dead owner is taken over even when timeout is shorter than
// the wait before its death is judged. A timeout of 0 or less waits without
// bound. The wait is measured on the monotonic clock.
func LockWithin(w *uint64, timeout time.Duration) (LockResult, error) {
	if atomic.CompareAndSwapUint64(w, 0, selfWord) {
		return 0, nil
	}
	return lockSlow(w, timeout)
}

// TryLock takes w if it is free and reports whether it did.
func TryLock(w *uint64) bool { return atomic.CompareAndSwapUint64(w, 0, selfWord) }

// Unlock releases w. The caller must hold it.
func Unlock(w *uint64) { storeRelease(w, 0) }

// Owner returns the pid holding w, or 0.
func Owner(w *uint64) uint32 { return uint32(atomic.LoadUint64(w)) }

// lockSlow waits for w; timeout <= 0 waits without bound.
func lockSlow(w *uint64, timeout time.Duration) (LockResult, error) {
	for i := 0; i < lockSpins; i++ {
		if atomic.LoadUint64(w) == 0 && atomic.CompareAndSwapUint64(w, 0, selfWord) {
			return LockWaited, nil
		}
	}
	for i := 0; i < lockYields; i++ {
		runtime.Gosched()
		if atomic.LoadUint64(w) == 0 && atomic.CompareAndSwapUint64(w, 0, selfWord) {
			return LockWaited, nil
		}
	}
	start := time.Now() // carries a monotonic reading: time.Since uses it
	deadAfter := deadCheckAfter
	if timeout > 0 && timeout < deadAfter {
		deadAfter = timeout
	}
	sleep := sleepMin
	for {
		owner := atomic.LoadUint64(w)
		if owner == 0 {
			if atomic.CompareAndSwapUint64(w, 0, selfWord) {
				return LockWaited, nil
			}
			continue
		}
		waited := time.Since(start)
		if waited >= deadAfter && ownerDead(owner) {
			if atomic.CompareAndSwapUint64(w, owner, selfWord) {
				return LockWaited | LockRecovered, nil
			}
			continue
		}
		if timeout > 0 && waited >= timeout {
			return 0, ErrLockTimeout
		}
		if timeout > 0 && sleep > timeout-waited {
			sleep = timeout - waited // wake at the deadline, not past it
		}
		time.Sleep(sleep)
		if sleep < sleepMax {
			sleep *= 2
		}
	}
}

// ownerDead reports whether the process named by a lock word is gone: no
// process has its pid, or the one that has it started at another time.
func ownerDead(word uint64) bool {
	if word == selfWord {
		return false // a goroutine of this process
	}
	pid, token := uint32(word), uint32(word>>32)
	if pid == Self {
		return true // this pid's previous incarnation
	}
	if !Alive(pid) {
		return true
	}
	if token != 0 {
		if now := startToken(pid); now != 0 && now != token {
			return true
		}
	}
	return false
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

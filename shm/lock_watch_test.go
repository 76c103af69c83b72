package shm

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// inLockWatch reports whether some goroutine is waiting in lockWatch.
func inLockWatch() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "shm.(*Zone).lockWatch")
}

// startWatching starts a LockWithinWatching of w on a goroutine, and
// returns once it waits. The wait's result comes on the channel.
func startWatching(z *Zone, w *uint64, c *Holders, timeout time.Duration, progress *uint64) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := z.LockWithinWatching(w, c, timeout, progress)
		done <- err
	}()
	for !inLockWatch() {
		runtime.Gosched()
	}
	return done
}

// A holder that keeps showing progress holds the lock past the waiter's
// timeout twice over, and the waiter still takes it once it is
// freed. The holder changes the progress word as fast as it runs, so a
// waiter times out only if the holder is not run for a whole timeout.
func TestLockWithinWatchingProgress(t *testing.T) {
	z, w := lockZone(t)
	var c Holders
	var progress uint64
	if !z.TryLockCounted(w, &c) {
		t.Fatal("TryLockCounted(a free word) = false")
	}
	const timeout = time.Second // a second unrun: not even a busy machine
	done := startWatching(z, w, &c, timeout, &progress)
	// Two timeouts held: a least time, not a budget.
	start := time.Now()
	for time.Since(start) < 2*timeout {
		atomic.AddUint64(&progress, 2)
		runtime.Gosched()
	}
	UnlockCounted(w, &c)
	if err := <-done; err != nil {
		t.Fatalf("LockWithinWatching(held with progress for two timeouts) = %v, want nil", err)
	}
	UnlockCounted(w, &c)
}

// A holder that shows no progress times its waiter out, as LockWithin's
// holder does, and leaves the word as it was.
func TestLockWithinWatchingNoProgress(t *testing.T) {
	z, w := lockZone(t)
	var c Holders
	var progress uint64
	if !z.TryLockCounted(w, &c) {
		t.Fatal("TryLockCounted(a free word) = false")
	}
	before := atomic.LoadUint64(w)
	r, err := z.LockWithinWatching(w, &c, 10*time.Millisecond, &progress)
	if !errors.Is(err, ErrLockTimeout) || r != 0 {
		t.Fatalf("LockWithinWatching(held, no progress) = %d, %v, want 0, ErrLockTimeout", r, err)
	}
	if got := atomic.LoadUint64(w); got != before {
		t.Errorf("lock word after a timeout = %#x, want %#x unchanged", got, before)
	}
	UnlockCounted(w, &c)
}

// A lock that passes from owner to owner, none showing progress, holds the
// waiter past its timeout twice over, and the waiter still takes it once
// it is freed: a hand-off is progress. Each owner holds it a quarter of
// the timeout, so a waiter times out only if the owners are not run for
// a whole timeout. A waiter that counted only the progress word would
// give up, as the last case shows, where one owner keeps it.
func TestLockWithinWatchingHandoffs(t *testing.T) {
	path := tempZone(t)
	z := mustOpen(t, path, small)
	w := word64(z.Shard(0), 0)
	others := []*Zone{mustOpen(t, path, small), mustOpen(t, path, small)}
	var c Holders
	var progress uint64
	atomic.StoreUint64(w, others[0].own.word)
	const timeout = time.Second // a second unrun: not even a busy machine
	done := startWatching(z, w, &c, timeout, &progress)
	// Two timeouts held, by turns: a least time, not a budget.
	for start, i := time.Now(), 1; time.Since(start) < 2*timeout; i++ {
		time.Sleep(timeout / 4)
		atomic.StoreUint64(w, others[i%2].own.word)
	}
	atomic.StoreUint64(w, 0)
	if err := <-done; err != nil {
		t.Fatalf("LockWithinWatching(handed from owner to owner for two timeouts) = %v, want nil", err)
	}
	UnlockCounted(w, &c)

	atomic.StoreUint64(w, others[0].own.word)
	if _, err := z.LockWithinWatching(w, &c, 10*time.Millisecond, &progress); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("LockWithinWatching(held by one owner, no progress) = %v, want ErrLockTimeout", err)
	}
	atomic.StoreUint64(w, 0)
}

// A waiter that was not run for longer than its timeout, here a clock that
// jumps 5s at its first look, still waits: a holder may not have run
// meanwhile either. It takes the lock once the holder frees it, a few
// milliseconds of its looks later. Counting the jump, it gave up at that
// look.
func TestLockWaitOutlastsStall(t *testing.T) {
	path := tempZone(t)
	z := mustOpen(t, path, small)
	w := word64(z.Shard(0), 0)
	holder := mustOpen(t, path, small)
	atomic.StoreUint64(w, holder.own.word)
	var calls atomic.Int64
	monoNow = func() time.Time {
		if calls.Add(1) >= 2 { // the first look, and every one after it
			return time.Now().Add(5 * time.Second)
		}
		return time.Now()
	}
	t.Cleanup(func() { monoNow = time.Now })
	go func() {
		for calls.Load() < 3 { // the wait has looked after the jump
			runtime.Gosched()
		}
		atomic.StoreUint64(w, 0)
	}()
	var progress uint64
	if _, err := z.LockWithinWatching(w, nil, time.Second, &progress); err != nil {
		t.Fatalf("LockWithinWatching after a stall of 5s, then a release = %v, want nil", err)
	}
	Unlock(w)
}

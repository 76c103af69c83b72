package shm

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLooks gives lock waits a clock that advances by step at each
// reading, and calls at with the time since its first reading before it
// returns. A wait reads the clock once a look, so the holders that at
// plays act between two looks of the wait, whatever the machine's load:
// no wall clock decides the test.
func fakeLooks(t *testing.T, step time.Duration, at func(elapsed time.Duration)) {
	base := time.Now()
	var next time.Duration
	monoNow = func() time.Time {
		el := next
		next += step
		at(el)
		return base.Add(el)
	}
	t.Cleanup(func() { monoNow = time.Now })
}

// lookStep is the fake clock's advance at each look: below lookGapMax, so
// that the wait counts all of it.
const lookStep = 5 * time.Millisecond

// A holder that keeps showing progress holds the lock past the waiter's
// timeout twice over, and the waiter still takes it once it is freed.
func TestLockWithinWatchingProgress(t *testing.T) {
	z, w := lockZone(t)
	var c Holders
	var progress uint64
	if !z.TryLockCounted(w, &c) {
		t.Fatal("TryLockCounted(a free word) = false")
	}
	const timeout = time.Second
	held := true
	fakeLooks(t, lookStep, func(el time.Duration) {
		switch {
		case el < 2*timeout:
			atomic.AddUint64(&progress, 2)
		case held:
			held = false
			UnlockCounted(w, &c)
		}
	})
	if _, err := z.LockWithinWatching(w, &c, timeout, &progress); err != nil {
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
// the timeout. A waiter that counted only the progress word would give
// up, as the last case shows, where one owner keeps it.
func TestLockWithinWatchingHandoffs(t *testing.T) {
	path := tempZone(t)
	z := mustOpen(t, path, small)
	w := word64(z.Shard(0), 0)
	others := []*Zone{mustOpen(t, path, small), mustOpen(t, path, small)}
	var c Holders
	var progress uint64
	atomic.StoreUint64(w, others[0].own.word)
	const timeout = time.Second
	fakeLooks(t, lookStep, func(el time.Duration) {
		switch turn := int(el / (timeout / 4)); {
		case el < 2*timeout:
			atomic.StoreUint64(w, others[turn%2].own.word)
		default:
			atomic.CompareAndSwapUint64(w, others[turn%2].own.word, 0)
			atomic.CompareAndSwapUint64(w, others[1-turn%2].own.word, 0)
		}
	})
	if _, err := z.LockWithinWatching(w, &c, timeout, &progress); err != nil {
		t.Fatalf("LockWithinWatching(handed from owner to owner for two timeouts) = %v, want nil", err)
	}
	UnlockCounted(w, &c)

	monoNow = time.Now
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

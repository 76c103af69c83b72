package shm

import (
	"errors"
	"testing"
	"time"
)

// A live owner that keeps the lock past the timeout makes LockWithin give up
// with ErrLockTimeout, after the timeout and not before, leaving the word as
// it was.
func TestLockWithinTimesOut(t *testing.T) {
	for _, timeout := range []time.Duration{time.Millisecond, 30 * time.Millisecond} {
		t.Run(timeout.String(), func(t *testing.T) {
			z, w := lockZone(t)
			z.Lock(w) // held by this zone: a live owner
			before := *w
			start := time.Now()
			r, err := z.LockWithin(w, timeout)
			elapsed := time.Since(start)
			if !errors.Is(err, ErrLockTimeout) || r != 0 {
				t.Fatalf("LockWithin(held by a live owner, %v) = %d, %v, want 0, ErrLockTimeout", timeout, r, err)
			}
			if elapsed < timeout {
				t.Errorf("LockWithin(held, %v) gave up after %v, before its timeout", timeout, elapsed)
			}
			if *w != before {
				t.Errorf("lock word after a timeout = %#x, want %#x unchanged", *w, before)
			}
			Unlock(w)
		})
	}
}

// A lock freed during the wait is taken, however short what is left of the
// timeout.
func TestLockWithinTakesFreedLock(t *testing.T) {
	z, w := lockZone(t)
	z.Lock(w)
	done := make(chan error, 1)
	go func() {
		_, err := z.LockWithin(w, time.Minute)
		done <- err
	}()
	for !inLockSlow() {
		time.Sleep(time.Millisecond)
	}
	Unlock(w)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("LockWithin(freed during the wait) = %v, want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("LockWithin still waiting a minute after the lock was freed")
	}
	if got := *w; got != z.own.word {
		t.Fatalf("word = %#x, want %#x", got, z.own.word)
	}
}

// A dead owner is taken over even when the timeout is shorter than the wait
// after which death is judged: otherwise a short timeout would never recover
// a lock.
func TestLockWithinRecoversBeforeTimeout(t *testing.T) {
	z, w := lockZone(t)
	*w = freeSlotWord(t, z, 3)
	r, err := z.LockWithin(w, 100*time.Microsecond)
	if err != nil || r != LockWaited|LockRecovered {
		t.Fatalf("LockWithin(dead owner, 100µs) = %d, %v, want LockWaited|LockRecovered, nil", r, err)
	}
	if got := *w; got != z.own.word {
		t.Fatalf("word = %#x, want %#x", got, z.own.word)
	}
}

// A timeout of 0 or less waits without bound, as Lock does.
func TestLockWithinNoBound(t *testing.T) {
	z, w := lockZone(t)
	z.Lock(w)
	done := make(chan error, 1)
	go func() {
		_, err := z.LockWithin(w, 0)
		done <- err
	}()
	for !inLockSlow() {
		time.Sleep(time.Millisecond)
	}
	// Well past deadCheckAfter and any short bound, the waiter still waits.
	time.Sleep(20 * deadCheckAfter)
	select {
	case err := <-done:
		t.Fatalf("LockWithin(held, 0) = %v while the lock was held", err)
	default:
	}
	Unlock(w)
	if err := <-done; err != nil {
		t.Fatalf("LockWithin(held, 0) = %v after Unlock, want nil", err)
	}
}

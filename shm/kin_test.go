package shm

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// The zone's own word in a lock that no goroutine of the zone holds is
// corrupt: a counted wait, or one whose held reports no hold, takes it over
// as a dead owner's: a wait that took it for a live hold would end with
// ErrLockTimeout. An uncounted wait cannot tell, and times out as it did.
func TestOrphanOwnWordTakenOver(t *testing.T) {
	const timeout = 10 * time.Second
	tests := []struct {
		name string
		lock func(z *Zone, w *uint64, c *Holders) (LockResult, error)
		want LockResult
		err  error
	}{
		{"counted", func(z *Zone, w *uint64, c *Holders) (LockResult, error) {
			return z.LockWithinCounted(w, c, timeout)
		}, LockWaited | LockRecovered, nil},
		{"counted without bound", func(z *Zone, w *uint64, c *Holders) (LockResult, error) {
			return z.LockWithinCounted(w, c, 0)
		}, LockWaited | LockRecovered, nil},
		{"asking, no hold", func(z *Zone, w *uint64, c *Holders) (LockResult, error) {
			return z.LockWithinAsking(w, timeout, func() bool { return false })
		}, LockWaited | LockRecovered, nil},
		{"asking, held", func(z *Zone, w *uint64, c *Holders) (LockResult, error) {
			return z.LockWithinAsking(w, 50*time.Millisecond, func() bool { return true })
		}, 0, ErrLockTimeout},
		{"uncounted", func(z *Zone, w *uint64, c *Holders) (LockResult, error) {
			return z.LockWithin(w, 50*time.Millisecond)
		}, 0, ErrLockTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z, w := lockZone(t)
			*w = z.own.word // no goroutine took it
			var c Holders
			r, err := tt.lock(z, w, &c)
			if r != tt.want || !errors.Is(err, tt.err) {
				t.Fatalf("lock of the zone's own word, no holder = %d, %v; want %d, %v", r, err, tt.want, tt.err)
			}
			if *w != z.own.word {
				t.Errorf("word = %#x, want the zone's %#x", *w, z.own.word)
			}
			if err != nil {
				return
			}
			if tt.name != "counted" && tt.name != "counted without bound" {
				return
			}
			if n := c.n.Load(); n != 1 {
				t.Errorf("count after the takeover = %d, want 1", n)
			}
			UnlockCounted(w, &c)
			if n := c.n.Load(); *w != 0 || n != 0 {
				t.Errorf("after UnlockCounted: word %#x, count %d; want 0, 0", *w, n)
			}
		})
	}
}

// A sibling's counted hold is never taken for a corrupt word: a counted wait
// for it times out while the sibling holds it, and takes it plainly once
// the sibling lets go, however long it held it.
func TestCountedSiblingIsLive(t *testing.T) {
	z, w := lockZone(t)
	var c Holders
	if !z.TryLockCounted(w, &c) {
		t.Fatal("TryLockCounted of a free word failed")
	}
	if r, err := z.LockWithinCounted(w, &c, 30*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("LockWithinCounted(held by a sibling) = %d, %v, want ErrLockTimeout", r, err)
	}
	done := make(chan LockResult, 1)
	go func() {
		r, err := z.LockWithinCounted(w, &c, time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	time.Sleep(4 * deadCheckAfter) // the waiter judges the word several times
	UnlockCounted(w, &c)
	select {
	case r := <-done:
		if r != LockWaited {
			t.Errorf("LockWithinCounted once the sibling let go = %d, want LockWaited", r)
		}
	case <-time.After(time.Minute):
		t.Fatal("LockWithinCounted still waiting a minute after the sibling let go")
	}
	UnlockCounted(w, &c)
	if n := c.n.Load(); n != 0 {
		t.Errorf("count at the end = %d, want 0", n)
	}
}

// Goroutines that take and release a counted lock, some through waits that
// judge the word, never hold it two at once.
func TestCountedExclusive(t *testing.T) {
	z, w := lockZone(t)
	var c Holders
	var in, over int32
	var mu sync.Mutex // guards in and over; the lock word is what is tested
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if _, err := z.LockWithinCounted(w, &c, time.Minute); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				in++
				if in > 1 {
					over++
				}
				mu.Unlock()
				if i%50 == 0 {
					time.Sleep(2 * deadCheckAfter) // long enough to be judged
				}
				mu.Lock()
				in--
				mu.Unlock()
				UnlockCounted(w, &c)
			}
		}()
	}
	wg.Wait()
	if over != 0 {
		t.Fatalf("%d times two goroutines held the counted lock at once", over)
	}
	if n := c.n.Load(); *w != 0 || n != 0 {
		t.Fatalf("at the end: word %#x, count %d; want 0, 0", *w, n)
	}
}

// A sibling that lets the word go and takes it again while a counted wait
// judges it, between the wait's count and its takeover, is never joined
// there: the wait takes no word that a sibling holds. Without the rule that
// a counted swap goes alone, the sibling's swap from 0 and the wait's
// takeover from the own word both succeeded.
func TestOrphanRacesSiblingRelock(t *testing.T) {
	z, w := lockZone(t)
	var c Holders
	if !z.TryLockCounted(w, &c) {
		t.Fatal("TryLockCounted of a free word failed")
	}
	var sibling bool
	hooked := false
	orphanHook = func() {
		if hooked {
			return
		}
		hooked = true
		// The holder the wait read lets go of the word, and takes it
		// again. Its count fell before the wait's count rose (below).
		Unlock(w)
		sibling = z.TryLockCounted(w, &c)
	}
	defer func() { orphanHook = nil }()
	// The holder let go between the wait's load of the word and its
	// count: its count falls first, its word in the hook.
	c.n.Add(-1)
	r, err := z.LockWithinCounted(w, &c, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !hooked {
		t.Fatal("the wait never judged the word")
	}
	if sibling {
		t.Fatalf("the sibling took the word again while the wait judged it, and the wait took it too (%d)", r)
	}
	if r&LockRecovered != 0 {
		t.Errorf("LockWithinCounted = %d: a word let go is no orphan", r)
	}
	UnlockCounted(w, &c)
	if n := c.n.Load(); *w != 0 || n != 0 {
		t.Fatalf("at the end: word %#x, count %d; want 0, 0", *w, n)
	}
}

// An asked wait does not take its own word for an orphan on a few looks
// that find it unmarked: a sibling marks its hold a few instructions after
// its swap. Here held finds the sibling's mark only from its askLooks-th
// call on, and the wait times out instead of joining the sibling.
func TestAskedWaitLooksBeforeTakeover(t *testing.T) {
	z, w := lockZone(t)
	*w = z.own.word // a sibling swapped it and has not marked it yet
	calls := 0
	held := func() bool {
		calls++
		return calls >= askLooks
	}
	r, err := z.LockWithinAsking(w, 300*time.Millisecond, held)
	if !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("LockWithinAsking(a sibling's word, marked from look %d) = %d, %v; want ErrLockTimeout", askLooks, r, err)
	}
	if calls < askLooks {
		t.Fatalf("held was asked %d times: the wait never judged the word", calls)
	}
}

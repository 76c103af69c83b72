package dict

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// A lock word in the zone that equals the Dict's own owner word while no
// goroutine of the Dict holds the lock is corrupt: random damage to a live
// zone can write it. It must not be taken as a sibling's hold, which would
// time out every operation on the lock, and the repair too. The next wait
// for it takes it over as a dead owner's, well within the lock timeout.

// ownWordTimeout is the tests' lock timeout: a wait that took the corrupt
// word for a live hold would end with ErrLockTimeout after it.
const ownWordTimeout = 10 * time.Second

// recoverBy are the ways the tests below get past a corrupt word: an
// operation that needs the shard's lock and drains k's page, Repair, and a
// writable Check.
var recoverBy = []struct {
	name string
	do   func(d *Dict) error
}{
	{"Delete", func(d *Dict) error { return d.Delete("k") }},
	{"Repair", func(d *Dict) error {
		_, err := d.Repair()
		return err
	}},
	{"Check", func(d *Dict) error { return d.Check() }},
}

// openOwnWord opens a zone of one shard with k at 7 and other keys around
// it, and returns k's entry offset.
func openOwnWord(t *testing.T) (*Dict, *shard, uint32) {
	t.Helper()
	d, _ := openTest(t, Options{Size: specMinZone, Shards: 1, LockTimeout: ownWordTimeout})
	for _, k := range []string{"a", "k", "z"} {
		specSet(t, d, k, Int(7), 0, 0)
	}
	s, off := placeOf(t, d, "k")
	return d, s, off
}

// wantRecoveredWord runs do on d, whose lock word w the test corrupted, and
// checks that it succeeded and left the word free and the zone sound. A
// wait that took the word for a live hold would have failed with
// ErrLockTimeout.
func wantRecoveredWord(t *testing.T, d *Dict, w *uint64, do func(d *Dict) error) {
	t.Helper()
	if err := do(d); err != nil {
		t.Fatalf("with the lock word corrupt to the Dict's own = %v, want nil", err)
	}
	if got := atomic.LoadUint64(w); got != 0 {
		t.Errorf("lock word afterwards = %#x, want 0", got)
	}
	if st := d.Stats(); st.Recoveries == 0 {
		t.Errorf("Stats().Recoveries = 0: the corrupt word was not taken over")
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() afterwards = %v", err)
	}
}

// TestCorruptOwnShardLock: a shard's lock word corrupt to the Dict's own
// word is taken over by the next operation that needs the lock, by Repair,
// and by Check.
func TestCorruptOwnShardLock(t *testing.T) {
	for _, rb := range recoverBy {
		t.Run(rb.name, func(t *testing.T) {
			d, s, _ := openOwnWord(t)
			own, _ := OwnerWord(d)
			atomic.StoreUint64(&s.h.Lock, own)
			wantRecoveredWord(t, d, &s.h.Lock, rb.do)
		})
	}
}

// TestCorruptOwnPageLock: the lock word of an entry's slab page corrupt to
// the Dict's own word is taken over by the next drain of the page: that of
// a structural change, of Repair, and of Check. An Incr of the entry,
// which cannot pin the page, takes the shard's lock and drains it too.
func TestCorruptOwnPageLock(t *testing.T) {
	for _, rb := range recoverBy {
		t.Run(rb.name, func(t *testing.T) {
			d, s, off := openOwnWord(t)
			pw := s.slab.PageLock(off)
			if pw == nil {
				t.Fatal("k's entry has no page lock")
			}
			own, _ := OwnerWord(d)
			atomic.StoreUint64(pw, own)
			wantRecoveredWord(t, d, pw, rb.do)
			wantGet(t, d, "a", Int(7), 0)
		})
	}
	t.Run("Incr", func(t *testing.T) {
		d, s, off := openOwnWord(t)
		pw := s.slab.PageLock(off)
		own, _ := OwnerWord(d)
		atomic.StoreUint64(pw, own)
		wantRecoveredWord(t, d, pw, func(d *Dict) error {
			if n, err := d.Incr("k", 1); err != nil || n != 8 {
				return fmt.Errorf("Incr(k, 1) = %d, %v; want 8, nil", n, err)
			}
			return nil
		})
	})
}

// TestSiblingHoldsStayLive: the Dict's own word held by one of its
// goroutines, inside a function given to Update under the shard's lock or
// to Mutate under the entry's page lock, is a live hold however long it
// lasts: another goroutine's wait for the lock gives up with
// ErrLockTimeout and takes nothing over.
func TestSiblingHoldsStayLive(t *testing.T) {
	const timeout = 100 * time.Millisecond // many times the wait before a word is judged
	tests := []struct {
		name string
		hold func(d *Dict, fn func()) error
	}{
		{"shard lock", func(d *Dict, fn func()) error {
			var out Outcome
			return d.lockUpdate("k", func(cur Value, ok bool) (Value, time.Duration, bool) {
				fn()
				return cur, 0, ok
			}, &out)
		}},
		{"page lock", func(d *Dict, fn func()) error {
			return d.Mutate("m", 8, 0, func(b []byte, found bool) bool {
				fn()
				return true
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := openTest(t, Options{Size: specMinZone, Shards: 1, LockTimeout: timeout})
			specSet(t, d, "k", Int(7), 0, 0)
			specSet(t, d, "m", Bytes(make([]byte, 8)), 0, 0)
			in, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				done <- tt.hold(d, func() {
					close(in)
					<-release
				})
			}()
			<-in
			// Delete drains m's page under the shard's lock.
			if err := d.Delete("m"); !errors.Is(err, ErrLockTimeout) {
				t.Errorf("Delete(m) while a sibling holds the %s = %v, want ErrLockTimeout", tt.name, err)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatalf("the holder's operation = %v", err)
			}
			if st := d.Stats(); st.Recoveries != 0 {
				t.Errorf("Stats().Recoveries = %d: a sibling's hold was taken over", st.Recoveries)
			}
			if err := d.Delete("m"); err != nil {
				t.Fatalf("Delete(m) once the holder let go = %v", err)
			}
		})
	}
}

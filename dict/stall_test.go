//go:build dictstall

package dict

import (
	"bytes"
	"sync/atomic"
	"testing"

	"github.com/shmzone/shmzone/slab"
)

// Tests that replay an interleaving of the optimistic paths step by step,
// stalling a goroutine at a stall point (stall.go): go test -tags
// dictstall.

// TestStalePinKeepsSiblingsPageLock: a write in place whose find went stale
// (its entry was deleted and its page freed before it swapped the page's
// word) must not take the word of the free page, so that, once the page is
// taken again and another goroutine of the same process pins an entry in
// it, giving the word back (Unswap, which compares with the process's
// owner word, the same for all its goroutines) cannot release that
// goroutine's lock. A released lock let a structural change free the
// entry under the other goroutine's Mutate callback, which then wrote
// into whatever entry took its chunk.
//
// G1 sets "a" in place and stalls in pinFirst after its Seq check: "a" is
// deleted and its page freed. If G1's swap of the page's word succeeds, it
// stalls again after it: "b" is set in the freed page, which Alloc takes
// again, zeroing its word, and G3 pins "b" in a Mutate whose fn waits.
// G1 then finds Seq changed and gives its swap back.
func TestStalePinKeepsSiblingsPageLock(t *testing.T) {
	d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
	s := &d.shards[0]
	val := func(c byte) Value { return Bytes(bytes.Repeat([]byte{c}, 200)) }
	offOf := func(key string) uint32 {
		LockShard(d, 0)
		defer d.unlock(s)
		d.beginChange(s)
		off, _ := s.findInShard(key, hashKey(d.seed, key))
		return off
	}
	specSet(t, d, "a", val('a'), 0, 0)
	pageA := s.slab.PageWord(offOf("a"))

	inFn, releaseFn, fnDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	mutateB := func() {
		go func() {
			fnDone <- d.Mutate("b", 200, 0, func(b []byte, found bool) bool {
				close(inFn)
				<-releaseFn
				for i := range b {
					b[i] = 'X'
				}
				return true
			})
		}()
		<-inFn
	}
	var before, after atomic.Bool
	before.Store(true)
	after.Store(true)
	swapped := false
	stallHook = func(at stallPoint) {
		switch {
		case at == stallBeforeSwap && before.CompareAndSwap(true, false):
			if err := d.Delete("a"); err != nil {
				t.Errorf("Delete(a) = %v", err)
			}
			if w := atomic.LoadUint64(pageA); w != slab.FreeWord {
				t.Logf("a's page, freed: word %#x, want slab.FreeWord", w)
			}
		case at == stallAfterSwap && after.CompareAndSwap(true, false):
			swapped = true
			t.Logf("G1 swapped the word of a's freed page: %#x", atomic.LoadUint64(pageA))
			specSet(t, d, "b", val('b'), 0, 0)
			if got := s.slab.PageWord(offOf("b")); got != pageA {
				t.Logf("b is not in a's old page")
			}
			mutateB()
		}
	}
	defer func() { stallHook = nil }()
	specSet(t, d, "a", val('A'), 0, 0) // G1
	before.Store(false)
	after.Store(false)
	if !swapped {
		specSet(t, d, "b", val('b'), 0, 0)
		mutateB()
	}

	own, _ := OwnerWord(d)
	pageB := s.slab.PageWord(offOf("b"))
	if w := atomic.LoadUint64(pageB); w != own {
		t.Errorf("b's page word = %#x while G3's Mutate(b) holds it, want its owner word %#x: G1's stale swap (it swapped a freed page: %t) released G3's lock", w, own, swapped)
	}
	if swapped {
		t.Errorf("G1 swapped the word of a page freed since its find")
	}
	close(releaseFn)
	if err := <-fnDone; err != nil {
		t.Fatalf("Mutate(b) = %v", err)
	}
	wantGet(t, d, "b", Bytes(bytes.Repeat([]byte{'X'}, 200)), 0)
	wantGet(t, d, "a", val('A'), 0)
}

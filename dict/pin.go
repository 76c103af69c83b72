package dict

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/shmzone/shmzone/shm"
)

// The two ways to an entry (DESIGN.md, section 8, has the whole protocol):
//
// A structural change (an insert, a delete, an eviction, a value that moves
// to another chunk, a repair) holds the shard's lock; the lock makes the
// shard's Seq odd while it is held. It drains the page lock of each existing
// entry it changes before it changes it (drainPage): writers already inside
// that page finish, and none can start, as they validate Seq.
//
// An entry write (Incr, Mutate on a live value of its size) and a read take
// no shard lock: they find the entry optimistically (findOptimistic), and a
// writer then takes the entry's page lock and checks that Seq has not moved
// since the find (pinFirst, pinRetry). From then until it unlocks the page,
// the entry is its own: structure cannot change it. A reader takes no lock
// at all: it validates Seq and the entry's Ver around what it read.

// tries bounds the optimistic attempts of one operation; after them it takes
// the shard's lock, which waits its turn instead of spinning. pinSpins
// bounds the looks at a page lock another writer holds: with backoff's
// waits, some 46,600 turns of its loop, a few tens of microseconds.
const (
	tries    = 8
	pinSpins = 24
)

// seq loads the shard's Seq.
func (s *shard) seq() uint64 { return atomic.LoadUint64(&s.h.Seq) }

// lockPage takes the lock of the slab page that holds the entry at off.
func (s *shard) lockPage(off uint32) (*uint64, error) {
	w := s.slab.PageLock(off)
	if w == nil {
		return nil, errCorruptArena
	}
	if s.z.TryLock(w) {
		return w, nil
	}
	p := s.pageOf(off)
	r, err := s.z.LockWithinAsking(w, s.timeout, func() bool { return s.pinHeld(p) })
	if err != nil {
		return nil, fmt.Errorf("dict: shard %d: page of entry %#x: %w after %v", s.id, off, err, s.timeout)
	}
	if r&shm.LockRecovered != 0 {
		// Its dead holder may have left an entry half written, with an
		// odd Ver: whoever meets it under the shard lock repairs.
		atomic.AddUint64(&s.h.Recoveries, 1)
	}
	return w, nil
}

// drainPage waits for the entry writers inside the page of the entry at off
// to finish. The caller holds the shard's lock, so no other can start.
func (s *shard) drainPage(off uint32) error {
	w, err := s.lockPage(off)
	if err != nil {
		return err
	}
	shm.Unlock(w)
	return nil
}

// tryDrainPage is drainPage that does not wait: it reports false, and
// drains nothing, when a writer holds the page of the entry at off (or
// died holding it), for a change that is not worth a wait.
func (s *shard) tryDrainPage(off uint32) (bool, error) {
	w := s.slab.PageLock(off)
	if w == nil {
		return false, errCorruptArena
	}
	if !s.z.TryLock(w) {
		return false, nil
	}
	shm.Unlock(w)
	return true, nil
}

// drainPages drains every page of the shard, for a change to all of it.
func (s *shard) drainPages() error {
	for p := 0; p < s.slab.Pages(); p++ {
		w := s.slab.PageLockAt(p)
		if w == nil {
			continue // free, or inside a run: no entry starts there
		}
		if s.z.TryLock(w) {
			shm.Unlock(w)
			continue
		}
		r, err := s.z.LockWithinAsking(w, s.timeout, func() bool { return s.pinHeld(p) })
		if err != nil {
			return fmt.Errorf("dict: shard %d: page %d: %w after %v", s.id, p, err, s.timeout)
		}
		if r&shm.LockRecovered != 0 {
			atomic.AddUint64(&s.h.Recoveries, 1) // as lockPage counts it
		}
		shm.Unlock(w)
	}
	return nil
}

// findOptimistic looks key up without the shard's lock: every word it reads
// is loaded atomically, every offset is bounds-checked, and a walk
// longer than the shard can hold ends it. It returns the entry's offset (0
// when absent), the Seq it read first, and ok false when the shard was
// changing (Seq odd) or the walk met what a change in progress can leave: the
// caller tries again. A found entry must still be validated against seq; an
// absence is validated here.
func (s *shard) findOptimistic(key string, h uint64) (off uint32, seq uint64, ok bool) {
	seq = s.seq()
	if seq&1 != 0 {
		return 0, seq, false
	}
	// Locals: the atomic loads below are barriers to the compiler, which
	// would otherwise reload the shard's fields after each.
	arena, steps, tag := s.arena, s.steps, tagOf(h)
	off = atomic.LoadUint32(&s.index[s.bucket(h)])
	for n := 0; off != 0; n++ {
		if off&7 != 0 || int(off)+entryHdrSize > len(arena) || n > steps {
			return 0, seq, false
		}
		e := entryIn(arena, off)
		if klen, etag := e.klenTag(); etag == tag && klen == len(key) {
			k := int(off) + entryHdrSize
			if k+klen > len(arena) {
				return 0, seq, false
			}
			// keyWords is inlined: the common key makes no call.
			if klen >= 8 && unalignedWords {
				if keyWords(arena, k, key) {
					return off, seq, true
				}
			} else if keyIsShort(arena, k, key) {
				return off, seq, true
			}
		}
		off = e.next()
	}
	return 0, seq, s.seq() == seq
}

// An entry write pins key's entry: it finds the entry and takes its page
// lock without the shard's lock. The first try is the caller's, inline, which
// saves a call on every write; pinRetry does the rest:
//
//	off, seq, ok := s.findOptimistic(key, h)
//	if ok && off != 0 {
//		if pw := s.pinFirst(off, seq); pw != nil {
//			// key's entry at off, locked in pw until s.unpin(off, pw)
//		}
//	}
//	off, pw, found, ok := s.pinRetry(key, h, off, seq, ok)
//
// pinRetry is given what findOptimistic returned and that pinFirst, if it
// was tried, failed. found reports an entry that is key's, locked in pw
// until s.unpin(off, pw). found false with ok true is a validated absence,
// and no lock is held. ok false: the shard kept changing; the caller takes
// the shard's lock instead.
func (s *shard) pinRetry(key string, h uint64, off uint32, seq uint64, ok bool) (uint32, *uint64, bool, bool) {
	if ok && off == 0 {
		return 0, nil, false, true
	}
	if ok {
		// Another writer holds the page (or the shard changed): wait on
		// the page's word and Seq alone, not looking at the entry again,
		// whose line the holder is writing.
		if pw := s.tryPin(off, seq); pw != nil {
			return off, pw, true, true
		}
	}
	return s.pinWait(key, h)
}

// pinFirst is tryPin without the spin, for the first try, which almost
// always succeeds. It swaps the word without loading it first: a load
// would fetch the word's line shared, and the swap fetch it again to own
// it, two transfers of a line that another process writes (a hot key's
// page) where one does. It loads Seq right before the swap, as tryPin
// does (Seq's line stays in the cache while the shard does not change),
// so that a find gone stale since is no swap of a word at all (I9).
func (s *shard) pinFirst(off uint32, seq uint64) *uint64 {
	pw := s.slab.PageWord(off)
	if pw == nil || s.seq() != seq {
		return nil
	}
	stall(stallBeforeSwap)
	if !s.z.TryLock(pw) {
		return nil
	}
	stall(stallAfterSwap)
	s.markPin(off, 1)
	if s.seq() != seq {
		s.markPin(off, 0)
		s.z.Unswap(pw)
		return nil
	}
	return pw
}

// pinWait is pinRetry once its own try failed: the shard was changing, or
// another writer held the page.
func (s *shard) pinWait(key string, h uint64) (off uint32, pw *uint64, found, ok bool) {
	for try := 0; try < tries; try++ {
		off, seq, ok := s.findOptimistic(key, h)
		if ok && off == 0 {
			return 0, nil, false, true
		}
		if ok {
			if pw := s.tryPin(off, seq); pw != nil {
				return off, pw, true, true
			}
		}
		runtime.Gosched()
	}
	return 0, nil, false, false
}

// tryPin takes the page lock of the entry at off, found with Seq seq, if it
// is free, and returns it when Seq still is seq: the entry is then key's
// and stays so until the page is unlocked. It never waits and never takes a
// lock over: without the shard's lock, the page it guesses from off may have
// changed under it (the caller then takes the shard's lock, under which
// waiting is safe). It checks Seq before the compare-and-swap, so that the
// word it swaps is a page's lock word, and after it, so that it holds the
// lock of the page the entry is still in.
//
// A page held by another writer is one holding it for a few instructions:
// it spins on the word, while Seq stays, for up to pinSpins looks.
func (s *shard) tryPin(off uint32, seq uint64) *uint64 {
	pw := s.slab.PageWord(off)
	if pw == nil {
		return nil
	}
	for i := 0; ; i++ {
		if s.seq() != seq {
			return nil
		}
		if atomic.LoadUint64(pw) == 0 && s.z.TryLock(pw) {
			break
		}
		if i == pinSpins {
			return nil
		}
		backoff(i)
	}
	s.markPin(off, 1)
	if s.seq() == seq {
		return pw
	}
	// The shard changed between the two checks: the page may no longer be
	// what it was. Release the word only if it still holds what the swap
	// wrote.
	s.markPin(off, 0)
	s.z.Unswap(pw)
	return nil
}

// An entry writer marks the page it pins in its process's memory
// (pageTally.pinned). The page's lock word is the process's owner word,
// the same for all its goroutines. So only the mark tells a drain a
// sibling's pin from a corrupt word equal to the owner word. A pinner
// marks the page after its swap and before it checks Seq again. It clears
// the mark before it releases the page. A drain holds the shard's lock, so
// Seq is odd, and no pin that checks Seq after that holds the page. The
// drain judges the word only after waiting some milliseconds. A pin that
// passed its check stored its mark before, and a store reaches the other
// cores within nanoseconds. A pin that swapped but has not checked yet
// fails its check, and writes nothing. So a page word equal to the owner
// word with no mark is corrupt: the drain takes it over (pinHeld,
// shm.Zone.LockWithinAsking). A takeover that races a pinner's release
// is harmless: a drain releases the page at once. A pinner that swapped
// and has not marked yet is a few instructions from its mark: the drain
// judges only on looks that span 50 ms (shm's askQuiet), so that such a
// pinner runs first, fails its check, and releases the word itself.

// markPin sets or clears the mark of the page that holds the entry at off.
func (s *shard) markPin(off uint32, v uint32) {
	if p := s.pageOf(off); p < len(s.pages) {
		storePinMark(&s.pages[p].pinned, v)
	}
}

// unpin clears the mark of the page that holds the entry at off and
// releases pw, its lock, which the caller pinned.
func (s *shard) unpin(off uint32, pw *uint64) {
	s.markPin(off, 0)
	shm.Unlock(pw)
}

// pinHeld reports whether a goroutine of this process may hold page p's
// lock as an entry writer; true for a page it keeps no mark of.
func (s *shard) pinHeld(p int) bool {
	return p >= len(s.pages) || atomic.LoadUint32(&s.pages[p].pinned) != 0
}

// beginWrite marks a write of an entry in progress, for readers, and
// returns the word to give endWrite. The caller holds the entry's page lock,
// and not the shard's (under it, Seq tells readers already).
func (e *entry) beginWrite() uint64 { return markOdd(&e.Ver, verOne) }

// markOdd adds d to *p, a Seq or Ver word, to make it odd before a write
// that readers validate against it, and returns the word. The caller is
// the word's only writer. The load after the add keeps the write's plain
// stores after the add on arm64 (DESIGN.md, section 8).
func markOdd(p *uint64, d uint64) uint64 {
	atomic.AddUint64(p, d)
	return atomic.LoadUint64(p)
}

// endWrite ends the write beginWrite began, with the entry's new expiry.
func (e *entry) endWrite(w uint64, expiry int64) {
	atomic.StoreUint64(&e.Ver, (w+verOne)&^expiryMask|uint64(expiry))
}

// markUsed sets the refBit of the entry at off, which a reader found with
// Seq seq, for the CLOCK hand: once per pass of the hand, so it may cost a
// page lock. The bit is written only while the page is locked and Seq
// still seq, so that it lands in that entry and nowhere else; when the shard
// has changed since, the mark is skipped (it is advice).
func (s *shard) markUsed(off uint32, seq uint64) {
	if pw := s.tryPin(off, seq); pw != nil {
		s.entryAt(off).use()
		s.unpin(off, pw)
	}
}

// settleInShard finds out whether the entry at off, whose page the caller
// drained holding the shard's lock, was left half written by an entry
// writer that died (its Ver is odd, and no live writer is inside the page).
// Then it repairs the shard, which drops that entry: gone reports that the
// key is now absent. A dead writer loses the entry it was writing, no more.
func (d *Dict) settleInShard(s *shard, off uint32) (gone bool, err error) {
	if !writing(s.entryAt(off).ver()) {
		return false, nil
	}
	atomic.AddUint64(&s.h.Recoveries, 1)
	if err := s.repairInShard(); err != nil {
		return false, err
	}
	return true, nil
}

// spinSink keeps backoff's loop from being optimised away.
var spinSink atomic.Uint32

// backoff waits a little longer at each of a spin's looks at a held word,
// touching nothing shared, so that the looks do not pull the word's cache
// line from its holder again and again. The first wait is several entry
// writes long, 512 turns, and the longest four times that. A look sooner
// takes the line, which often holds the entry too, from a holder that is
// still writing it or has begun its next write. Both then pay for every
// transfer. A waiter that stays away lets the holder make a run of writes
// in its own cache. Longer waits buy throughput with tail latency.
// DESIGN.md, section 4, gives the sweeps behind these numbers.
func backoff(i int) {
	n := uint32(0)
	for j := 0; j < 512<<min(i, 2); j++ {
		n += uint32(j)
	}
	if n == 1 {
		spinSink.Store(n) // never: the sum is 0 or at least 28
	}
}

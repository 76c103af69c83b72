package dict

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/shmzone/shmzone/shm"
)

// Entry writes: an operation on a live entry that leaves it the size it
// is takes the entry's page lock (pin), not the shard's, so that processes
// writing their own keys share no cache line (DESIGN.md, section 6).
// Whatever needs more — a key to create, an entry to resize or remove, one
// expired or left half written — falls back to the shard's lock.

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

// pinLive pins key's entry for an entry write when it is live and sound:
// ok reports that the caller holds pw, the entry's page lock, and must
// release it (unpin). Otherwise the key is absent, expired or left
// half written, or the shard kept changing: the caller takes the shard's
// lock, under which the operation is decided again.
func (d *Dict) pinLive(s *shard, key string, h uint64) (off uint32, e *entry, pw *uint64, ok bool) {
	off, seq, ok := s.findOptimistic(key, h)
	if ok && off != 0 {
		pw = s.pinFirst(off, seq)
	}
	if pw == nil {
		var found bool
		if off, pw, found, ok = s.pinRetry(key, h, off, seq, ok); !ok || !found {
			return 0, nil, nil, false
		}
	}
	e = s.entryAt(off)
	w := e.ver()
	if x := expiryOf(w); writing(w) || (x != 0 && d.Now() >= x) || !s.okBytes(off, e) {
		s.unpin(off, pw)
		return 0, nil, nil, false
	}
	return off, e, pw, true
}

// sameShape reports whether v can take the place of e's value at entry
// level: neither is a list, and v is stored in as many bytes, so that the
// entry's chunk, size and links stay as they are.
func sameShape(e *entry, v *Value) bool {
	k := e.kind()
	return k != KindList && k != KindNone && v.kind != KindList && v.kind != KindNone && storedSize(v.kind, len(v.b)) == e.vlen()
}

// rewriteInPage writes v, of e's shape (sameShape), into the live entry at
// off, with expiry and flags. The caller holds the entry's page lock; it
// keeps the entry's flags by passing e.flags(). A number that keeps its kind, expiry and flags is
// one aligned store, whole even if the process dies there, as incr's.
// Otherwise Ver is odd while the words change: a reader that overlaps
// retries, and a process killed in between leaves the entry for repair to
// drop (I6).
func (s *shard) rewriteInPage(off uint32, e *entry, v *Value, expiry int64, flags uint32) {
	if (v.kind == KindInt || v.kind == KindFloat) && e.kind() == v.kind &&
		expiryOf(e.ver()) == expiry && e.flags() == flags {
		atomic.StoreUint64(s.num(off, e), v.num)
		e.use()
		return
	}
	w := e.beginWrite()
	if e.flags() != flags {
		atomic.StoreUint32(&e.Flags, flags)
	}
	if e.kind() != v.kind {
		e.setKindUsed(v.kind)
	}
	s.putValue(off, e, *v)
	e.endWrite(w, expiry)
	e.use()
}

// unlockCounted counts an entry write on the entry at off and releases its
// page's lock pw, then does what the count asks (flushPageCounts).
func (d *Dict) unlockCounted(s *shard, key string, h uint64, off uint32, pw *uint64) {
	n, slow := s.entryCounted(off, tWrites)
	s.unpin(off, pw)
	if slow {
		d.flushPageCounts(s, key, h, off, n)
	}
}

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
// It moves Seq by 2 every walkStep pages, and after each page whose lock
// it had to wait for (advance). A page whose writer died costs a wait for its takeover. A
// repair after many kills may meet many such pages, and the shard's lock
// waiters see each one pass.
func (s *shard) drainPages() error {
	pc := pacer{s: s}
	for p := 0; p < s.slab.Pages(); p++ {
		pc.tick()
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
		s.advance()
	}
	s.advance()
	return nil
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

// drainInShard drains the page of the entry at off, found under this hold
// of the shard's lock, and settles the entry (settleInShard). It returns
// off, or 0 when a writer that died inside the page lost the entry. No
// writer enters the page again until the lock is released (I8).
func (d *Dict) drainInShard(s *shard, off uint32) (uint32, error) {
	if err := s.drainPage(off); err != nil {
		return 0, d.failInShard(s, err, "page")
	}
	if gone, err := d.settleInShard(s, off); err != nil || gone {
		return 0, err
	}
	return off, nil
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

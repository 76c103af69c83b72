package dict

import (
	"errors"

	"github.com/shmzone/shmzone/slab"
)

// allocInShard allocates size bytes. When the slab is full it first packs a
// page of another size (packInShard), then reclaims expired
// entries from the queue's tail and, if evict, evicts live ones too, in up to 30
// rounds of up to 3 entries as nginx does; forcible reports a live eviction.
// pin is an entry that must survive (the one the caller is replacing). While
// it runs, Drop says that entries the index does not reach are to be dropped
// by a repair: an evicted entry may be half unlinked.
func (s *shard) allocInShard(size int, evict bool, pin uint32, now func() int64) (off uint32, forcible bool, err error) {
	s.sweepInShard()
	h := s.hdr()
	h.Drop = dropUnreachable
	for round := 0; ; round++ {
		off, err = s.slab.Alloc(size)
		if round == 0 && errors.Is(err, slab.ErrNoMemory) {
			// Room that moves make comes before any eviction (pack.go).
			packed, perr := s.packInShard(size, pin)
			if perr != nil {
				return 0, forcible, perr
			}
			if packed {
				off, err = s.slab.Alloc(size)
			}
		}
		if err == nil {
			return off, forcible, nil
		}
		if !errors.Is(err, slab.ErrNoMemory) {
			if errors.Is(err, slab.ErrTooLarge) {
				return 0, forcible, ErrValueTooLarge
			}
			return 0, forcible, errCorruptArena
		}
		if round == 30 {
			return 0, forcible, ErrNoMemory
		}
		if evict && clearsAt(round) {
			// Rounds of evictions made no chunk of this size: the shard's
			// pages hold chunks of other sizes, kept by entries in use.
			// Free a whole page; when that fails (a used entry found no
			// room elsewhere), try again with the tail's page of three
			// rounds later rather than evict thirty rounds of entries of
			// other sizes and fail.
			s.logClear(0, nil, stepTry)
			cleared, live, err := s.clearPageInShard(pin, now)
			if err != nil {
				return 0, forcible, err
			}
			forcible = forcible || live
			if cleared {
				continue
			}
		}
		freed, live, err := s.reclaimInShard(evict, pin, now)
		if err != nil {
			return 0, forcible, err
		}
		forcible = forcible || live
		if freed == 0 {
			return 0, forcible, ErrNoMemory
		}
	}
}

// evictInShard drops the entry at off, which passed okBytes and whose page
// the caller drained under this hold of the lock, for room: counted as an
// expiration when it has expired, else as an eviction, which leaves a
// trace; live reports the latter.
func (s *shard) evictInShard(off uint32, e *entry, now func() int64) (live bool, err error) {
	h := s.hdr()
	if !expired(e, now) {
		s.logClear(off, e, stepEvicted)
		if err := s.evictLiveInShard(off, e); err != nil {
			return false, err
		}
		return true, nil
	}
	s.logClear(off, e, stepExpired)
	if err := s.dropInShard(off, e); err != nil {
		return false, err
	}
	h.Count--
	h.Expirations++
	return false, nil
}

// evictLiveInShard drops the live entry at off, which passed okBytes and
// whose page the caller drained under this hold of the lock, for room: it
// leaves a trace of the key (traceInShard) and counts an eviction.
func (s *shard) evictLiveInShard(off uint32, e *entry) error {
	k := s.keyOf(off, e)
	kh := hashKey(s.seed, bytesString(k))
	s.traceInShard(kh, e.expiry())
	if !s.unchainHashedInShard(off, e, kh) || !s.unqueueInShard(off, e) {
		return errCorruptArena
	}
	if err := s.freeEntryInShard(off, e); err != nil {
		return err
	}
	h := s.hdr()
	h.Count--
	h.Evictions++
	return nil
}

// evictAwayInShard frees a chunk of like's size outside the page whose
// first word is page: the probation entry nearest the queue's tail of that
// size, elsewhere, and not used since it was written (or expired). freed
// is false when probation holds none.
func (s *shard) evictAwayInShard(page *uint64, like *entry, pin uint32, now func() int64) (live, freed bool, err error) {
	h := s.hdr()
	want := s.slab.ChunkSize(entrySize(int(like.KLen), int(like.VLen)))
	off := h.QueueTail
	for n := 0; off != 0; n++ {
		if !s.okEntry(off) || n > s.maxSteps() {
			return false, false, errCorruptArena
		}
		e := s.entryAt(off)
		if e.protected() {
			return false, false, nil // probation is behind
		}
		prev := e.QPrev
		if off == pin || s.slab.PageWord(off) == page || !s.okBytes(off, e) ||
			s.slab.ChunkSize(entrySize(int(e.KLen), int(e.VLen))) != want {
			off = prev
			continue
		}
		// Its refBit and expiry are judged once the writers inside its
		// page are done: one may be setting them (drainBeforeJudging).
		if err := s.drainPage(off); err != nil {
			return false, false, err
		}
		if e.bits()&refBit == 0 || expired(e, now) {
			live, err = s.evictInShard(off, e, now)
			return live, err == nil, err
		}
		off = prev
	}
	return false, false, nil
}

// reclaimInShard frees up to 3 entries from the queue's tail: expired ones,
// and when evict, the first live one it meets that was not used since it
// was written or the hand last passed it. A used entry, expired or not (when
// evict), gets a second chance
// at the head of the protected segment, which a probation entry thereby
// joins (a promotion), so a live protected entry is evicted only when no
// probation entry is left, and then only when no protected entry has
// expired (freeExpiredInShard). Without evict it stops at the first live
// entry. Each live entry it evicts leaves a trace (traceInShard).
//
// An expired entry that was used since the hand last passed, or a
// protected one, is not reclaimed before that: it is the slot of a key in
// use whose state ran out (a rate limiter's window ended as the client came
// back), and the key's next write reuses it in place, protected; reclaimed,
// the key would start again in probation, where a flood of new keys evicts
// it before it is used again. The segment's cap (balanceInShard) bounds what
// such entries keep: unused, they are the first to be demoted.
func (s *shard) reclaimInShard(evict bool, pin uint32, now func() int64) (freed int, live bool, err error) {
	h := s.hdr()
	off := h.QueueTail
	for n := 0; off != 0 && freed < 3; n++ {
		// A pass moves each used entry to the head once, so two passes
		// over the most entries an arena holds bound the walk; Count, read
		// from the zone, cannot.
		if !s.okEntry(off) || n > 2*s.maxSteps() {
			return freed, live, errCorruptArena
		}
		e := s.entryAt(off)
		prev := e.QPrev
		if off == pin {
			off = prev
			continue
		}
		// Judged only after its page is drained (drainBeforeJudging).
		if err := s.drainPage(off); err != nil {
			return freed, live, err
		}
		isExpired := expired(e, now)
		if !isExpired && (!evict || live) {
			break
		}
		if evict && e.bits()&refBit != 0 {
			// Used since the hand last passed: a key in use, whose
			// entry is kept even when its state has expired (the slot of
			// its next state, reclaimInShard's doc).
			e.unuse()
			promote := !e.protected()
			if !s.requeueInShard(off, e, true) {
				return freed, live, errCorruptArena
			}
			if promote {
				if err := s.balanceInShard(pin); err != nil {
					return freed, live, err
				}
			}
			off = prev
			if off == 0 {
				// It was the head: the hand goes round to the tail
				// rather than end the round with nothing freed.
				off = h.QueueTail
			}
			continue
		}
		if !isExpired {
			if e.protected() {
				// No probation entry is left: what expired among the
				// protected goes before a live one.
				ok, err := s.freeExpiredInShard(pin, now)
				if err != nil {
					return freed, live, err
				}
				if ok {
					freed++
					off = h.QueueTail
					continue
				}
			}
			if !s.okBytes(off, e) {
				return freed, live, errCorruptArena
			}
			if err := s.evictLiveInShard(off, e); err != nil {
				return freed, live, err
			}
			live = true
			freed++
			off = prev
			continue
		}
		if err := s.dropInShard(off, e); err != nil {
			return freed, live, err
		}
		h.Count--
		h.Expirations++
		freed++
		off = prev
	}
	return freed, live, nil
}

// freeExpiredInShard frees the expired protected entry nearest the
// segment's tail, if any: before the hand evicts a live protected entry.
func (s *shard) freeExpiredInShard(pin uint32, now func() int64) (bool, error) {
	h := s.hdr()
	off := h.ProtTail
	for n := 0; off != 0; n++ {
		if !s.okEntry(off) || n > s.maxSteps() {
			return false, errCorruptArena
		}
		e := s.entryAt(off)
		if !e.protected() {
			return false, errCorruptArena
		}
		prev := e.QPrev
		if off == pin {
			off = prev
			continue
		}
		// Judged only after its page is drained (drainBeforeJudging).
		if err := s.drainPage(off); err != nil {
			return false, err
		}
		if expired(e, now) {
			if err := s.dropInShard(off, e); err != nil {
				return false, err
			}
			h.Count--
			h.Expirations++
			return true, nil
		}
		off = prev
	}
	return false, nil
}

package dict

import (
	"errors"

	"github.com/shmzone/shmzone/slab"
)

// Eviction's policy. It is CLOCK over a queue in two segments, with nginx's
// rounds:
//
//   - A write that finds its shard's slab full runs rounds of eviction
//     (allocInShard). At most maxRounds rounds run before ErrNoMemory.
//   - The first round packs a page of another size first (packInShard).
//   - A round runs the hand from the queue's tail (reclaimInShard). It
//     frees at most roundFrees entries.
//   - The hand gives an entry used since it last passed a second chance
//     (secondChanceInShard). The entry moves to the protected segment.
//   - The hand evicts a protected entry only when no probation entry is
//     left. An expired protected entry goes first (evictAtHandInShard).
//   - The protected segment's hand leaves probation one entry in
//     probationShare (balanceInShard).
//   - Every clearRound rounds, the write first tries to free the page of
//     the queue's tail (clearPageInShard). That serves a size that
//     eviction from the tail does not.
const (
	// maxRounds is the most rounds of eviction one allocation runs.
	maxRounds = 30
	// roundFrees is the most entries one round of the hand frees.
	roundFrees = 3
	// clearRound is how many rounds go between two tries to free a page.
	clearRound = 3
	// probationShare is the share of a shard's entries, one in
	// probationShare, that the protected segment leaves to probation at
	// least.
	probationShare = 8
	// balanceSteps is the most protected entries one balance looks at.
	balanceSteps = 8
)

// clearsAt reports whether allocInShard tries to free a page before its
// round: every clearRound rounds, from the clearRound-th.
func clearsAt(round int) bool { return round > 0 && round%clearRound == 0 }

// AttemptsToEmpty returns how many tries of one write empty any shard of
// d. A try that fails with ErrNoMemory ran every round of eviction, or
// found nothing left to free. Each of its rounds freed an entry at least.
// An entry takes at least its header's bytes.
func (d *Dict) AttemptsToEmpty() int {
	return int(d.Header().ShardSize/int64(maxRounds*entryHdrSize)) + 1
}

// allocInShard allocates size bytes. When the slab is full, it first packs
// a page of another size (packInShard). It then reclaims expired entries
// from the queue's tail and, if evict, evicts live ones too. It does so in
// up to maxRounds rounds of up to roundFrees entries, as nginx does.
// forcible reports a live eviction. pin is an entry that must survive: the
// one the caller is replacing. While it runs, Drop says that entries the
// index does not reach are to be dropped by a repair: an evicted entry may
// be half unlinked.
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
		if round == maxRounds {
			return 0, forcible, ErrNoMemory
		}
		if evict && clearsAt(round) {
			// Rounds of evictions made no chunk of this size: the shard's
			// pages hold chunks of other sizes, kept by entries in use.
			// Free a whole page; when that fails (a used entry found no
			// room elsewhere), try again with the tail's page of
			// clearRound rounds later rather than evict maxRounds rounds
			// of entries of other sizes and fail.
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
	if !expired(e, now) {
		s.logClear(off, e, stepEvicted)
		if err := s.evictLiveInShard(off, e); err != nil {
			return false, err
		}
		return true, nil
	}
	s.logClear(off, e, stepExpired)
	if err := s.dropInShard(off, exitExpired); err != nil {
		return false, err
	}
	return false, nil
}

// evictLiveInShard drops the live entry at off, which passed okBytes and
// whose page the caller drained under this hold of the lock, for room: it
// leaves a trace of the key (traceInShard) and counts an eviction
// (dropInShard).
func (s *shard) evictLiveInShard(off uint32, e *entry) error {
	return s.dropInShard(off, exitEvicted)
}

// evictAwayInShard frees a chunk of like's size outside the page whose
// first word is page: the probation entry nearest the queue's tail of that
// size, elsewhere, and not used since it was written (or expired). freed
// is false when probation holds none.
func (s *shard) evictAwayInShard(page *uint64, like *entry, pin uint32, now func() int64) (live, freed bool, err error) {
	h := s.hdr()
	want := s.slab.ChunkSize(entrySize(int(like.KLen), int(like.VLen)))
	p := pacer{s: s}
	off := h.QueueTail
	for n := 0; off != 0; n++ {
		p.tick()
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

// reclaimInShard runs the hand over the queue from its tail. It frees up to
// roundFrees entries: expired ones and, when evict, the first live one not
// used since it was written or the hand last passed it. A used entry gets a
// second chance, expired or not, when evict (secondChanceInShard). Without
// evict the hand stops at the first live entry. Each live entry it evicts
// leaves a trace (traceInShard).
//
// A used expired entry is not reclaimed before its second chance. It is the
// slot of a key in use whose state ran out: a rate limiter's window ended
// as the client came back. The key's next write reuses it in place,
// protected. Reclaimed, the key would start again in probation, where a
// flood of new keys evicts it before it is used again. The segment's cap
// bounds what such entries keep (balanceInShard). Unused, they are the
// first to be demoted.
//
// The hand may pass many used entries before it frees one. It cannot let
// the lock go: the allocation that runs it holds the shard in change. It
// moves Seq by 2 every walkStep entries instead (advance), so that the
// shard's lock waiters see it progress.
func (s *shard) reclaimInShard(evict bool, pin uint32, now func() int64) (freed int, live bool, err error) {
	h := s.hdr()
	p := pacer{s: s}
	off := h.QueueTail
	for n := 0; off != 0 && freed < roundFrees; n++ {
		p.tick()
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
		switch {
		case evict && e.bits()&refBit != 0:
			// Used since the hand last passed: a key in use, whose
			// entry is kept even when its state has expired (the slot of
			// its next state, reclaimInShard's doc).
			if err := s.secondChanceInShard(off, e, pin); err != nil {
				return freed, live, err
			}
			off = prev
			if off == 0 {
				// It was the head: the hand goes round to the tail
				// rather than end the round with nothing freed.
				off = h.QueueTail
			}
			continue
		case isExpired:
			if err := s.dropInShard(off, exitExpired); err != nil {
				return freed, live, err
			}
		default:
			other, err := s.evictAtHandInShard(off, e, pin, now)
			if err != nil {
				return freed, live, err
			}
			if other {
				freed++
				off = h.QueueTail
				continue
			}
			live = true
		}
		freed++
		off = prev
	}
	return freed, live, nil
}

// secondChanceInShard gives the entry at off, used since the hand last
// passed, its second chance. It clears the entry's refBit and moves it to
// the head of the protected segment. A probation entry so joins that
// segment, a promotion, which balanceInShard then bounds.
func (s *shard) secondChanceInShard(off uint32, e *entry, pin uint32) error {
	e.unuse()
	promote := !e.protected()
	if !s.requeueInShard(off, e, true) {
		return errCorruptArena
	}
	if promote {
		return s.balanceInShard(pin)
	}
	return nil
}

// evictAtHandInShard frees one entry for the hand, which stands on the
// live entry at off, not used since it last passed. A protected entry
// there means that no probation entry is left. Then the expired protected
// entry nearest the segment's tail goes first, if any (freeExpiredInShard),
// and other reports it. Otherwise the entry at off is evicted, which
// leaves a trace (evictLiveInShard).
func (s *shard) evictAtHandInShard(off uint32, e *entry, pin uint32, now func() int64) (other bool, err error) {
	if e.protected() {
		ok, err := s.freeExpiredInShard(pin, now)
		if err != nil || ok {
			return ok, err
		}
	}
	if !s.okBytes(off, e) {
		return false, errCorruptArena
	}
	return false, s.evictLiveInShard(off, e)
}

// balanceInShard runs the protected segment's hand. It keeps the segment
// to at most seven eighths of the shard's entries, as probationShare says.
// So new keys always have a probation segment to prove themselves in, and
// the traces recognise them when they come back after it. While the
// segment holds more, its last entry gets a second chance if it was used
// since the hand passed. Otherwise that entry becomes probation's first, a
// demotion: it stays where it is, and ProtTail moves past it. It looks at
// balanceSteps entries a call at most.
func (s *shard) balanceInShard(pin uint32) error {
	h := s.hdr()
	for i := 0; i < balanceSteps && h.ProtCount > h.Count-h.Count/probationShare && h.ProtTail != 0; i++ {
		t := h.ProtTail
		if !s.okEntry(t) {
			return errCorruptArena
		}
		e := s.entryAt(t)
		if e.bits()&refBit != 0 && t != pin && h.ProtCount > 1 {
			e.unuse()
			if !s.requeueInShard(t, e, false) {
				return errCorruptArena
			}
			continue
		}
		h.ProtTail = e.QPrev
		h.ProtCount--
		e.setProt(false)
	}
	return nil
}

// clearPageInShard frees the page of the probation segment's last entry,
// for an allocation of another size that eviction from the tail does not
// serve: protected entries are spread over every page and keep them all. It
// evicts the page's probation entries not used since they were written,
// and moves every other entry (protected, or used) to a chunk of its size
// in another page, where it keeps its place in the queue and its segment.
// It does nothing when the page holds anything but entries (list nodes),
// holds pin, or when a move finds no room: cleared false. A process killed
// inside it loses at most the entry being moved (Drop is dropUnreachable:
// of the two copies, repair keeps the one the index reaches).
func (s *shard) clearPageInShard(pin uint32, now func() int64) (cleared, live bool, err error) {
	h := s.hdr()
	tail := h.QueueTail
	if tail == 0 || !s.okEntry(tail) || s.entryAt(tail).protected() {
		return false, false, nil
	}
	var offs [maxPageChunks]uint32
	n := s.pageEntriesInShard(tail, pin, &offs)
	if n <= 0 {
		return false, false, nil
	}
	if err := s.drainPage(tail); err != nil {
		return false, false, err
	}
	page := s.slab.PageWord(tail)
	// First what goes: expired entries, and probation entries not used.
	kept := 0
	for _, off := range offs[:n] {
		e := s.entryAt(off)
		if !expired(e, now) && (e.protected() || e.bits()&refBit != 0) {
			offs[kept] = off
			kept++
			continue
		}
		l, err := s.evictInShard(off, e, now)
		if err != nil {
			return false, live, err
		}
		live = live || l
	}
	// Then what stays moves, to room that eviction from the probation
	// segment's tail makes in other pages when there is none.
	for _, off := range offs[:kept] {
		e := s.entryAt(off)
		for {
			moved, err := s.moveInShard(off, e, false)
			if err != nil {
				return false, live, err
			}
			if moved {
				s.logClear(off, e, stepMoved)
				break
			}
			l, freed, err := s.evictAwayInShard(page, e, pin, now)
			if err != nil || !freed {
				return false, live, err
			}
			live = live || l
		}
	}
	s.logClear(0, nil, stepCleared)
	return true, live, nil
}

// pageEntriesInShard puts in offs the entries of the small page that holds
// off and returns how many; -1 when the page holds pin or anything but
// entries, each linked (a chunk the index does not reach is a list's
// node), or is no small page. An entry's key does not change while it is
// linked, so its page need not be drained yet.
func (s *shard) pageEntriesInShard(off, pin uint32, offs *[maxPageChunks]uint32) int {
	n := 0
	ok := s.slab.PageChunks(off, func(off uint32) bool {
		if off == pin || n == len(offs) || !s.okEntry(off) {
			n = -1
			return false
		}
		e := s.entryAt(off)
		if !s.okBytes(off, e) {
			n = -1
			return false
		}
		k := s.keyOf(off, e)
		found, err := s.findInShard(bytesString(k), hashKey(s.seed, bytesString(k)))
		if err != nil || found != off {
			n = -1
			return false
		}
		offs[n] = off
		n++
		return true
	})
	if !ok {
		return -1
	}
	return n
}

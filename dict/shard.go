package dict

import (
	"errors"
	"unsafe"

	"github.com/shmzone/shmzone/slab"
)

// Shard-level primitives. Every function here needs the shard lock held (its
// name ends in Locked) and follows a link only after the bounds check of
// okEntry/okNode, so a corrupt arena yields errCorruptArena, never a fault.

var errCorruptArena = errors.New("corrupt arena")

// bucket and tag split a hash: low bits pick the shard (Dict.shardFor),
// bits 24..31 form the tag, bits 32.. pick the bucket.
func (s *shard) bucket(h uint64) uint32 { return uint32(h>>32) & s.idxMask }
func tagOf(h uint64) uint8              { return uint8(h >> 24) }

// maxSteps bounds every walk of a chain or list: no arena holds more entries.
func (s *shard) maxSteps() int { return s.steps }

// findInShard returns the offset of key's entry, expired or not, and of its
// predecessor in the bucket chain (0 when the entry heads the chain), or 0.
func (s *shard) findInShard(key string, h uint64) (off, prev uint32, err error) {
	tag := tagOf(h)
	off = s.index[s.bucket(h)]
	for n := 0; off != 0; n++ {
		if !s.okEntry(off) || n > s.maxSteps() {
			return 0, 0, errCorruptArena
		}
		e := s.entryAt(off)
		if e.Tag == tag && int(e.KLen) == len(key) {
			if !s.okBytes(off, e) {
				return 0, 0, errCorruptArena
			}
			if string(s.keyOf(off, e)) == key {
				return off, prev, nil
			}
		}
		prev, off = off, e.Next
	}
	return 0, 0, nil
}

// expired reports whether an entry has expired at the time now returns; the
// clock is read only for an entry that has a TTL.
func expired(e *entry, now func() int64) bool {
	x := e.expiry()
	return x != 0 && now() >= x
}

// The eviction queue has two segments: from QueueHead down to ProtTail the
// protected entries (protBit), ProtCount of them, those used again after
// they were written; after them, down to QueueTail, the probation entries,
// new ones first. The hand starts at the tail: a flood of keys used once
// passes through probation and is evicted there, while the entries of
// keys in use wait in the protected segment (reclaimInShard).

// unqueueInShard removes an entry from the eviction queue.
func (s *shard) unqueueInShard(off uint32, e *entry) bool {
	h := s.hdr()
	if e.QPrev != 0 {
		if !s.okEntry(e.QPrev) {
			return false
		}
		s.entryAt(e.QPrev).QNext = e.QNext
	} else if h.QueueHead == off {
		h.QueueHead = e.QNext
	}
	if e.QNext != 0 {
		if !s.okEntry(e.QNext) {
			return false
		}
		s.entryAt(e.QNext).QPrev = e.QPrev
	} else if h.QueueTail == off {
		h.QueueTail = e.QPrev
	}
	if h.ProtTail == off {
		h.ProtTail = e.QPrev
	}
	if e.protected() && h.ProtCount > 0 {
		h.ProtCount--
	}
	e.QPrev, e.QNext = 0, 0
	return true
}

// enqueueInShard puts an unlinked entry in the eviction queue: a
// protected one at the head, a probation one at the head of probation,
// right after ProtTail.
func (s *shard) enqueueInShard(off uint32, e *entry) bool {
	h := s.hdr()
	if e.protected() {
		h.ProtCount++
		if h.ProtTail == 0 {
			h.ProtTail = off
		}
		return s.enqueueBehindInShard(0, off, e)
	}
	return s.enqueueBehindInShard(h.ProtTail, off, e)
}

// enqueueRecalledInShard puts an unlinked entry, unreferenced, at the tail of
// the protected segment: a new entry of a key found among the traces. The
// segment's cap demotes it first, unless it is used before.
func (s *shard) enqueueRecalledInShard(off uint32, e *entry) bool {
	h := s.hdr()
	if !s.enqueueBehindInShard(h.ProtTail, off, e) {
		return false
	}
	e.setProt(true)
	h.ProtTail = off
	h.ProtCount++
	return true
}

// enqueueBehindInShard links an unlinked entry into the queue after the entry
// at prev, or at the head when prev is 0.
func (s *shard) enqueueBehindInShard(prev, off uint32, e *entry) bool {
	h := s.hdr()
	next := h.QueueHead
	if prev != 0 {
		if !s.okEntry(prev) {
			return false
		}
		next = s.entryAt(prev).QNext
	}
	e.QPrev, e.QNext = prev, next
	if next != 0 {
		if !s.okEntry(next) {
			return false
		}
		s.entryAt(next).QPrev = off
	} else {
		h.QueueTail = off
	}
	if prev != 0 {
		s.entryAt(prev).QNext = off
	} else {
		h.QueueHead = off
	}
	return true
}

// requeueInShard moves a linked entry to the head of its segment, protected
// when protect: the hand's second chance, or a promotion.
func (s *shard) requeueInShard(off uint32, e *entry, protect bool) bool {
	if !s.unqueueInShard(off, e) {
		return false
	}
	if protect {
		e.setProt(true)
	}
	return s.enqueueInShard(off, e)
}

// unchainInShard removes an entry from its bucket chain.
func (s *shard) unchainInShard(off uint32, e *entry) bool {
	if !s.okBytes(off, e) {
		return false
	}
	k := s.keyOf(off, e)
	return s.unchainHashedInShard(off, e, hashKey(s.seed, unsafe.String(unsafe.SliceData(k), len(k))))
}

// unchainHashedInShard is unchainInShard for a caller that knows the
// hash h of the entry's key.
func (s *shard) unchainHashedInShard(off uint32, e *entry, h uint64) bool {
	p := &s.index[s.bucket(h)]
	for n := 0; *p != 0; n++ {
		if *p == off {
			*p = e.Next
			e.Next = 0
			return true
		}
		if !s.okEntry(*p) || n > s.maxSteps() {
			return false
		}
		p = &s.entryAt(*p).Next
	}
	return false
}

// removeInShard unlinks an entry from its chain and the eviction queue and frees it
// with its list nodes. Drop marks it for repair while it is half removed.
func (s *shard) removeInShard(off uint32) error {
	if err := s.drainPage(off); err != nil {
		return err
	}
	h := s.hdr()
	e := s.entryAt(off)
	h.Drop = off
	if !s.unchainInShard(off, e) {
		return errCorruptArena
	}
	return s.removeUnlinkedInShard(off, e)
}

// removeFoundInShard is removeInShard of the entry at off that the caller
// found under this hold of the lock, with key hash h, and whose page it has
// drained since (lookup): it neither drains nor hashes again.
func (s *shard) removeFoundInShard(off uint32, h uint64) error {
	hd := s.hdr()
	e := s.entryAt(off)
	hd.Drop = off
	if !s.unchainHashedInShard(off, e, h) {
		return errCorruptArena
	}
	return s.removeUnlinkedInShard(off, e)
}

// removeUnlinkedInShard ends a removal once the entry is out of its chain,
// with Drop naming it: it leaves the queue and is freed.
func (s *shard) removeUnlinkedInShard(off uint32, e *entry) error {
	if !s.unqueueInShard(off, e) {
		return errCorruptArena
	}
	if err := s.freeEntryInShard(off, e); err != nil {
		return err
	}
	h := s.hdr()
	h.Count--
	h.Drop = dropNone
	return nil
}

// freeEntryInShard frees an unlinked entry's chunk and, for a list, its nodes.
func (s *shard) freeEntryInShard(off uint32, e *entry) error {
	if e.kind() == KindList {
		if err := s.freeNodesInShard(off, e); err != nil {
			return err
		}
	}
	e.setBits(0) // a freed chunk never looks like an entry to repair
	if err := s.slab.Free(off); err != nil {
		return errCorruptArena
	}
	return nil
}

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

// clearRound is how many rounds of allocInShard go between two tries to
// free a page.
const clearRound = 3

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
		found, _, err := s.findInShard(unsafe.String(unsafe.SliceData(k), len(k)), hashKey(s.seed, unsafe.String(unsafe.SliceData(k), len(k))))
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

// clearStep is one step of clearPageInShard as shard.clears records it: a
// try begun, a key and what became of it, or the page cleared.
type clearStep struct {
	key  string
	what byte // stepTry, stepExpired, stepEvicted, stepMoved, stepCleared
}

const (
	stepTry     = 't'
	stepExpired = 'x'
	stepEvicted = 'e'
	stepMoved   = 'm'
	stepCleared = 'c'
)

// clearsAt reports whether allocInShard tries to free a page before its
// round: every clearRound rounds, from the clearRound-th.
func clearsAt(round int) bool { return round > 0 && round%clearRound == 0 }

// logClear records a step in s.clears, when it is set.
func (s *shard) logClear(off uint32, e *entry, what byte) {
	if s.clears == nil {
		return
	}
	step := clearStep{what: what}
	if e != nil {
		step.key = string(s.keyOf(off, e))
	}
	*s.clears = append(*s.clears, step)
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
	kh := hashKey(s.seed, unsafe.String(unsafe.SliceData(k), len(k)))
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

// maxPageChunks bounds the chunks of a page: (4096 - 8) / 16, for the
// smallest class in the smallest page.
const maxPageChunks = 256

// moveInShard moves the linked entry at off, whose page is drained, to a
// chunk of its size in another page: with own, a page this process took
// for itself (slab.AllocOwn, leaving moveReserve's share of the pages
// free), otherwise any (slab.AllocAway). The index
// and the queue point to the copy, which keeps the entry's bits, and the
// old chunk is freed. moved is false when no such page has room.
func (s *shard) moveInShard(off uint32, e *entry, own bool) (moved bool, err error) {
	size, err := s.slab.Size(off)
	if err != nil {
		return false, errCorruptArena
	}
	var noff uint32
	if own {
		noff, err = s.slab.AllocOwn(size, s.slab.Pages()/moveReserve)
	} else {
		noff, err = s.slab.AllocAway(size, off)
	}
	if err != nil {
		if errors.Is(err, slab.ErrNoMemory) {
			return false, nil
		}
		return false, errCorruptArena
	}
	h := s.hdr()
	copy(s.arena[noff:int(noff)+size], s.arena[off:int(off)+size])
	ne := s.entryAt(noff)
	k := s.keyOf(noff, ne)
	p := &s.index[s.bucket(hashKey(s.seed, unsafe.String(unsafe.SliceData(k), len(k))))]
	for n := 0; *p != off; n++ {
		if *p == 0 || !s.okEntry(*p) || n > s.maxSteps() {
			return false, errCorruptArena
		}
		p = &s.entryAt(*p).Next
	}
	*p = noff // the commit point: repair keeps the copy from here
	if ne.QPrev != 0 {
		if !s.okEntry(ne.QPrev) {
			return false, errCorruptArena
		}
		s.entryAt(ne.QPrev).QNext = noff
	} else {
		h.QueueHead = noff
	}
	if ne.QNext != 0 {
		if !s.okEntry(ne.QNext) {
			return false, errCorruptArena
		}
		s.entryAt(ne.QNext).QPrev = noff
	} else {
		h.QueueTail = noff
	}
	if h.ProtTail == off {
		h.ProtTail = noff
	}
	e.setBits(0) // a freed chunk never looks like an entry to repair
	if err := s.slab.Free(off); err != nil {
		return false, errCorruptArena
	}
	return true, nil
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

// drainBeforeJudging: the hand (reclaimInShard, freeExpiredInShard,
// evictAwayInShard, clearPageInShard) drains an entry's page before it reads
// the entry's expiry or refBit, and drops it on what it read then. An
// entry writer that pinned the entry while it was live, before the shard's
// lock was taken, may still be inside the page giving it a new TTL or
// setting its refBit; judged before the drain, the entry would be dropped
// once that writer is done, live, as expired (SafeSet evicting a live key)
// or unused. After the drain no writer enters the page until the lock is
// released (I8), so what the hand read holds until it drops the entry. It
// costs a compare-and-swap of the page's word per entry the hand looks at.

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

// probationShare is the share of a shard's entries, one in probationShare,
// that the protected segment leaves to probation at least.
const probationShare = 8

// balanceInShard keeps the protected segment to at most seven eighths of
// the shard's entries (probationShare), so that new keys always have a
// probation segment to prove themselves in, and the traces recognise
// them when they come back after it: while it holds more, the segment's last entry gets
// a second chance if it was used since the hand passed, and otherwise
// becomes probation's first (a demotion: it stays where it is, and ProtTail
// moves past it). It looks at a few entries a call.
func (s *shard) balanceInShard(pin uint32) error {
	h := s.hdr()
	for i := 0; i < 8 && h.ProtCount > h.Count-h.Count/probationShare && h.ProtTail != 0; i++ {
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

// dropInShard unlinks and frees an entry, whose page the caller drained
// under this hold of the lock, without touching Drop: for eviction, inside
// allocInShard, where Drop is already dropUnreachable.
func (s *shard) dropInShard(off uint32, e *entry) error {
	if !s.unchainInShard(off, e) || !s.unqueueInShard(off, e) {
		return errCorruptArena
	}
	return s.freeEntryInShard(off, e)
}

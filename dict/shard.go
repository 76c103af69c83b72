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

// findLocked returns the offset of key's entry, expired or not, and of its
// predecessor in the bucket chain (0 when the entry heads the chain), or 0.
func (s *shard) findLocked(key string, h uint64) (off, prev uint32, err error) {
	tag := tagOf(h)
	off = s.index[s.bucket(h)]
	for n := 0; off != 0; n++ {
		if !s.okEntry(off) || n > s.maxSteps() {
			return 0, 0, errCorruptArena
		}
		e := s.entryAt(off)
		if e.Tag == tag && int(e.KLen) == len(key) {
			if !s.okBody(off, e) {
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

// queueUnlinkLocked removes an entry from the eviction queue.
func (s *shard) queueUnlinkLocked(off uint32, e *entry) bool {
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
	e.QPrev, e.QNext = 0, 0
	return true
}

// queuePushLocked puts an unlinked entry at the head of the eviction queue.
func (s *shard) queuePushLocked(off uint32, e *entry) bool {
	h := s.hdr()
	e.QPrev, e.QNext = 0, h.QueueHead
	if h.QueueHead != 0 {
		if !s.okEntry(h.QueueHead) {
			return false
		}
		s.entryAt(h.QueueHead).QPrev = off
	} else {
		h.QueueTail = off
	}
	h.QueueHead = off
	return true
}

// chainUnlinkLocked removes an entry from its bucket chain.
func (s *shard) chainUnlinkLocked(off uint32, e *entry) bool {
	if !s.okBody(off, e) {
		return false
	}
	k := s.keyOf(off, e)
	h := hashKey(s.seed, unsafe.String(unsafe.SliceData(k), len(k)))
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

// removeLocked unlinks an entry from its chain and the eviction queue and frees it
// with its list nodes. Drop marks it for repair while it is half removed.
func (s *shard) removeLocked(off uint32) error {
	if err := s.drainPage(off); err != nil {
		return err
	}
	h := s.hdr()
	e := s.entryAt(off)
	h.Drop = off
	if !s.chainUnlinkLocked(off, e) || !s.queueUnlinkLocked(off, e) {
		return errCorruptArena
	}
	if err := s.freeEntryLocked(off, e); err != nil {
		return err
	}
	h.Count--
	h.Drop = dropNone
	return nil
}

// freeEntryLocked frees an unlinked entry's chunk and, for a list, its nodes.
func (s *shard) freeEntryLocked(off uint32, e *entry) error {
	if e.kind() == KindList {
		if err := s.freeNodesLocked(off, e); err != nil {
			return err
		}
	}
	e.setBits(0) // a freed chunk never looks like an entry to repair
	if err := s.slab.Free(off); err != nil {
		return errCorruptArena
	}
	return nil
}

// allocLocked allocates size bytes. When the slab is full it reclaims expired
// entries from the queue's tail and, if evict, evicts live ones too, in up to 30
// rounds of up to 3 entries as nginx does; forcible reports a live eviction.
// pin is an entry that must survive (the one the caller is replacing). While
// it runs, Drop says that entries the index does not reach are to be dropped
// by a repair: an evicted entry may be half unlinked.
func (s *shard) allocLocked(size int, evict bool, pin uint32, now func() int64) (off uint32, forcible bool, err error) {
	h := s.hdr()
	h.Drop = dropUnreachable
	for round := 0; ; round++ {
		off, err = s.slab.Alloc(size)
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
		freed, live, err := s.reclaimLocked(evict, pin, now)
		if err != nil {
			return 0, forcible, err
		}
		forcible = forcible || live
		if freed == 0 {
			return 0, forcible, ErrNoMemory
		}
	}
}

// reclaimLocked frees up to 3 entries from the queue's tail: expired ones, and
// when evict, the first live one it meets that was not used since the hand
// last passed it. A used entry gets a second chance (CLOCK): its bit is
// cleared and it moves to the head. Without evict it stops at the first live
// entry.
func (s *shard) reclaimLocked(evict bool, pin uint32, now func() int64) (freed int, live bool, err error) {
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
		isExpired := expired(e, now)
		if !isExpired {
			if !evict || live {
				break
			}
			if e.bits()&refBit != 0 {
				e.unuse()
				if !s.queueUnlinkLocked(off, e) || !s.queuePushLocked(off, e) {
					return freed, live, errCorruptArena
				}
				off = prev
				if off == 0 {
					// It was the head: the hand goes round to the tail
					// rather than end the round with nothing freed.
					off = h.QueueTail
				}
				continue
			}
		}
		if err := s.dropLocked(off, e); err != nil {
			return freed, live, err
		}
		h.Count--
		if isExpired {
			h.Expirations++
		} else {
			h.Evictions++
			live = true
		}
		freed++
		off = prev
	}
	return freed, live, nil
}

// dropLocked unlinks and frees an entry without touching Drop: for eviction,
// inside allocLocked, where Drop is already dropUnreachable.
func (s *shard) dropLocked(off uint32, e *entry) error {
	if err := s.drainPage(off); err != nil {
		return err
	}
	if !s.chainUnlinkLocked(off, e) || !s.queueUnlinkLocked(off, e) {
		return errCorruptArena
	}
	return s.freeEntryLocked(off, e)
}

package dict

import "fmt"

// checkSegmentsInShard checks the queue's segments, on a queue whose links
// were found sound: the first ProtCount entries from the head, and only
// they, are protected, and ProtTail is the last of them. It returns the
// first problem, or "".
func (s *shard) checkSegmentsInShard(pc *pacer) string {
	hd := s.hdr()
	var last uint32
	n := uint32(0)
	inProt := true
	for off := hd.QueueHead; off != 0; off = s.entryAt(off).QNext {
		pc.tick()
		switch p := s.entryAt(off).protected(); {
		case p && !inProt:
			return fmt.Sprintf("queue: protected entry %#x after probation ones", off)
		case p:
			last = off
			n++
		default:
			inProt = false
		}
	}
	if n != hd.ProtCount || last != hd.ProtTail {
		return fmt.Sprintf("queue: %d protected entries ending at %#x; header says %d ending at %#x", n, last, hd.ProtCount, hd.ProtTail)
	}
	return ""
}

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

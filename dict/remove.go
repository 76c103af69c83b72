package dict

// Removals. An entry leaves its shard's index one way, unlinkInShard, which
// takes it out of its chain and the eviction queue and fixes the shard's
// counts. The functions around it add what their callers need: a drained
// page, Drop for repair, a trace, or the chunk freed. Every function here
// needs the shard lock held.

// An exit is why an entry leaves its shard's index, and so what
// unlinkInShard does besides taking it out of its chain.
type exit uint8

const (
	exitDeleted  exit = iota // removed by a write: Count drops
	exitExpired              // reclaimed once expired: Count drops, Expirations counts it
	exitEvicted              // evicted live for room: Count drops, Evictions counts it
	exitEmptied              // an empty list a repair drops: Count drops, and the queue is the repair's
	exitReplaced             // a new entry of its key takes its place in the chain
	exitMoved                // its copy takes its place in the chain and the queue
)

// unlinkInShard is the one way out of a shard's index. It takes the entry
// at off, whose key has hash h, out of its bucket chain and the eviction
// queue, and counts its exit x in the shard's header. For exitReplaced and
// exitMoved the entry at with takes its place. Freeing the chunk is the
// caller's.
//
// The store to the chain's link is the commit point. A replaced entry's
// successor is set before it, and Drop names the old entry after it.
func (s *shard) unlinkInShard(off uint32, h uint64, x exit, with uint32) error {
	hd := s.hdr()
	e := s.entryAt(off)
	link, err := s.linkInShard(h, "", off)
	if err != nil || *link == 0 {
		return errCorruptArena
	}
	switch x {
	case exitReplaced:
		s.entryAt(with).Next = e.Next
		*link = with // from here repair keeps the new entry
		hd.Drop = off
	case exitMoved:
		*link = with // from here repair keeps the copy
		return s.handOverQueueInShard(off, with)
	default:
		*link = e.Next
		e.Next = 0
	}
	if x != exitEmptied && !s.unqueueInShard(off, e) {
		return errCorruptArena
	}
	switch x {
	case exitDeleted, exitEmptied:
		hd.Count--
	case exitExpired:
		hd.Count--
		hd.Expirations++
	case exitEvicted:
		hd.Count--
		hd.Evictions++
	}
	return nil
}

// handOverQueueInShard gives the place of the queued entry at off to its
// copy at with: the copy's neighbours, the queue's ends and ProtTail point
// to it. The copy holds off's links and bits, so the counts stay.
func (s *shard) handOverQueueInShard(off, with uint32) error {
	hd := s.hdr()
	ne := s.entryAt(with)
	if ne.QPrev != 0 {
		if !s.okEntry(ne.QPrev) {
			return errCorruptArena
		}
		s.entryAt(ne.QPrev).QNext = with
	} else {
		hd.QueueHead = with
	}
	if ne.QNext != 0 {
		if !s.okEntry(ne.QNext) {
			return errCorruptArena
		}
		s.entryAt(ne.QNext).QPrev = with
	} else {
		hd.QueueTail = with
	}
	if hd.ProtTail == off {
		hd.ProtTail = with
	}
	return nil
}

// keyHash returns the hash of the key of the entry at off; false when the
// entry's bytes leave the arena.
func (s *shard) keyHash(off uint32, e *entry) (uint64, bool) {
	if !s.okBytes(off, e) {
		return 0, false
	}
	return hashKey(s.seed, bytesString(s.keyOf(off, e))), true
}

// removeInShard drains the page of the entry at off and removes the entry
// (removeFoundInShard).
func (s *shard) removeInShard(off uint32, x exit) error {
	if err := s.drainPage(off); err != nil {
		return err
	}
	h, ok := s.keyHash(off, s.entryAt(off))
	if !ok {
		return errCorruptArena
	}
	return s.removeFoundInShard(off, h, x)
}

// removeFoundInShard removes the entry at off, whose key has hash h and
// whose page the caller drained under this hold of the lock: it unlinks it
// (unlinkInShard) and frees it with its list nodes. Drop names it while it
// is half removed.
func (s *shard) removeFoundInShard(off uint32, h uint64, x exit) error {
	hd := s.hdr()
	hd.Drop = off
	if err := s.unlinkInShard(off, h, x, 0); err != nil {
		return err
	}
	if err := s.freeEntryInShard(off, s.entryAt(off)); err != nil {
		return err
	}
	hd.Drop = dropNone
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

// dropInShard takes the entry at off, whose page the caller drained under
// this hold of the lock, out of the shard for room: expired (exitExpired),
// or live (exitEvicted), when it leaves a trace of its key (traceInShard).
// It unlinks the entry (unlinkInShard) and frees it with its list nodes. It
// leaves Drop as it is: dropUnreachable, inside allocInShard.
func (s *shard) dropInShard(off uint32, x exit) error {
	e := s.entryAt(off)
	h, ok := s.keyHash(off, e)
	if !ok {
		return errCorruptArena
	}
	if x == exitEvicted {
		s.traceInShard(h, e.expiry())
	}
	if err := s.unlinkInShard(off, h, x, 0); err != nil {
		return err
	}
	return s.freeEntryInShard(off, e)
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
			if err := s.dropInShard(off, exitExpired); err != nil {
				return false, err
			}
			return true, nil
		}
		off = prev
	}
	return false, nil
}

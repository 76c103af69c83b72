package dict

// The removals that eviction makes: each takes one entry out of its chain
// and the queue, frees it and counts it.

// removeEvictedInShard takes the live entry at off, whose key has hash kh,
// out of its chain and the queue, frees it and counts an eviction.
func (s *shard) removeEvictedInShard(off uint32, e *entry, kh uint64) error {
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

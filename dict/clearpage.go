package dict

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
		found, _, err := s.findInShard(bytesString(k), hashKey(s.seed, bytesString(k)))
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

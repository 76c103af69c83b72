package dict

import (
	"sync/atomic"

	"github.com/shmzone/shmzone/shm"
)

// validEntryInShard reports whether the chunk at off of size bytes holds a
// well-formed entry that belongs in this shard. An entry whose Ver is odd,
// a write in progress, is well formed only when midWrite allows it: in a
// copy of a shard that entry writers may have been inside (snapshot.go).
func (s *shard) validEntryInShard(off uint32, size int, shards int, midWrite bool) bool {
	if !s.okEntry(off) {
		return false
	}
	e := s.entryAt(off)
	if e.KLen == 0 || e.kind() == KindNone || e.kind() > KindList || e.bits()&^(kindMask|protBit|refBit) != 0 || writing(e.ver()) && !midWrite {
		return false
	}
	if !fits(e.kind(), int(e.VLen)) {
		return false
	}
	need := entrySize(int(e.KLen), int(e.VLen))
	if need > size || s.slab.ChunkSize(need) != size || !s.okBytes(off, e) {
		return false
	}
	k := s.keyOf(off, e)
	h := hashKey(s.seed, bytesString(k))
	return int(h&uint64(shards-1)) == s.id && e.Tag == tagOf(h)
}

// validNodeInShard reports whether the chunk at off is a well-formed list node.
func (s *shard) validNodeInShard(off uint32) bool {
	if !s.okNode(off) {
		return false
	}
	size, err := s.slab.Size(off)
	if err != nil {
		return false
	}
	n := s.nodeAt(off)
	if k := Kind(n.Kind); k == KindList || !fits(k, int(n.VLen)) {
		return false
	}
	need := nodeHdrSize + int(n.VLen)
	return need <= size && s.slab.ChunkSize(need) == size
}

// repairInShard rebuilds a shard from its entries after its lock was taken
// from a dead owner or corruption was found: the index, the eviction queue (in its
// old order as far as it holds), the lists' links and lengths, and the slab's
// free lists. It drops the entry named by Drop (the one being written), any
// entry the index did not reach when an allocation was in progress, and
// anything that is not a well-formed entry or list node. It allocates: repair
// is rare, and the alternative is a shard that stays broken. It first
// drains every page (no entry writer is inside one after it), so that an
// entry whose Ver is odd is one whose writer died; it is dropped. When a
// page's lock stays held by a live process past the timeout it repairs
// nothing and returns ErrLockTimeout.
//
// A repair's work grows with the shard, and it holds the lock throughout.
// Every walkStep entries or buckets it moves Seq by 2 (advance). So the
// shard's lock waiters see it progress and do not time out for it.
func (s *shard) repairInShard() error {
	p := &pacer{s: s}
	if err := s.drainPages(); err != nil {
		return err
	}
	hd := s.hdr()
	drop := hd.Drop
	var reach bitset
	if drop == dropUnreachable {
		reach = s.reachableInShard(p)
	}
	// Make the slab's descriptors consistent first, so that the chunks
	// ForEach and Size report are the ones the final Rebuild keeps: a run
	// whose body pages disagree would otherwise hold a kept entry or node
	// and then be freed under it.
	s.slab.Rebuild()
	s.advance()
	if reach != nil {
		s.unmarkUnreachableInShard(reach, p)
		drop = dropNone
	}
	entries := s.reindexInShard(drop, p)
	nodes := s.relinkListsInShard(entries, p)
	if err := s.unindexEmptyListsInShard(entries, p); err != nil {
		return err
	}
	s.slab.ForEach(func(off uint32, size int) bool {
		p.tick()
		if !entries.has(off) && !nodes.has(off) {
			if size >= entryHdrSize {
				s.entryAt(off).Bits = 0 // never resurrected by a later repair
			}
			s.slab.Forget(off)
		}
		return true
	})
	s.slab.Rebuild()
	s.advance()
	s.requeueAllInShard(entries, p)
	hd.Drop = dropNone
	return nil
}

// reachableInShard returns the set of entries that the index reaches.
func (s *shard) reachableInShard(p *pacer) bitset {
	reach := newBitset(len(s.arena))
	for b := range s.index {
		p.tick()
		off := s.index[b]
		for steps := 0; off != 0 && s.okEntry(off) && !reach.has(off) && steps <= s.maxSteps(); steps++ {
			reach.set(off)
			off = s.entryAt(off).Next
		}
	}
	return reach
}

// unmarkUnreachableInShard unmarks the well-formed entries that reach does
// not hold, then clears Drop. A repair may be killed too. It unmarks the
// entries while the index still says which they are, and only then clears
// Drop: a repair after a killed one must not judge reachability from a
// half-rebuilt index, which drops live entries.
func (s *shard) unmarkUnreachableInShard(reach bitset, p *pacer) {
	shards := 1 << s.shift
	s.slab.ForEach(func(off uint32, size int) bool {
		p.tick()
		if !reach.has(off) && s.validEntryInShard(off, size, shards, false) {
			s.entryAt(off).Bits = 0
		}
		return true
	})
	s.hdr().Drop = dropNone
}

// reindexInShard rebuilds the index and Count from the well-formed entries
// of the slab, but for the one at drop and a later duplicate of a key. It
// returns the set of entries it kept.
func (s *shard) reindexInShard(drop uint32, p *pacer) bitset {
	hd := s.hdr()
	shards := 1 << s.shift
	clear(s.index)
	hd.Count = 0
	entries := newBitset(len(s.arena))
	s.slab.ForEach(func(off uint32, size int) bool {
		p.tick()
		if off == drop || !s.validEntryInShard(off, size, shards, false) {
			return true
		}
		e := s.entryAt(off)
		k := s.keyOf(off, e)
		key := bytesString(k)
		h := hashKey(s.seed, key)
		if dup, err := s.findInShard(key, h); err != nil || dup != 0 {
			return true
		}
		slot := &s.index[s.bucket(h)]
		e.Next = *slot
		*slot = off
		entries.set(off)
		hd.Count++
		return true
	})
	return entries
}

// relinkListsInShard keeps the nodes reachable from each indexed list's
// head, relinks them both ways and sets the list's tail and length. It
// returns the set of nodes it kept.
func (s *shard) relinkListsInShard(entries bitset, p *pacer) bitset {
	nodes := newBitset(len(s.arena))
	for b := range s.index {
		p.tick()
		for off := s.index[b]; off != 0; off = s.entryAt(off).Next {
			e := s.entryAt(off)
			if e.kind() != KindList {
				continue
			}
			l := s.listOf(off, e)
			var prev, count uint32
			for n := l.Head; n != 0 && s.validNodeInShard(n) && !nodes.has(n) && !entries.has(n); n = s.nodeAt(n).Next {
				p.tick()
				nodes.set(n)
				s.nodeAt(n).Prev = prev
				prev = n
				count++
			}
			if prev != 0 {
				s.nodeAt(prev).Next = 0
			} else {
				l.Head = 0
			}
			l.Tail, l.Len = prev, count
		}
	}
	return nodes
}

// unindexEmptyListsInShard takes the empty lists out of the index
// (exitEmptied) and out of entries: an empty list is no entry.
func (s *shard) unindexEmptyListsInShard(entries bitset, p *pacer) error {
	for b := range s.index {
		p.tick()
		for off := s.index[b]; off != 0; {
			e := s.entryAt(off)
			next := e.Next
			if e.kind() == KindList && s.listOf(off, e).Len == 0 {
				h, _ := s.keyHash(off, e) // the index holds valid entries only
				if err := s.unlinkInShard(off, h, exitEmptied, 0); err != nil {
					return err
				}
				entries[off>>9] &^= 1 << (off >> 3 & 63)
			}
			off = next
		}
	}
	return nil
}

// requeueAllInShard rebuilds the eviction queue of the indexed entries:
// the old order first, as far as its links hold, then the rest. Every entry
// starts again in probation. The traces stay: a wrong one costs a count and
// a place in the protected segment, never a value.
func (s *shard) requeueAllInShard(entries bitset, p *pacer) {
	hd := s.hdr()
	linked := newBitset(len(s.arena))
	var head, tail uint32
	appendQueue := func(off uint32) {
		p.tick()
		e := s.entryAt(off)
		e.QPrev, e.QNext = tail, 0
		if tail != 0 {
			s.entryAt(tail).QNext = off
		} else {
			head = off
		}
		tail = off
		linked.set(off)
	}
	for cur, steps := hd.QueueHead, 0; cur != 0 && s.okEntry(cur) && !linked.has(cur) && steps <= s.maxSteps(); steps++ {
		next := s.entryAt(cur).QNext
		if entries.has(cur) {
			appendQueue(cur)
		}
		cur = next
	}
	for b := range s.index {
		p.tick()
		for off := s.index[b]; off != 0; off = s.entryAt(off).Next {
			if !linked.has(off) {
				appendQueue(off)
			}
		}
	}
	hd.QueueHead, hd.QueueTail = head, tail
	for off := head; off != 0; off = s.entryAt(off).QNext {
		p.tick()
		s.entryAt(off).setProt(false)
	}
	hd.ProtTail, hd.ProtCount = 0, 0
}

// Repair rebuilds every shard that fails its check, as the recovery from a
// dead lock owner does. It returns how many shards it rebuilt, those taken
// over from a dead owner included.
//
// Repair returns ErrLockTimeout when a live process holds a shard's lock
// past the lock timeout.
func (d *Dict) Repair() (_ int, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.writable(); err != nil {
		return 0, err
	}
	n := 0
	sc := newScratch(len(d.shards[0].arena))
	for i := range d.shards {
		s := &d.shards[i]
		// A lock of a dead owner is taken over, and the shard rebuilt, by
		// lockWait itself: count it too.
		var r shm.LockResult
		if !d.z.TryLockCounted(s.lockw, s.holds) {
			var err error
			if r, err = d.lockWait(s); err != nil {
				return n, err
			}
		} else {
			d.beginChange(s)
		}
		if r&shm.LockRecovered != 0 {
			n++
		} else if err := s.drainPages(); err != nil {
			d.unlock(s)
			return n, err
		} else if len(s.checkInShard(1, sc, false)) > 0 {
			if err := s.repairInShard(); err != nil {
				d.unlock(s)
				return n, err
			}
			atomic.AddUint64(&s.hdr().Recoveries, 1)
			n++
		}
		d.unlock(s)
	}
	return n, nil
}

// settleDeadInShard repairs the shard, whose pages the caller drained holding
// its lock, when an entry writer died inside one of its entries (an odd Ver
// then): the repair drops that entry, as the key's next write would
// (settleInShard). It follows only sound links; what a corrupt index hides
// is checkInShard's to report.
func (d *Dict) settleDeadInShard(s *shard) error {
	p := &pacer{s: s}
	for b := range s.index {
		p.tick()
		off := s.index[b]
		for n := 0; off != 0 && s.okEntry(off) && n <= s.maxSteps(); n++ {
			e := s.entryAt(off)
			if writing(e.ver()) {
				_, err := d.settleInShard(s, off)
				return err
			}
			off = e.Next
		}
	}
	return nil
}

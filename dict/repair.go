package dict

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/shmzone/shmzone/shm"
)

// bitset marks arena offsets (8-byte granules) during repair and check.
type bitset []uint64

func newBitset(arenaLen int) bitset  { return make(bitset, arenaLen/8/64+1) }
func (b bitset) has(off uint32) bool { return b[off>>9]&(1<<(off>>3&63)) != 0 }
func (b bitset) set(off uint32)      { b[off>>9] |= 1 << (off >> 3 & 63) }

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
	switch e.kind() {
	case KindInt, KindFloat:
		if e.VLen != 8 {
			return false
		}
	case KindBool:
		if e.VLen != 1 {
			return false
		}
	case KindList:
		if e.VLen != uint32(listHdrSize) {
			return false
		}
	}
	need := entrySize(int(e.KLen), int(e.VLen))
	if need > size || s.slab.ChunkSize(need) != size || !s.okBytes(off, e) {
		return false
	}
	k := s.keyOf(off, e)
	h := hashKey(s.seed, unsafe.String(unsafe.SliceData(k), len(k)))
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
	switch Kind(n.Kind) {
	case KindInt, KindFloat:
		if n.VLen != 8 {
			return false
		}
	case KindBool:
		if n.VLen != 1 {
			return false
		}
	case KindBytes:
	default:
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
func (s *shard) repairInShard() error {
	if err := s.drainPages(); err != nil {
		return err
	}
	hd := s.hdr()
	shards := 1 << s.shift
	drop := hd.Drop
	var reach bitset
	if drop == dropUnreachable {
		reach = newBitset(len(s.arena))
		for b := range s.index {
			off := s.index[b]
			for steps := 0; off != 0 && s.okEntry(off) && !reach.has(off) && steps <= s.maxSteps(); steps++ {
				reach.set(off)
				off = s.entryAt(off).Next
			}
		}
	}
	// Make the slab's descriptors consistent first, so that the chunks
	// ForEach and Size report are the ones the final Rebuild keeps: a run
	// whose body pages disagree would otherwise hold a kept entry or node
	// and then be freed under it.
	s.slab.Rebuild()
	if reach != nil {
		// A repair may be killed too. Unmark the entries the index does not
		// reach while the index still says which they are, and only then
		// clear Drop: a repair after a killed one must not judge
		// reachability from a half-rebuilt index, which drops live entries.
		s.slab.ForEach(func(off uint32, size int) bool {
			if !reach.has(off) && s.validEntryInShard(off, size, shards, false) {
				s.entryAt(off).Bits = 0
			}
			return true
		})
		hd.Drop = dropNone
		drop, reach = dropNone, nil
	}
	oldHead := hd.QueueHead
	clear(s.index)
	hd.Count = 0
	entries := newBitset(len(s.arena))
	s.slab.ForEach(func(off uint32, size int) bool {
		if off == drop || reach != nil && !reach.has(off) || !s.validEntryInShard(off, size, shards, false) {
			return true
		}
		e := s.entryAt(off)
		k := s.keyOf(off, e)
		key := unsafe.String(unsafe.SliceData(k), len(k))
		h := hashKey(s.seed, key)
		if dup, _, err := s.findInShard(key, h); err != nil || dup != 0 {
			return true
		}
		slot := &s.index[s.bucket(h)]
		e.Next = *slot
		*slot = off
		entries.set(off)
		hd.Count++
		return true
	})

	// Lists: keep the nodes reachable from each kept list's head.
	nodes := newBitset(len(s.arena))
	for b := range s.index {
		for off := s.index[b]; off != 0; off = s.entryAt(off).Next {
			e := s.entryAt(off)
			if e.kind() != KindList {
				continue
			}
			l := s.listOf(off, e)
			var prev, count uint32
			for n := l.Head; n != 0 && s.validNodeInShard(n) && !nodes.has(n) && !entries.has(n); n = s.nodeAt(n).Next {
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
	// An empty list is no entry.
	for b := range s.index {
		p := &s.index[b]
		for *p != 0 {
			e := s.entryAt(*p)
			if e.kind() == KindList && s.listOf(*p, e).Len == 0 {
				off := *p
				*p = e.Next
				e.Next = 0
				entries[off>>9] &^= 1 << (off >> 3 & 63)
				hd.Count--
				continue
			}
			p = &e.Next
		}
	}
	s.slab.ForEach(func(off uint32, size int) bool {
		if !entries.has(off) && !nodes.has(off) {
			if size >= entryHdrSize {
				s.entryAt(off).Bits = 0 // never resurrected by a later repair
			}
			s.slab.Forget(off)
		}
		return true
	})
	s.slab.Rebuild()

	// The queue: the old order first, as far as its links hold, then the rest.
	linked := newBitset(len(s.arena))
	var head, tail uint32
	appendQueue := func(off uint32) {
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
	for cur, steps := oldHead, 0; cur != 0 && s.okEntry(cur) && !linked.has(cur) && steps <= s.maxSteps(); steps++ {
		next := s.entryAt(cur).QNext
		if entries.has(cur) {
			appendQueue(cur)
		}
		cur = next
	}
	for b := range s.index {
		for off := s.index[b]; off != 0; off = s.entryAt(off).Next {
			if !linked.has(off) {
				appendQueue(off)
			}
		}
	}
	hd.QueueHead, hd.QueueTail = head, tail
	// Every entry starts again in probation; the traces stay (a wrong one
	// costs a count and a place in the protected segment, never a value).
	for off := head; off != 0; off = s.entryAt(off).QNext {
		s.entryAt(off).setProt(false)
	}
	hd.ProtTail, hd.ProtCount = 0, 0
	hd.Drop = dropNone
	return nil
}

// scratch holds checkInShard's marks, allocated before the lock is taken.
type scratch struct{ entries, nodes, linked bitset }

func newScratch(arenaLen int) *scratch {
	return &scratch{newBitset(arenaLen), newBitset(arenaLen), newBitset(arenaLen)}
}

func (b bitset) reset() { clear(b) }

// checkInShard returns the shard's problems, at most max of them; sc's sets
// must be sized for the arena. copied says s is a view of a copy taken
// while entry writers ran (snapshot.go): an entry's Ver may be odd there
// without any writer having died, so a write in progress is no problem.
func (s *shard) checkInShard(max int, sc *scratch, copied bool) []string {
	var probs []string
	add := func(format string, args ...any) bool {
		probs = append(probs, fmt.Sprintf("shard %d: "+format, append([]any{s.id}, args...)...))
		return len(probs) < max
	}
	hd := s.hdr()
	shards := 1 << s.shift
	if hd.Drop != dropNone {
		if !add("unfinished write (drop %#x)", hd.Drop) {
			return probs
		}
	}
	if err := s.slab.Check(); err != nil {
		if !add("%v", err) {
			return probs
		}
		return probs // the chunks themselves cannot be trusted
	}
	sc.entries.reset()
	sc.nodes.reset()
	sc.linked.reset()
	entries, nodes, linked := sc.entries, sc.nodes, sc.linked
	count := 0
	for b := range s.index {
		off := s.index[b]
		for steps := 0; off != 0; steps++ {
			size, err := s.slab.Size(off)
			if err != nil || !s.validEntryInShard(off, size, shards, copied) {
				add("bucket %d: %#x is not a valid entry", b, off)
				return probs
			}
			if entries.has(off) {
				add("bucket %d: cycle at %#x", b, off)
				return probs
			}
			e := s.entryAt(off)
			k := s.keyOf(off, e)
			if h := hashKey(s.seed, unsafe.String(unsafe.SliceData(k), len(k))); s.bucket(h) != uint32(b) {
				if !add("entry %#x in bucket %d, its hash says %d", off, b, s.bucket(h)) {
					return probs
				}
			}
			entries.set(off)
			count++
			if e.kind() == KindList {
				if p := s.checkListInShard(off, e, nodes); p != "" && !add("%s", p) {
					return probs
				}
			}
			off = e.Next
		}
	}
	if int(hd.Count) != count {
		if !add("count %d, index holds %d", hd.Count, count) {
			return probs
		}
	}
	var prev uint32
	n := 0
	for off := hd.QueueHead; off != 0; {
		if !s.okEntry(off) || !entries.has(off) || linked.has(off) {
			add("queue: %#x after %#x is not an indexed entry, or a cycle", off, prev)
			return probs
		}
		e := s.entryAt(off)
		if e.QPrev != prev {
			if !add("queue: %#x prev %#x, want %#x", off, e.QPrev, prev) {
				return probs
			}
		}
		linked.set(off)
		n++
		prev, off = off, e.QNext
	}
	if prev != hd.QueueTail {
		if !add("queue: tail %#x, list ends at %#x", hd.QueueTail, prev) {
			return probs
		}
	}
	if p := s.checkSegmentsInShard(); p != "" && !add("%s", p) {
		return probs
	}
	if n != count {
		if !add("queue holds %d entries, index %d", n, count) {
			return probs
		}
	}
	s.slab.ForEach(func(off uint32, size int) bool {
		if !entries.has(off) && !nodes.has(off) {
			return add("chunk %#x (%d bytes) allocated but unreachable", off, size)
		}
		return true
	})
	return probs
}

// checkListInShard checks one list's nodes and marks them; "" when sound.
func (s *shard) checkListInShard(off uint32, e *entry, nodes bitset) string {
	l := s.listOf(off, e)
	var prev, count uint32
	for n := l.Head; n != 0; n = s.nodeAt(n).Next {
		if !s.validNodeInShard(n) || nodes.has(n) {
			return fmt.Sprintf("list %#x: node %#x invalid or linked twice", off, n)
		}
		if s.nodeAt(n).Prev != prev {
			return fmt.Sprintf("list %#x: node %#x prev %#x, want %#x", off, n, s.nodeAt(n).Prev, prev)
		}
		nodes.set(n)
		prev = n
		count++
	}
	if prev != l.Tail || count != l.Len || count == 0 {
		return fmt.Sprintf("list %#x: tail %#x len %d, walk gives %#x and %d", off, l.Tail, l.Len, prev, count)
	}
	return ""
}

// Check verifies every shard's invariants: the slab's own, every index entry
// well formed and in its bucket, the eviction queue holding exactly the indexed
// entries in consistent order, lists linked and counted, no allocated chunk
// unreachable, no write left half done, and, read-only, no lock held by an
// owner that is gone. It returns nil, or ErrCorrupt joined with each problem
// found. It locks one shard at a time; a shard whose
// lock stays held past LockTimeout is not checked, and ErrLockTimeout is
// joined for it.
//
// A read-only view takes no lock: it checks a consistent copy of each shard
// (snapshot.go), so that a zone other processes write at the same time
// shows only the problems it has. There an entry write in progress (odd
// Ver) is no problem, since a read-only view cannot tell a live writer from
// a dead one; and a shard that a live process keeps locked, or that keeps
// changing under every copy, past LockTimeout is not checked:
// ErrLockTimeout is joined for it.
func (d *Dict) Check() (err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.usable(); err != nil {
		return err
	}
	var errs []error
	sc := newScratch(len(d.shards[0].arena)) // every shard's arena has one size
	var sn snapshot
	for i := range d.shards {
		s := &d.shards[i]
		var probs []string
		if d.readOnly {
			if err := d.take(s, &sn); err != nil {
				errs = append(errs, err)
				continue
			}
			probs = sn.view.checkInShard(20, sc, true)
		} else {
			if err := d.lock(s); err != nil {
				errs = append(errs, err)
				continue
			}
			// Entry writers inside a page finish first: an odd Ver is
			// then a writer's that died, whose entry any write would
			// drop first (I6); so does Check, rather than report it.
			if err := s.drainPages(); err != nil {
				d.unlock(s)
				errs = append(errs, err)
				continue
			}
			if err := d.settleDeadInShard(s); err != nil {
				d.unlock(s)
				errs = append(errs, err)
				continue
			}
			probs = s.checkInShard(20, sc, false)
			d.unlock(s)
		}
		if d.readOnly {
			// A writable Dict took such a lock over above; a read-only
			// one only looks.
			if w := atomic.LoadUint64(&s.h.Lock); w != 0 && d.z.LockState(&s.h.Lock) == shm.LockDead {
				probs = append(probs, fmt.Sprintf("shard %d: lock held by an owner that is gone (word %#x); the next writer takes it over and rebuilds the shard", i, w))
			}
		}
		for _, p := range probs {
			errs = append(errs, fmt.Errorf("%w: %s", ErrCorrupt, p))
		}
	}
	return errors.Join(errs...)
}

// Repair rebuilds every shard that fails its check, as recovery from a dead
// lock owner does, and returns how many it rebuilt, those whose lock it took
// over from a dead owner included. A shard whose lock is held
// by a dead process is taken over and rebuilt by the lock itself; one held by
// a live process past LockTimeout stops Repair with ErrLockTimeout.
func (d *Dict) Repair() (_ int, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.usable(); err != nil {
		return 0, err
	}
	if d.readOnly {
		return 0, ErrReadOnly
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

// checkSegmentsInShard checks the queue's segments, on a queue whose links
// were found sound: the first ProtCount entries from the head, and only
// they, are protected, and ProtTail is the last of them. It returns the
// first problem, or "".
func (s *shard) checkSegmentsInShard() string {
	hd := s.hdr()
	var last uint32
	n := uint32(0)
	inProt := true
	for off := hd.QueueHead; off != 0; off = s.entryAt(off).QNext {
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

// settleDeadInShard repairs the shard, whose pages the caller drained holding
// its lock, when an entry writer died inside one of its entries (an odd Ver
// then): the repair drops that entry, as the key's next write would
// (settleInShard). It follows only sound links; what a corrupt index hides
// is checkInShard's to report.
func (d *Dict) settleDeadInShard(s *shard) error {
	for b := range s.index {
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

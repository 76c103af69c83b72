package dict

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/shmzone/shmzone/shm"
)

// bitset marks arena offsets (8-byte granules) during repair and check.
type bitset []uint64

func newBitset(arenaLen int) bitset { return make(bitset, arenaLen/8/64+1) }

func (b bitset) has(off uint32) bool { return b[off>>9]&(1<<(off>>3&63)) != 0 }

func (b bitset) set(off uint32) { b[off>>9] |= 1 << (off >> 3 & 63) }

// scratch holds checkInShard's marks, allocated before the lock is taken.
type scratch struct{ entries, nodes, linked bitset }

func newScratch(arenaLen int) *scratch {
	return &scratch{newBitset(arenaLen), newBitset(arenaLen), newBitset(arenaLen)}
}

func (b bitset) reset() { clear(b) }

// problems collects a shard's problems for checkInShard.
type problems struct {
	id   int // the shard's
	max  int // how many are worth reporting
	list []string
	pace pacer // moves Seq every walkStep entries, chunks or nodes checked
}

// add records a problem and reports whether more are worth looking for.
func (p *problems) add(format string, args ...any) bool {
	p.list = append(p.list, fmt.Sprintf("shard %d: "+format, append([]any{p.id}, args...)...))
	return len(p.list) < p.max
}

// checkInShard returns the shard's problems, at most max of them; sc's sets
// must be sized for the arena. copied says s is a view of a copy taken
// while entry writers ran (snapshot.go): an entry's Ver may be odd there
// without any writer having died, so a write in progress is no problem.
func (s *shard) checkInShard(max int, sc *scratch, copied bool) []string {
	p := &problems{id: s.id, max: max, pace: pacer{s: s}}
	hd := s.hdr()
	if hd.Drop != dropNone {
		if !p.add("unfinished write (drop %#x)", hd.Drop) {
			return p.list
		}
	}
	if err := s.slab.Check(); err != nil {
		p.add("%v", err)
		return p.list // the chunks themselves cannot be trusted
	}
	sc.entries.reset()
	sc.nodes.reset()
	sc.linked.reset()
	count, more := s.checkIndexInShard(p, sc, copied)
	if !more {
		return p.list
	}
	if int(hd.Count) != count {
		if !p.add("count %d, index holds %d", hd.Count, count) {
			return p.list
		}
	}
	n, more := s.checkQueueInShard(p, sc)
	if !more {
		return p.list
	}
	if q := s.checkSegmentsInShard(&p.pace); q != "" && !p.add("%s", q) {
		return p.list
	}
	if n != count {
		if !p.add("queue holds %d entries, index %d", n, count) {
			return p.list
		}
	}
	s.slab.ForEach(func(off uint32, size int) bool {
		p.pace.tick()
		if !sc.entries.has(off) && !sc.nodes.has(off) {
			return p.add("chunk %#x (%d bytes) allocated but unreachable", off, size)
		}
		return true
	})
	return p.list
}

// checkIndexInShard checks the index's chains and the lists they hold, and
// marks their entries and nodes in sc. It returns how many entries the
// index holds, and more false when checkInShard is to stop.
func (s *shard) checkIndexInShard(p *problems, sc *scratch, copied bool) (count int, more bool) {
	shards := 1 << s.shift
	for b := range s.index {
		off := s.index[b]
		for steps := 0; off != 0; steps++ {
			p.pace.tick()
			size, err := s.slab.Size(off)
			if err != nil || !s.validEntryInShard(off, size, shards, copied) {
				p.add("bucket %d: %#x is not a valid entry", b, off)
				return count, false
			}
			if sc.entries.has(off) {
				p.add("bucket %d: cycle at %#x", b, off)
				return count, false
			}
			e := s.entryAt(off)
			k := s.keyOf(off, e)
			if h := hashKey(s.seed, bytesString(k)); s.bucket(h) != uint32(b) {
				if !p.add("entry %#x in bucket %d, its hash says %d", off, b, s.bucket(h)) {
					return count, false
				}
			}
			sc.entries.set(off)
			count++
			if e.kind() == KindList {
				if q := s.checkListInShard(off, e, sc.nodes, &p.pace); q != "" && !p.add("%s", q) {
					return count, false
				}
			}
			off = e.Next
		}
	}
	return count, true
}

// checkQueueInShard checks the eviction queue's links against the entries
// marked in sc and marks the entries it links. It returns how many entries
// the queue holds, and more false when checkInShard is to stop.
func (s *shard) checkQueueInShard(p *problems, sc *scratch) (n int, more bool) {
	hd := s.hdr()
	var prev uint32
	for off := hd.QueueHead; off != 0; {
		p.pace.tick()
		if !s.okEntry(off) || !sc.entries.has(off) || sc.linked.has(off) {
			p.add("queue: %#x after %#x is not an indexed entry, or a cycle", off, prev)
			return n, false
		}
		e := s.entryAt(off)
		if e.QPrev != prev {
			if !p.add("queue: %#x prev %#x, want %#x", off, e.QPrev, prev) {
				return n, false
			}
		}
		sc.linked.set(off)
		n++
		prev, off = off, e.QNext
	}
	if prev != hd.QueueTail {
		if !p.add("queue: tail %#x, list ends at %#x", hd.QueueTail, prev) {
			return n, false
		}
	}
	return n, true
}

// checkListInShard checks one list's nodes and marks them; "" when sound.
// It ticks pc once a node.
func (s *shard) checkListInShard(off uint32, e *entry, nodes bitset, pc *pacer) string {
	l := s.listOf(off, e)
	var prev, count uint32
	for n := l.Head; n != 0; n = s.nodeAt(n).Next {
		pc.tick()
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

// Check verifies every shard's invariants. It checks the slab, the index,
// the eviction queue, the lists and the page locks. It finds chunks that no
// entry reaches and writes left half done.
//
// Check locks one shard at a time. While it holds a shard's lock, it shows
// the lock's waiters progress every 256 entries it checks: they do not
// time out, however big the shard. A read-only view takes no lock: it checks
// a consistent copy of each shard. An entry write in progress is then no
// problem, since a view cannot tell a live writer from a dead one.
//
// Check returns nil, or ErrCorrupt joined with each problem found. It joins
// ErrLockTimeout for each shard that it could not lock, or copy, within the
// lock timeout.
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
			if err := d.take(s, &sn, false); err != nil {
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

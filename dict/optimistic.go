package dict

import "sync/atomic"

// tries bounds the optimistic attempts of one operation; after them it takes
// the shard's lock, which waits its turn instead of spinning. pinSpins
// bounds the looks at a page lock another writer holds: with backoff's
// waits, some 46,600 turns of its loop, a few tens of microseconds.
const (
	tries    = 8
	pinSpins = 24
)

// seq loads the shard's Seq.
func (s *shard) seq() uint64 { return atomic.LoadUint64(&s.h.Seq) }

// findOptimistic looks key up without the shard's lock: every word it reads
// is loaded atomically, every offset is bounds-checked, and a walk
// longer than the shard can hold ends it. It returns the entry's offset (0
// when absent), the Seq it read first, and ok false when the shard was
// changing (Seq odd) or the walk met what a change in progress can leave: the
// caller tries again. A found entry must still be validated against seq; an
// absence is validated here.
func (s *shard) findOptimistic(key string, h uint64) (off uint32, seq uint64, ok bool) {
	seq = s.seq()
	if seq&1 != 0 {
		return 0, seq, false
	}
	// Locals: the atomic loads below are barriers to the compiler, which
	// would otherwise reload the shard's fields after each.
	arena, steps, tag := s.arena, s.steps, tagOf(h)
	off = atomic.LoadUint32(&s.index[s.bucket(h)])
	for n := 0; off != 0; n++ {
		if off&7 != 0 || int(off)+entryHdrSize > len(arena) || n > steps {
			return 0, seq, false
		}
		e := entryIn(arena, off)
		if klen, etag := e.klenTag(); etag == tag && klen == len(key) {
			k := int(off) + entryHdrSize
			if k+klen > len(arena) {
				return 0, seq, false
			}
			// keyWords is inlined: the common key makes no call.
			if klen >= 8 && unalignedWords {
				if keyWords(arena, k, key) {
					return off, seq, true
				}
			} else if keyIsShort(arena, k, key) {
				return off, seq, true
			}
		}
		off = e.next()
	}
	return 0, seq, s.seq() == seq
}

// markUsed sets the refBit of the entry at off, which a reader found with
// Seq seq, for the CLOCK hand: once per pass of the hand, so it may cost a
// page lock. The bit is written only while the page is locked and Seq
// still seq, so that it lands in that entry and nowhere else; when the shard
// has changed since, the mark is skipped (it is advice).
func (s *shard) markUsed(off uint32, seq uint64) {
	if pw := s.tryPin(off, seq); pw != nil {
		s.entryAt(off).use()
		s.unpin(off, pw)
	}
}

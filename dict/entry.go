package dict

import "sync/atomic"

// ver loads the entry's Ver word.
func (e *entry) ver() uint64 { return atomic.LoadUint64(&e.Ver) }

// expiryOf and writing decode a Ver word.
func expiryOf(w uint64) int64 { return int64(w & expiryMask) }

func writing(w uint64) bool { return w&verOne != 0 }

// expiry returns the entry's expiry.
func (e *entry) expiry() int64 { return expiryOf(e.ver()) }

// setExpiry replaces the entry's expiry and steps its version to the next
// even one: for the holder of the shard's lock, whose Seq tells readers, on
// an entry whose page it drained.
func (e *entry) setExpiry(expiry int64) {
	v := (e.ver()>>expiryBits + 2) &^ 1
	atomic.StoreUint64(&e.Ver, v<<expiryBits|uint64(expiry))
}

// bits loads the entry's Bits.
func (e *entry) bits() uint8 { return uint8(atomic.LoadUint32(e.bitsWord()) >> bitsShift) }

// setBits replaces the entry's Bits; the caller holds its page lock, or the
// entry is not linked yet.
func (e *entry) setBits(b uint8) {
	w := e.bitsWord()
	for {
		old := atomic.LoadUint32(w)
		if atomic.CompareAndSwapUint32(w, old, old&^(0xff<<bitsShift)|uint32(b)<<bitsShift) {
			return
		}
	}
}

// klen and tag read KLen and Tag through bitsWord, as a reader that holds no
// lock must.
func (e *entry) klenTag() (int, uint8) {
	w := atomic.LoadUint32(e.bitsWord())
	return int(uint16(w >> klenShift)), uint8(w >> tagShift)
}

// vlen loads VLen; flags loads Flags.
func (e *entry) vlen() int { return int(atomic.LoadUint32(&e.VLen)) }

func (e *entry) flags() uint32 { return atomic.LoadUint32(&e.Flags) }

func (e *entry) next() uint32 { return atomic.LoadUint32(&e.Next) }

// kind returns the entry's value kind.
func (e *entry) kind() Kind { return Kind(e.bits() & kindMask) }

// use marks the entry used, for the CLOCK eviction; it writes only when the
// bit is clear, so a hot entry's cache line stays clean.
func (e *entry) use() {
	if e.bits()&refBit == 0 {
		atomic.OrUint32(e.bitsWord(), refBit<<bitsShift)
	}
}

// protected reports whether the entry is in the queue's protected segment.
func (e *entry) protected() bool { return e.bits()&protBit != 0 }

// setProt sets or clears the entry's protBit, under the shard's lock; the
// queue's links and counts are the caller's (segments.go).
func (e *entry) setProt(on bool) {
	if on {
		atomic.OrUint32(e.bitsWord(), protBit<<bitsShift)
	} else {
		atomic.AndUint32(e.bitsWord(), ^uint32(protBit<<bitsShift))
	}
}

// setKindUsed sets the entry's Kind to k and its refBit, keeping protBit:
// a write that changes the kind of a value in place.
func (e *entry) setKindUsed(k Kind) {
	w := e.bitsWord()
	for {
		old := atomic.LoadUint32(w)
		b := uint8(old>>bitsShift)&protBit | uint8(k) | refBit
		if atomic.CompareAndSwapUint32(w, old, old&^(0xff<<bitsShift)|uint32(b)<<bitsShift) {
			return
		}
	}
}

// unuse clears the entry's refBit: the CLOCK hand passed it.
func (e *entry) unuse() { atomic.AndUint32(e.bitsWord(), ^uint32(refBit<<bitsShift)) }

// okEntry reports whether an entry header at off lies inside the arena, with
// room for its header. It is the bounds check every link must pass before it
// is followed.
func (s *shard) okEntry(off uint32) bool {
	return off != 0 && off&7 == 0 && int(off)+entryHdrSize <= len(s.arena)
}

// okBytes reports whether an entry's key and value lie inside the arena.
func (s *shard) okBytes(off uint32, e *entry) bool {
	return int(off)+valOff(int(e.KLen))+int(e.VLen) <= len(s.arena)
}

func (s *shard) okNode(off uint32) bool {
	return off != 0 && off&7 == 0 && int(off)+nodeHdrSize <= len(s.arena)
}

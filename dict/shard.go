package dict

import (
	"errors"

	"github.com/shmzone/shmzone/internal/keyhash"
)

// Shard-level primitives. Every function here needs the shard lock held.
// It follows a link only after the bounds check of okEntry or okNode. A
// corrupt arena so yields errCorruptArena, never a fault.

var errCorruptArena = errors.New("corrupt arena")

// bucket and tag split a hash: low bits pick the shard (Dict.shardFor),
// bits 24..31 form the tag, bits 32.. pick the bucket.
func (s *shard) bucket(h uint64) uint32 { return uint32(h>>32) & s.idxMask }
func tagOf(h uint64) uint8              { return uint8(h >> 24) }

// maxSteps bounds every walk of a chain or list: no arena holds more entries.
func (s *shard) maxSteps() int { return s.steps }

// findInShard returns the offset of key's entry, expired or not, and of its
// predecessor in the bucket chain (0 when the entry heads the chain), or 0.
func (s *shard) findInShard(key string, h uint64) (off, prev uint32, err error) {
	tag := tagOf(h)
	off = s.index[s.bucket(h)]
	for n := 0; off != 0; n++ {
		if !s.okEntry(off) || n > s.maxSteps() {
			return 0, 0, errCorruptArena
		}
		e := s.entryAt(off)
		if e.Tag == tag && int(e.KLen) == len(key) {
			if !s.okBytes(off, e) {
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

// The eviction queue has two segments: from QueueHead down to ProtTail the
// protected entries (protBit), ProtCount of them, those used again after
// they were written; after them, down to QueueTail, the probation entries,
// new ones first. The hand starts at the tail: a flood of keys used once
// passes through probation and is evicted there, while the entries of
// keys in use wait in the protected segment (reclaimInShard).

// unchainInShard removes an entry from its bucket chain.
func (s *shard) unchainInShard(off uint32, e *entry) bool {
	if !s.okBytes(off, e) {
		return false
	}
	k := s.keyOf(off, e)
	return s.unchainHashedInShard(off, e, hashKey(s.seed, bytesString(k)))
}

// unchainHashedInShard is unchainInShard for a caller that knows the
// hash h of the entry's key.
func (s *shard) unchainHashedInShard(off uint32, e *entry, h uint64) bool {
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

// removeInShard unlinks an entry from its chain and the eviction queue and frees it
// with its list nodes. Drop marks it for repair while it is half removed.
func (s *shard) removeInShard(off uint32) error {
	if err := s.drainPage(off); err != nil {
		return err
	}
	h := s.hdr()
	e := s.entryAt(off)
	h.Drop = off
	if !s.unchainInShard(off, e) {
		return errCorruptArena
	}
	return s.removeUnlinkedInShard(off, e)
}

// removeFoundInShard is removeInShard of the entry at off that the caller
// found under this hold of the lock, with key hash h, and whose page it has
// drained since (lookup): it neither drains nor hashes again.
func (s *shard) removeFoundInShard(off uint32, h uint64) error {
	hd := s.hdr()
	e := s.entryAt(off)
	hd.Drop = off
	if !s.unchainHashedInShard(off, e, h) {
		return errCorruptArena
	}
	return s.removeUnlinkedInShard(off, e)
}

// removeUnlinkedInShard ends a removal once the entry is out of its chain,
// with Drop naming it: it leaves the queue and is freed.
func (s *shard) removeUnlinkedInShard(off uint32, e *entry) error {
	if !s.unqueueInShard(off, e) {
		return errCorruptArena
	}
	if err := s.freeEntryInShard(off, e); err != nil {
		return err
	}
	h := s.hdr()
	h.Count--
	h.Drop = dropNone
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

// drainBeforeJudging: the hand (reclaimInShard, freeExpiredInShard,
// evictAwayInShard, clearPageInShard) drains an entry's page before it reads
// the entry's expiry or refBit, and drops it on what it read then. An
// entry writer that pinned the entry while it was live, before the shard's
// lock was taken, may still be inside the page giving it a new TTL or
// setting its refBit; judged before the drain, the entry would be dropped
// once that writer is done, live, as expired (SafeSet evicting a live key)
// or unused. After the drain no writer enters the page until the lock is
// released (I8), so what the hand read holds until it drops the entry. It
// costs a compare-and-swap of the page's word per entry the hand looks at.

// dropInShard unlinks and frees an entry, whose page the caller drained
// under this hold of the lock, without touching Drop: for eviction, inside
// allocInShard, where Drop is already dropUnreachable.
func (s *shard) dropInShard(off uint32, e *entry) error {
	if !s.unchainInShard(off, e) || !s.unqueueInShard(off, e) {
		return errCorruptArena
	}
	return s.freeEntryInShard(off, e)
}

// hashKey is the hash of key in a zone of this seed (keyhash.Sum).
func hashKey(seed uint64, key string) uint64 { return keyhash.Sum(seed, key) }

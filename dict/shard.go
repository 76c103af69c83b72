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

// findInShard returns the offset of key's entry, expired or not, or 0.
func (s *shard) findInShard(key string, h uint64) (uint32, error) {
	link, err := s.linkInShard(h, key, 0)
	if err != nil {
		return 0, err
	}
	return *link, nil
}

// linkInShard walks the chain of the bucket of hash h and returns the link
// that points at the entry sought: the entry at off, or key's entry when off
// is 0. When the chain does not hold it, the link is the chain's last,
// which holds 0. It is the one walk of a chain that writers make.
func (s *shard) linkInShard(h uint64, key string, off uint32) (*uint32, error) {
	tag := tagOf(h)
	link := &s.index[s.bucket(h)]
	for n := 0; *link != 0; n++ {
		cur := *link
		if cur == off {
			return link, nil
		}
		if !s.okEntry(cur) || n > s.maxSteps() {
			return nil, errCorruptArena
		}
		e := s.entryAt(cur)
		if off == 0 && e.Tag == tag && int(e.KLen) == len(key) {
			if !s.okBytes(cur, e) {
				return nil, errCorruptArena
			}
			if string(s.keyOf(cur, e)) == key {
				return link, nil
			}
		}
		link = &e.Next
	}
	return link, nil
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

// hashKey is the hash of key in a zone of this seed (keyhash.Sum).
func hashKey(seed uint64, key string) uint64 { return keyhash.Sum(seed, key) }

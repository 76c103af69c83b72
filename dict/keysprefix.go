package dict

import (
	"strings"

	"github.com/shmzone/shmzone/shm"
)

// prefixChunk is how many buckets of a shard's index KeysWithPrefix walks
// in one hold of the shard's lock.
const prefixChunk = 256

// KeysWithPrefix returns the live keys that begin with prefix. It goes
// shard by shard, and through each shard's index prefixChunk buckets at a
// time. It holds a shard's lock for one such walk at most. So a writer of
// any process waits for it that long at most. A key written meanwhile may
// be listed or not, but never twice. The keys come in no order. A
// read-only view lists them as Keys does.
//
// KeysWithPrefix returns ErrClosed, ErrCorrupt for a bucket whose chain
// cannot be walked, and ErrLockTimeout, wrapped, for a shard it could not
// lock within the lock timeout. The keys listed before the error come
// with it.
func (d *Dict) KeysWithPrefix(prefix string) (_ []string, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	var keys []string
	if d.readOnly {
		all, err := d.Keys(0)
		for _, k := range all {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		return keys, err
	}
	for i := range d.shards {
		s := &d.shards[i]
		for b := 0; b < len(s.index); b += prefixChunk {
			if err := d.lock(s); err != nil {
				return keys, err
			}
			keys, err = d.prefixInShard(s, b, min(b+prefixChunk, len(s.index)), prefix, keys)
			d.unlock(s)
			if err != nil {
				return keys, err
			}
		}
	}
	return keys, nil
}

// prefixInShard appends to keys the live keys that begin with prefix in
// the buckets of shard s numbered from to to-1. The caller holds the
// shard's lock.
func (d *Dict) prefixInShard(s *shard, from, to int, prefix string, keys []string) ([]string, error) {
	for b := from; b < to; b++ {
		off := s.index[b]
		for n := 0; off != 0; n++ {
			if !s.okEntry(off) || n > s.maxSteps() {
				return keys, d.corruptInShard(s, "index")
			}
			e := s.entryAt(off)
			if !s.okBytes(off, e) {
				return keys, d.corruptInShard(s, "entry")
			}
			if k := s.keyOf(off, e); len(k) >= len(prefix) && string(k[:len(prefix)]) == prefix && !expired(e, d.clock) {
				keys = append(keys, string(k))
			}
			off = e.Next
		}
	}
	return keys, nil
}

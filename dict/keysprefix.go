package dict

import (
	"strings"

	"github.com/shmzone/shmzone/shm"
)

// KeysWithPrefix returns the live keys that begin with prefix. It goes
// shard by shard, and through each shard's index in steps of a bounded
// number of entries and buckets, one hold of the shard's lock each. So a writer of any process waits for it one step at most. A key
// written meanwhile may be listed or not, but never twice. The keys come
// in no order. A read-only view lists them as Keys does.
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
		visit := func(off uint32, e *entry) (bool, error) {
			if !s.okBytes(off, e) {
				return false, d.corruptInShard(s, "entry")
			}
			if k := s.keyOf(off, e); len(k) >= len(prefix) && string(k[:len(prefix)]) == prefix && !expired(e, d.clock) {
				keys = append(keys, string(k))
			}
			return true, nil
		}
		pos := walkPos{started: true, index: true}
		for done := false; !done; {
			if err := d.lock(s); err != nil {
				return keys, err
			}
			done, err = d.stepInShard(s, &pos, visit)
			d.unlock(s)
			if err != nil {
				return keys, err
			}
		}
	}
	return keys, nil
}

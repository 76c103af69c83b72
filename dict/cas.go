package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// casInPage is CompareAndSwap's entry write: a live key that does not hold
// old, or one whose value new can replace in place. done false: the
// shard's lock decides. It calls no user code, so it unlocks where it
// returns, as setInPage.
func (d *Dict) casInPage(k place, old Value, new *Value, expiry int64) (done, swapped bool, err error) {
	s, key, h := k.s, k.key, k.h
	off, e, pw, ok := d.pinLive(s, key, h)
	if !ok {
		return false, false, nil
	}
	switch {
	case e.kind() == KindList:
		s.unpin(off, pw)
		return true, false, ErrIsList
	case !s.equalValue(off, e, old):
		s.unpin(off, pw)
		return true, false, nil
	case !sameShape(e, new):
		s.unpin(off, pw)
		return false, false, nil
	}
	s.rewriteInPage(off, e, new, expiry, e.flags())
	d.unlockCounted(s, key, h, off, pw)
	return true, true, nil
}

// CompareAndSwap replaces key's live value with new when it equals old in
// kind and bytes. The new value has TTL ttl, where 0 means none, and keeps
// the flags. CompareAndSwap reports whether it replaced the value.
//
// CompareAndSwap returns ErrNotFound if key is absent or expired, ErrIsList
// for a list, and the errors of Set.
func (d *Dict) CompareAndSwap(key string, old, new Value, ttl time.Duration) (_ bool, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, true); err != nil {
		return false, err
	}
	expiry, err := d.checkValue(key, &new, ttl)
	if err != nil {
		return false, err
	}
	h := hashKey(d.seed, key)
	if done, swapped, err := d.casInPage(place{d.shardFor(h), key, h}, old, &new, expiry); done {
		return swapped, err
	}
	return d.lockCAS(key, old, new, expiry)
}

// lockCAS is CompareAndSwap under the shard's lock (a function of its
// own, as lockMutate).
func (d *Dict) lockCAS(key string, old, new Value, expiry int64) (bool, error) {
	s, h, off, err := d.lookup(key, true)
	if err != nil {
		return false, err
	}
	defer d.unlock(s)
	if off == 0 {
		return false, ErrNotFound
	}
	e := s.entryAt(off)
	if expired(e, d.clock) {
		return false, ErrNotFound
	}
	if !s.okBytes(off, e) {
		return false, d.corruptInShard(s, "entry")
	}
	if e.kind() == KindList {
		return false, ErrIsList
	}
	if !s.equalValue(off, e, old) {
		return false, nil
	}
	if _, _, err := d.storeInShard(s, key, h, off, put{v: new, expiry: expiry, evict: true, keepFlags: true}); err != nil {
		return false, err
	}
	return true, nil
}

// equalValue reports whether an entry holds v.
func (s *shard) equalValue(off uint32, e *entry, v Value) bool {
	if e.kind() != v.kind || int(e.VLen) != storedLen(v) {
		return false
	}
	cur, ok := s.entryValue(off, e)
	return ok && v.kind != KindList && cur.num == v.num && string(cur.b) == string(v.b)
}

package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// The writes that read the live value first: Expire, CompareAndSwap and
// Update.

// Expire sets key's TTL from now; 0 means never. Errors: ErrNotFound for an
// absent or expired key (an expired key is not brought back).
func (d *Dict) Expire(key string, ttl time.Duration) (err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	expiry, err := d.expiryFor(ttl)
	if err != nil {
		return err
	}
	if err := d.check(key, true); err != nil {
		return err
	}
	h := hashKey(d.seed, key)
	if d.expireInPage(d.shardFor(h), key, h, expiry) {
		return nil
	}
	return d.lockExpire(key, expiry)
}

// lockExpire is Expire under the shard's lock (a function of its own, as
// lockMutate).
func (d *Dict) lockExpire(key string, expiry int64) error {
	s, _, off, err := d.lookup(key, true)
	if err != nil {
		return err
	}
	defer d.unlock(s)
	if off == 0 {
		return ErrNotFound
	}
	e := s.entryAt(off)
	if expired(e, d.clock) {
		return ErrNotFound
	}
	if err := s.drainPage(off); err != nil {
		return d.failInShard(s, err, "page")
	}
	e.setExpiry(expiry)
	d.tally(s, tWrites)
	return nil
}

// CompareAndSwap replaces key's live value with new, with a TTL (0 = never),
// when it equals old in kind and bytes, keeping the flags; it reports whether
// it did. Errors: ErrNotFound for an absent or expired key, ErrIsList for a
// list, and the errors of Set.
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
	if done, swapped, err := d.casInPage(d.shardFor(h), key, h, old, &put{v: new, expiry: expiry, keepFlags: true}); done {
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
	if _, err := d.storeInShard(s, key, h, off, put{v: new, expiry: expiry, evict: true, keepFlags: true}); err != nil {
		return false, err
	}
	return true, nil
}

// equalValue reports whether an entry holds v.
func (s *shard) equalValue(off uint32, e *entry, v Value) bool {
	if e.kind() != v.kind || int(e.VLen) != storedLen(v) {
		return false
	}
	switch v.kind {
	case KindInt, KindFloat:
		return *s.num(off, e) == v.num
	case KindBool:
		return uint64(s.valueOf(off, e)[0]) == v.num
	case KindBytes:
		return string(s.valueOf(off, e)) == string(v.b)
	}
	return false
}

// Update calls fn with key's live value (ok false when absent or expired)
// and stores what it returns, atomically: the next value with its TTL (0 =
// never), or, when keep is false, deletes the key; the zero Value with keep
// true leaves the key as it is (value, TTL and flags, or absence). The
// flags of a live entry stay; a new entry gets 0.
//
// fn runs under the live entry's lock and its result is stored in place
// when it keeps the value's shape (kind aside: the same length, not a
// list); a result that removes the key or changes its length needs the
// shard's lock, under which fn is called again with the value as it then
// is. So fn may be called twice, and must compute its result from its
// arguments alone: what it records outside must be set on every call.
//
// A bytes cur aliases the zone and is valid only during fn; fn must not
// write to it (Mutate is the in-place form) and may return it, or an append
// to it: cur has no spare capacity, so an append copies. fn must be short
// and must not call the Dict. Update writes nothing before fn returns, so
// if fn panics (or calls runtime.Goexit) the key stays as it was, the lock
// is released, and the panic goes on, unrecovered and unchanged, to the
// caller. Errors: ErrIsList for a list, and the errors of Set.
func (d *Dict) Update(key string, fn func(cur Value, ok bool) (next Value, ttl time.Duration, keep bool)) error {
	var out Outcome
	return d.update(key, fn, &out)
}

// UpdateOutcome is Update that also reports the write's Outcome: whether
// live entries of other keys were evicted to make room for the next value,
// as Set does, and whether the key's own entry had been evicted.
func (d *Dict) UpdateOutcome(key string, fn func(cur Value, ok bool) (next Value, ttl time.Duration, keep bool)) (out Outcome, err error) {
	err = d.update(key, fn, &out)
	return out, err
}

// update is Update; it records in *out what the write did.
func (d *Dict) update(key string, fn func(cur Value, ok bool) (next Value, ttl time.Duration, keep bool), out *Outcome) (err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, true); err != nil {
		return err
	}
	h := hashKey(d.seed, key)
	// An entry write never evicts and finds its key: out stays zero.
	if done, err := d.updateInPage(d.shardFor(h), key, h, fn); done {
		return err
	}
	return d.lockUpdate(key, fn, out)
}

// lockUpdate is Update under the shard's lock; it records in *out what
// storing the next value did.
func (d *Dict) lockUpdate(key string, fn func(cur Value, ok bool) (next Value, ttl time.Duration, keep bool), out *Outcome) error {
	s, h, off, err := d.lookup(key, true)
	if err != nil {
		return err
	}
	defer d.unlock(s)
	var cur Value
	ok := false
	if off != 0 {
		e := s.entryAt(off)
		if !expired(e, d.clock) {
			if !s.okBytes(off, e) {
				return d.corruptInShard(s, "entry")
			}
			if e.kind() == KindList {
				return ErrIsList
			}
			cur, ok = s.current(off, e), true
		}
	}
	next, ttl, keep := fn(cur, ok)
	if keep && next.kind == KindNone {
		if ok {
			s.entryAt(off).use() // read, and left as it is
		}
		return nil
	}
	if !keep {
		if off != 0 {
			if err := s.removeInShard(off); err != nil {
				return d.failInShard(s, err, "remove")
			}
			d.tally(s, tWrites)
		}
		return nil
	}
	expiry, err := d.checkValue(key, &next, ttl)
	if err != nil {
		return err
	}
	*out, err = d.storeInShard(s, key, h, off, put{v: next, expiry: expiry, evict: true, keepFlags: true})
	return err
}

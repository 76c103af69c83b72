package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// The writes that read the live value first: Expire, CompareAndSwap and
// Update.

// Update replaces key's value with the one fn computes from it, atomically.
// fn gets the live value, with ok false when key is absent or expired. It
// returns the next value with its TTL, where 0 means no TTL. A live entry
// keeps its flags; a new entry gets 0.
//
// If fn returns keep false, Update deletes key. If it returns the zero Value
// with keep true, key stays as it is.
//
// fn may run twice. It runs first under the entry's page lock. If its result
// removes the key or changes the value's length, fn runs again under the
// shard's lock, with the value as it is then. fn must compute its result from
// its arguments alone, be short, and not call the Dict.
//
// A bytes cur aliases the zone and is valid only while fn runs. fn must not
// write to it; Mutate is the in-place form. fn may return cur or an append
// to it: cur has no spare capacity, so an append copies.
//
// Update writes nothing before fn returns. If fn panics, key stays as it was,
// the lock is released, and the panic goes on to the caller.
//
// Update returns ErrIsList for a list, and the errors of Set.
func (d *Dict) Update(key string, fn func(cur Value, ok bool) (next Value, ttl time.Duration, keep bool)) error {
	var out Outcome
	return d.update(key, fn, &out)
}

// UpdateOutcome is Update that also reports the write's Outcome.
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
			s.current(off, e, &cur)
			ok = true
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
			if err := s.removeInShard(off, exitDeleted); err != nil {
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
	_, *out, err = d.storeInShard(s, key, h, off, put{v: next, expiry: expiry, evict: true, keepFlags: true})
	return err
}

// updateInPage is Update's entry write: it calls fn with the live entry's
// value under the entry's page lock (released however fn ends) and stores
// a next value of the entry's shape in place. done false: fn's result
// needs the entry removed or resized, and the shard's lock calls fn again
// with the value as it then is.
func (d *Dict) updateInPage(s *shard, key string, h uint64, fn func(cur Value, ok bool) (Value, time.Duration, bool)) (done bool, err error) {
	off, e, pw, ok := d.pinLive(s, key, h)
	if !ok {
		return false, nil
	}
	n, slow, done, err := d.updateEntry(s, off, e, pw, fn)
	if slow { // after the unlock: flushPageCounts may wait for a flush
		d.flushPageCounts(s, key, h, off, n)
	}
	return done, err
}

// updateEntry is updateInPage once the entry is pinned: it releases pw
// however fn ends, and returns what the write's count asks (entryCounted).
func (d *Dict) updateEntry(s *shard, off uint32, e *entry, pw *uint64, fn func(cur Value, ok bool) (Value, time.Duration, bool)) (n uint32, slow, done bool, err error) {
	defer s.unpin(off, pw)
	if e.kind() == KindList {
		return 0, false, true, ErrIsList
	}
	var cur Value
	s.current(off, e, &cur)
	next, ttl, keep := fn(cur, true)
	switch {
	case keep && next.kind == KindNone:
		e.use() // read, and left as it is
		return 0, false, true, nil
	case !keep || !sameShape(e, &next):
		return 0, false, false, nil
	}
	// next is of the entry's shape: its kind and size need no check.
	expiry, err := d.expiryFor(ttl)
	if err != nil {
		return 0, false, true, err
	}
	s.rewriteInPage(off, e, &next, expiry, e.flags())
	n, slow = s.entryCounted(off, tWrites)
	return n, slow, true, nil
}

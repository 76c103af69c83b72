package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// The writes that read the live value first: Expire, CompareAndSwap and
// Update.

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
	next, ttl, keep := fn(s.current(off, e), true)
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

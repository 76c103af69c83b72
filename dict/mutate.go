package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// MaxMutateSize is the largest value Mutate works on.
const MaxMutateSize = 256

// zeros is the value a new entry of Mutate starts from.
var zeros [MaxMutateSize]byte

// Mutate changes a fixed-size bytes value in place, with no copy in or out.
// It is the fastest read-modify-write for a small state, such as a rate
// limiter's.
//
// Mutate calls fn under a lock, with the value bytes of key's live entry and
// found true, when that value holds exactly size bytes. fn's
// changes to b are the update, and its result is ignored. A found entry keeps
// its TTL and flags.
//
// When key is absent or expired, fn gets size zero bytes of a new entry and
// found false. The new entry has TTL ttl, where 0 means none, and flags 0.
// Mutate keeps it only if fn returns true.
//
// b aliases the zone and is valid only while fn runs. It has no spare
// capacity: an append copies, and the copy is not stored. fn must be short
// and must not call the Dict. If fn panics, Mutate puts back what it
// changed, releases the lock, and the panic goes on to the caller. A process
// that dies inside fn loses the key.
//
// Mutate returns ErrWrongShape without calling fn when the live value is of
// another kind or size. It returns ErrBadValue for a size outside
// 1..MaxMutateSize, ErrBadTTL, and the errors of Set for a new entry.
func (d *Dict) Mutate(key string, size int, ttl time.Duration, fn func(b []byte, found bool) bool) error {
	var out Outcome
	return d.mutate(key, size, ttl, mutateFn{keep: fn}, &out)
}

// MutateOutcome is Mutate whose fn also sets the entry's TTL, and which
// reports the write's Outcome.
//
// fn returns keep, as Mutate's fn does, and a TTL. A positive TTL makes the
// entry expire that long after now. A TTL of 0 keeps a found entry's TTL and
// gives a new entry none.
//
// MutateOutcome returns ErrBadTTL if fn returns a negative TTL for an entry
// that stays, and undoes fn's change as it undoes a panic. A new entry that
// fn does not keep needs no TTL.
func (d *Dict) MutateOutcome(key string, size int, fn func(b []byte, found bool) (keep bool, ttl time.Duration)) (out Outcome, err error) {
	err = d.mutate(key, size, 0, mutateFn{ttl: fn}, &out)
	return out, err
}

// mutateFn is Mutate's or MutateOutcome's fn: one of the two is set.
type mutateFn struct {
	keep func(b []byte, found bool) bool
	ttl  func(b []byte, found bool) (bool, time.Duration)
}

// call calls the fn with b, returning whether to keep a new entry and the
// TTL to set (0: none set; negative: fn's error, ErrBadTTL when the entry
// stays).
func (f mutateFn) call(b []byte, found bool) (bool, time.Duration) {
	if f.keep != nil {
		return f.keep(b, found), 0
	}
	return f.ttl(b, found)
}

// mutate is Mutate; it records in *out what the write did.
func (d *Dict) mutate(key string, size int, ttl time.Duration, fn mutateFn, out *Outcome) (err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, true); err != nil {
		return err
	}
	if size < 1 || size > MaxMutateSize {
		return ErrBadValue
	}
	if ttl < 0 {
		return ErrBadTTL
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	// A live entry is written in place, which never evicts: forcible stays
	// false. Absent, expired, or left half written or malformed: under the
	// shard's lock, which creates or repairs.
	if off, e, pw, ok := d.pinLive(s, key, h); ok {
		if e.kind() != KindBytes || e.vlen() != size {
			s.unpin(off, pw)
			return ErrWrongShape
		}
		n, slow, err := d.mutateInPage(s, off, pw, fn)
		if slow {
			d.flushPageCounts(s, key, h, off, n)
		}
		return err
	}
	return d.lockMutate(key, Bytes(zeros[:size]), ttl, fn, out)
}

// lockMutate is mutate under the shard's lock, of a value of zv's kind
// and size: zv is what a new entry starts from, zero bytes or, for
// ReviseInt, Int(0). It is a function of its own
// so that mutate's defers stay few enough for the compiler to open-code:
// a deferred call kept on the stack costs several nanoseconds at every
// return, taken or not.
func (d *Dict) lockMutate(key string, zv Value, ttl time.Duration, fn mutateFn, out *Outcome) error {
	s, h, off, err := d.lookup(key, true)
	if err != nil {
		return err
	}
	defer d.unlock(s)
	if off != 0 {
		e := s.entryAt(off)
		if !expired(e, d.clock) {
			if e.kind() != zv.kind || e.vlen() != storedSize(zv.kind, len(zv.b)) {
				return ErrWrongShape
			}
			if !s.okBytes(off, e) {
				return d.corruptInShard(s, "entry")
			}
			if _, err := d.mutateInShard(s, off, true, fn); err != nil {
				return err // undone
			}
			e.use()
			d.tally(s, tWrites)
			return nil
		}
	}
	expiry, err := d.checkValue(key, &zv, ttl)
	if err != nil {
		return err
	}
	if off, *out, err = d.storeInShard(s, key, h, off, put{v: zv, expiry: expiry, evict: true}); err != nil {
		return err
	}
	keep, err := d.mutateInShard(s, off, false, fn)
	if err != nil {
		return err // removed
	}
	if !keep {
		if err := s.removeInShard(off, exitDeleted); err != nil {
			return d.failInShard(s, err, "remove")
		}
	}
	return nil
}

// mutateInPage calls fn with the value bytes of the live entry at off, which
// passed okBytes, capped, holding the entry's page lock pw, which it
// releases. Readers see the entry's Ver odd while fn runs. When fn does not
// return (a panic, runtime.Goexit) the entry gets the bytes it had back
// before the panic goes on; when it returns a negative TTL, too, and
// mutateInPage returns ErrBadTTL. A process that dies inside fn leaves Ver
// odd: the entry is dropped by the repair that finds it. It counts a write
// that stands (entryCounted) and returns what the count asks of the caller
// once the lock is released.
func (d *Dict) mutateInPage(s *shard, off uint32, pw *uint64, fn mutateFn) (n uint32, slow bool, err error) {
	e := s.entryAt(off)
	b := s.valueOf(off, e)
	var small [undoSmall]byte // see undoSmall
	old := small[:]
	if len(b) > undoSmall {
		var big [MaxMutateSize]byte
		old = big[:]
	}
	copy(old, b)
	w := e.beginWrite()
	expiry := expiryOf(w)
	stands := false // fn returned, with a TTL that is no error
	defer func() {
		if !stands {
			copy(b, old[:len(b)])
		}
		e.endWrite(w, expiry)
		e.use()
		s.unpin(off, pw)
	}()
	_, ttl := fn.call(b, true)
	if ttl < 0 {
		return 0, false, ErrBadTTL // the deferred call undoes fn's change
	}
	if ttl > 0 {
		expiry, _ = d.expiryFor(ttl) // a positive TTL is no error
	}
	stands = true
	n, slow = s.entryCounted(off, tWrites) // before the deferred unlock
	return n, slow, nil
}

// undoSmall is the size of the buffer in which mutateInPage and
// mutateInShard keep the bytes they restore when fn does not return: a
// value of up to undoSmall bytes, such as limiter.Req's 16-byte state, is
// kept in it; a larger one in a buffer of MaxMutateSize, cleared only
// then. Clearing the larger buffer on every call slowed Mutate
// measurably (DESIGN.md, section 4).
const undoSmall = 32

// mutateInShard calls fn with the value bytes of the entry at off, which
// passed okBytes, capped, and with Drop naming the entry while fn writes its
// words one by one, and returns whether fn keeps a new entry. When fn does
// not return (a panic, runtime.Goexit) it undoes fn's work as the stack
// unwinds: a found entry gets the bytes it had, a new one is removed. It
// does not recover: the panic goes on. When fn returns a negative TTL for
// an entry that stays (found, or new and kept), it undoes it the same way
// and returns ErrBadTTL.
func (d *Dict) mutateInShard(s *shard, off uint32, found bool, fn mutateFn) (bool, error) {
	hd := s.hdr()
	b := s.valueOf(off, s.entryAt(off))
	var small [undoSmall]byte // see undoSmall
	old := small[:]
	if found && len(b) > undoSmall {
		var big [MaxMutateSize]byte
		old = big[:]
	}
	if found {
		copy(old, b)
	}
	stands := false // fn returned, with a TTL that is no error
	defer func() {
		if stands {
			return
		}
		if !found {
			if s.removeInShard(off, exitDeleted) != nil {
				d.corruptInShard(s, "remove") // repairs the shard
			}
			return
		}
		copy(b, old[:len(b)])
		hd.Drop = dropNone
	}()
	hd.Drop = off
	keep, ttl := fn.call(b, found)
	if keep || found {
		if ttl < 0 {
			return false, ErrBadTTL // the deferred call undoes fn's change
		}
		if ttl > 0 {
			expiry, _ := d.expiryFor(ttl) // a positive TTL is no error
			s.entryAt(off).setExpiry(expiry)
		}
	}
	hd.Drop = dropNone
	stands = true
	return keep, nil
}

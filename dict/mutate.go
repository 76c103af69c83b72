package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// MaxMutateSize is the largest value Mutate works on.
const MaxMutateSize = 256

// zeros is the value a new entry of Mutate starts from.
var zeros [MaxMutateSize]byte

// Mutate changes a fixed-size bytes value in place, with no copy in or out:
// the fastest read-modify-write for a small state such as a rate limiter's.
// Under the shard lock it calls fn with the value bytes of key's live entry
// (found true) when that holds exactly size bytes; fn's changes to b are the
// update, and its result is ignored. When key is absent or expired, fn gets
// size zero bytes of a new entry with TTL ttl (0 = never) and flags 0
// (found false), and the entry is kept only if fn returns true. A found
// entry keeps its TTL and flags and is marked used.
//
// b aliases the zone and is valid only during fn. It has no spare capacity:
// an append to it copies, and changes to the copy are not stored. fn must be
// short and must not call the Dict. If fn panics (or calls runtime.Goexit),
// Mutate undoes it before the panic goes on, unrecovered and unchanged, to
// the caller: a found entry gets its old bytes back, a new entry is removed,
// and the lock is released. A process that dies inside fn loses the key (the
// entry being written, doc.go I6).
//
// Errors: ErrWrongShape, without calling fn, when the live value is of
// another kind or size; ErrBadValue for a size outside 1..MaxMutateSize;
// ErrBadTTL; and those of Set for a new entry.
func (d *Dict) Mutate(key string, size int, ttl time.Duration, fn func(b []byte, found bool) bool) error {
	var forcible bool
	return d.mutate(key, size, ttl, fn, &forcible)
}

// MutateForcible is Mutate that also reports, as Set does, whether live
// entries of other keys were evicted to make room for a new entry; it may
// be true with ErrNoMemory too.
func (d *Dict) MutateForcible(key string, size int, ttl time.Duration, fn func(b []byte, found bool) bool) (forcible bool, err error) {
	err = d.mutate(key, size, ttl, fn, &forcible)
	return forcible, err
}

// mutate is Mutate; it sets *forcible when it evicted live entries.
func (d *Dict) mutate(key string, size int, ttl time.Duration, fn func(b []byte, found bool) bool, forcible *bool) (err error) {
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
			shm.Unlock(pw)
			return ErrWrongShape
		}
		d.mutatePinned(s, off, pw, fn)
		d.tally(s, tWrites)
		return nil
	}
	s, h, off, err := d.lookup(key, true)
	if err != nil {
		return err
	}
	defer d.unlock(s)
	if off != 0 {
		e := s.entryAt(off)
		if !expired(e, d.clock) {
			if e.kind() != KindBytes || e.vlen() != size {
				return ErrWrongShape
			}
			if !s.okBody(off, e) {
				return d.corruptLocked(s, "entry")
			}
			d.mutateLocked(s, off, true, fn)
			e.use()
			d.tally(s, tWrites)
			return nil
		}
	}
	expiry, err := d.checkValue(key, Bytes(zeros[:size]), ttl)
	if err != nil {
		return err
	}
	if *forcible, err = d.storeLocked(s, key, h, off, put{v: Bytes(zeros[:size]), expiry: expiry, evict: true}); err != nil {
		return err
	}
	if off, _, err = s.findLocked(key, h); err != nil || off == 0 {
		return d.corruptLocked(s, "index")
	}
	if !d.mutateLocked(s, off, false, fn) {
		if err := s.removeLocked(off); err != nil {
			return d.failLocked(s, err, "remove")
		}
	}
	return nil
}

// mutatePinned calls fn with the value bytes of the live entry at off, which
// passed okBody, capped, holding the entry's page lock pw, which it
// releases. Readers see the entry's Ver odd while fn runs. When fn does not
// return (a panic, runtime.Goexit) the entry gets the bytes it had back
// before the panic goes on. A process that dies inside fn leaves Ver odd:
// the entry is dropped by the repair that finds it.
func (d *Dict) mutatePinned(s *shard, off uint32, pw *uint64, fn func(b []byte, found bool) bool) {
	e := s.entryAt(off)
	b := capped(s.valueOf(off, e))
	var old [MaxMutateSize]byte
	copy(old[:], b)
	w := e.beginWrite()
	returned := false
	defer func() {
		if !returned {
			copy(b, old[:len(b)])
		}
		e.endWrite(w, expiryOf(w))
		e.use()
		shm.Unlock(pw)
	}()
	fn(b, true)
	returned = true
}

// mutateLocked calls fn with the value bytes of the entry at off, which
// passed okBody, capped, and with Drop naming the entry while fn writes its
// words one by one. When fn does not return (a panic, runtime.Goexit) it
// undoes fn's work as the stack unwinds: a found entry gets the bytes it
// had, a new one is removed. It does not recover: the panic goes on.
func (d *Dict) mutateLocked(s *shard, off uint32, found bool, fn func(b []byte, found bool) bool) bool {
	hd := s.hdr()
	b := capped(s.valueOf(off, s.entryAt(off)))
	var old [MaxMutateSize]byte
	if found {
		copy(old[:], b)
	}
	returned := false
	defer func() {
		if returned {
			return
		}
		if !found {
			if s.removeLocked(off) != nil {
				d.corruptLocked(s, "remove") // repairs the shard
			}
			return
		}
		copy(b, old[:len(b)])
		hd.Drop = dropNone
	}()
	hd.Drop = off
	keep := fn(b, found)
	hd.Drop = dropNone
	returned = true
	return keep
}

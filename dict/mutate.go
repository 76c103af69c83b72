package dict

import "time"

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
// (found false), and the entry is kept only if fn returns true. b aliases the
// zone and is valid only during fn; fn must be short and must not call the
// Dict. A process that dies inside fn loses the key (the entry being written,
// doc.go I6). A found entry keeps its TTL and flags and is marked used.
//
// Errors: ErrWrongShape, without calling fn, when the live value is of
// another kind or size; ErrBadValue for a size outside 1..MaxMutateSize;
// ErrBadTTL; and those of Set for a new entry.
func (d *Dict) Mutate(key string, size int, ttl time.Duration, fn func(b []byte, found bool) bool) error {
	if err := d.check(key, true); err != nil {
		return err
	}
	if size < 1 || size > MaxMutateSize {
		return ErrBadValue
	}
	if ttl < 0 {
		return ErrBadTTL
	}
	s, h, off, err := d.lookup(key, true)
	if err != nil {
		return err
	}
	defer d.unlock(s)
	hd := s.hdr()
	if off != 0 {
		e := s.entryAt(off)
		if !expired(e, d.clock) {
			if e.kind() != KindBytes || int(e.VLen) != size {
				return ErrWrongShape
			}
			if !s.okBody(off, e) {
				return d.corruptLocked(s, "entry")
			}
			hd.Drop = off // fn writes words one by one
			fn(s.valueOf(off, e), true)
			hd.Drop = dropNone
			e.use()
			hd.Writes++
			return nil
		}
	}
	expiry, err := d.checkValue(key, Bytes(zeros[:size]), ttl)
	if err != nil {
		return err
	}
	if _, err := d.storeLocked(s, key, h, off, Bytes(zeros[:size]), expiry, 0, modeSet, true, false); err != nil {
		return err
	}
	if off, _, err = s.findLocked(key, h); err != nil || off == 0 {
		return d.corruptLocked(s, "index")
	}
	e := s.entryAt(off)
	hd.Drop = off
	keep := fn(s.valueOf(off, e), false)
	hd.Drop = dropNone
	if !keep {
		if err := s.removeLocked(off); err != nil {
			return d.corruptLocked(s, "remove")
		}
	}
	return nil
}

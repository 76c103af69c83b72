package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// Get returns the value and flags under key, and marks the entry used, so
// that eviction passes it over once. A bytes value is the caller's own copy. Errors: ErrNotFound
// for an absent or expired key, ErrIsList for a list.
func (d *Dict) Get(key string) (Value, uint32, error) {
	var r readResult
	err := d.get(key, nil, false, &r)
	return r.v, r.flags, err
}

// GetInto is Get that appends a bytes value to dst[:0] and returns it in the
// Value: with room in dst it allocates nothing. dst may be reused once the
// Value is no longer needed.
func (d *Dict) GetInto(key string, dst []byte) (Value, uint32, error) {
	var r readResult
	err := d.get(key, dst[:0], false, &r)
	return r.v, r.flags, err
}

// GetStale is Get that also returns an expired value, with stale true, until
// its memory is reclaimed; then ErrNotFound.
func (d *Dict) GetStale(key string) (v Value, flags uint32, stale bool, err error) {
	var r readResult
	err = d.get(key, nil, true, &r)
	return r.v, r.flags, r.stale, err
}

func (d *Dict) get(key string, dst []byte, allowStale bool, r *readResult) (err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, false); err != nil {
		return err
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	for {
		if err := d.lock(s); err != nil {
			return err
		}
		need, err := d.getLocked(s, key, h, dst, allowStale, r)
		d.unlock(s)
		if need < 0 {
			return err
		}
		// The bytes do not fit dst: grow it outside the lock and look again.
		dst = make([]byte, 0, need)
	}
}

// readResult is what getLocked found.
type readResult struct {
	v     Value
	flags uint32
	stale bool
}

// getLocked reads key's entry into r; need >= 0 asks the caller for a dst of
// that capacity and a second call.
func (d *Dict) getLocked(s *shard, key string, h uint64, dst []byte, allowStale bool, r *readResult) (need int, err error) {
	hd := s.hdr()
	off, _, err := s.findLocked(key, h)
	if err != nil {
		return -1, d.corruptLocked(s, "index")
	}
	if off == 0 {
		d.count(&hd.Misses)
		return -1, ErrNotFound
	}
	e := s.entryAt(off)
	stale := false
	if expired(e, d.clock) {
		if !allowStale {
			d.count(&hd.Misses)
			return -1, ErrNotFound
		}
		stale = true
	}
	if !s.okBody(off, e) {
		return -1, d.corruptLocked(s, "entry")
	}
	switch e.kind() {
	case KindInt, KindFloat:
		if e.VLen != 8 {
			return -1, d.corruptLocked(s, "number length")
		}
		r.v.kind, r.v.num = e.kind(), *s.num(off, e)
	case KindBool:
		if e.VLen != 1 {
			return -1, d.corruptLocked(s, "bool length")
		}
		r.v.kind, r.v.num = KindBool, uint64(s.valueOf(off, e)[0]&1)
	case KindBytes:
		n := int(e.VLen)
		if n > cap(dst) || dst == nil {
			return n, nil
		}
		dst = dst[:n]
		copy(dst, s.valueOf(off, e))
		r.v.kind, r.v.b = KindBytes, dst
	case KindList:
		return -1, ErrIsList
	default:
		return -1, d.corruptLocked(s, "kind")
	}
	r.flags, r.stale = e.Flags, stale
	if !d.readOnly {
		e.use()
		hd.Hits++
	}
	return -1, nil
}

// count adds one to a shard counter, unless the view is read-only.
func (d *Dict) count(c *uint64) {
	if !d.readOnly {
		*c++
	}
}

// TTL returns the time key has left; 0 means it never expires. Errors:
// ErrNotFound for an absent or expired key.
func (d *Dict) TTL(key string) (_ time.Duration, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	s, _, off, err := d.lookup(key, false)
	if err != nil {
		return 0, err
	}
	defer d.unlock(s)
	if off == 0 {
		return 0, ErrNotFound
	}
	e := s.entryAt(off)
	if e.Expiry == 0 {
		return 0, nil
	}
	left := e.Expiry - d.now()
	if left <= 0 {
		return 0, ErrNotFound
	}
	return time.Duration(left) * time.Millisecond, nil
}

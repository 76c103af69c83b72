package dict

import (
	"math"
	"time"
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

func (d *Dict) get(key string, dst []byte, allowStale bool, r *readResult) error {
	if err := d.check(key, false); err != nil {
		return err
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	for {
		d.lock(s)
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
func (d *Dict) TTL(key string) (time.Duration, error) {
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

// Expire sets key's TTL from now; 0 means never. Errors: ErrNotFound for an
// absent or expired key (an expired key is not brought back).
func (d *Dict) Expire(key string, ttl time.Duration) error {
	expiry, err := d.expiryFor(ttl)
	if err != nil {
		return err
	}
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
	e.Expiry = expiry
	s.hdr().Writes++
	return nil
}

// CompareAndSwap replaces key's live value with new, with a TTL (0 = never),
// when it equals old in kind and bytes, keeping the flags; it reports whether
// it did. Errors: ErrNotFound for an absent or expired key, ErrIsList for a
// list, and the errors of Set.
func (d *Dict) CompareAndSwap(key string, old, new Value, ttl time.Duration) (bool, error) {
	if err := d.check(key, true); err != nil {
		return false, err
	}
	expiry, err := d.checkValue(key, new, ttl)
	if err != nil {
		return false, err
	}
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
	if !s.okBody(off, e) {
		return false, d.corruptLocked(s, "entry")
	}
	if e.kind() == KindList {
		return false, ErrIsList
	}
	if !s.equalLocked(off, e, old) {
		return false, nil
	}
	if _, err := d.storeLocked(s, key, h, off, new, expiry, 0, modeSet, true, true); err != nil {
		return false, err
	}
	return true, nil
}

// equalLocked reports whether an entry holds v.
func (s *shard) equalLocked(off uint32, e *entry, v Value) bool {
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
// under the shard lock and stores what it returns: the next value with its
// TTL (0 = never), or, when keep is false, deletes the key; the zero Value
// with keep true leaves the key as it is (value, TTL and flags, or absence).
// The flags of a live entry stay; a new entry gets 0. A bytes cur aliases the zone and is
// valid only during fn. fn must be short and must not call the Dict; if it
// panics, the lock is released and the panic goes on. Errors: ErrIsList for a
// list, and the errors of Set.
func (d *Dict) Update(key string, fn func(cur Value, ok bool) (next Value, ttl time.Duration, keep bool)) error {
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
			if !s.okBody(off, e) {
				return d.corruptLocked(s, "entry")
			}
			switch e.kind() {
			case KindList:
				return ErrIsList
			case KindInt, KindFloat:
				cur = Value{kind: e.kind(), num: math.Float64bits(0)}
				if e.VLen == 8 {
					cur.num = *s.num(off, e)
				}
			case KindBool:
				cur = Bool(e.VLen == 1 && s.valueOf(off, e)[0] != 0)
			case KindBytes:
				cur = Value{kind: KindBytes, b: s.valueOf(off, e)}
			}
			ok = true
		}
	}
	next, ttl, keep := fn(cur, ok)
	if keep && next.kind == KindNone {
		return nil // leave it as it is
	}
	if !keep {
		if off != 0 {
			if err := s.removeLocked(off); err != nil {
				return d.corruptLocked(s, "remove")
			}
			s.hdr().Writes++
		}
		return nil
	}
	expiry, err := d.checkValue(key, next, ttl)
	if err != nil {
		return err
	}
	_, err = d.storeLocked(s, key, h, off, next, expiry, 0, modeSet, true, true)
	return err
}

package dict

import (
	"math"
	"time"

	"github.com/shmzone/shmzone/shm"
)

// How storeLocked treats an existing key.
type mode uint8

const (
	modeSet     mode = iota // write whatever is there
	modeAdd                 // fail with ErrExists on a live key
	modeReplace             // fail with ErrNotFound unless the key is live
)

// Set stores v under key with a TTL (0 = never expires) and user flags. When
// the shard is full it reclaims expired entries, then evicts the oldest
// entries not used since the eviction hand last passed them (package doc);
// forcible reports that live entries were evicted. On
// ErrNoMemory (forcible may be true) the key's old value is left as it was.
func (d *Dict) Set(key string, v Value, ttl time.Duration, flags uint32) (forcible bool, err error) {
	return d.store(key, v, ttl, flags, modeSet, true)
}

// SafeSet is Set without eviction: ErrNoMemory when the value does not fit in
// free or expired memory.
func (d *Dict) SafeSet(key string, v Value, ttl time.Duration, flags uint32) error {
	_, err := d.store(key, v, ttl, flags, modeSet, false)
	return err
}

// Add is Set for an absent key only: ErrExists when key holds a live value or
// a list. An expired key counts as absent.
func (d *Dict) Add(key string, v Value, ttl time.Duration, flags uint32) (forcible bool, err error) {
	return d.store(key, v, ttl, flags, modeAdd, true)
}

// SafeAdd is Add without eviction.
func (d *Dict) SafeAdd(key string, v Value, ttl time.Duration, flags uint32) error {
	_, err := d.store(key, v, ttl, flags, modeAdd, false)
	return err
}

// Replace is Set for a live key only: ErrNotFound when key is absent or
// expired. The kind may change.
func (d *Dict) Replace(key string, v Value, ttl time.Duration, flags uint32) (forcible bool, err error) {
	return d.store(key, v, ttl, flags, modeReplace, true)
}

func (d *Dict) store(key string, v Value, ttl time.Duration, flags uint32, m mode, evict bool) (_ bool, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, true); err != nil {
		return false, err
	}
	expiry, err := d.checkValue(key, v, ttl)
	if err != nil {
		return false, err
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	if err := d.lock(s); err != nil {
		return false, err
	}
	forcible, err := d.findStoreLocked(s, key, h, v, expiry, flags, m, evict, false)
	d.unlock(s)
	return forcible, err
}

// findStoreLocked finds key's entry and writes v under it (storeLocked).
func (d *Dict) findStoreLocked(s *shard, key string, h uint64, v Value, expiry int64, flags uint32, m mode, evict, keepFlags bool) (bool, error) {
	off, _, err := s.findLocked(key, h)
	if err != nil {
		return false, d.corruptLocked(s, "index")
	}
	return d.storeLocked(s, key, h, off, v, expiry, flags, m, evict, keepFlags)
}

// storeLocked writes v under key, whose entry is at off (0 when absent) as
// findLocked found it under this hold of the lock. keepFlags keeps a live
// entry's flags (CompareAndSwap, Update) instead of setting flags.
func (d *Dict) storeLocked(s *shard, key string, h uint64, off uint32, v Value, expiry int64, flags uint32, m mode, evict, keepFlags bool) (bool, error) {
	var e *entry
	live := false
	if off != 0 {
		e = s.entryAt(off)
		live = !expired(e, d.clock)
		if keepFlags && live {
			flags = e.Flags
		}
	}
	switch {
	case m == modeAdd && live:
		return false, ErrExists
	case m == modeReplace && !live:
		return false, ErrNotFound
	}
	if keepFlags && !live {
		flags = 0
	}
	vlen := storedLen(v)
	need := entrySize(len(key), vlen)
	hd := s.hdr()
	if off != 0 && s.slab.ChunkSize(need) == s.slab.ChunkSize(entrySize(int(e.KLen), int(e.VLen))) && int(off)+need <= len(s.arena) {
		// The new value fits the entry's chunk: write it in place. (The
		// bound matters only in a corrupt arena, where off may be no chunk.)
		hd.Drop = off
		if e.kind() == KindList {
			if err := s.freeNodesLocked(off, e); err != nil {
				return false, d.corruptLocked(s, "list")
			}
		}
		e.Flags, e.Expiry, e.VLen, e.Bits = flags, expiry, uint32(vlen), uint8(v.kind)|refBit
		s.putValueLocked(off, e, v)
		hd.Drop = dropNone
		e.use()
		hd.Writes++
		return false, nil
	}
	if !live && !evict && off != 0 {
		// An expired entry of another size: free it first so SafeSet can use
		// its memory.
		if err := s.removeLocked(off); err != nil {
			return false, d.corruptLocked(s, "remove")
		}
		off = 0
	}
	noff, forcible, err := s.allocLocked(need, evict, off, d.clock)
	if err != nil {
		hd.Drop = dropNone
		if err == errCorruptArena {
			return forcible, d.corruptLocked(s, "alloc")
		}
		return forcible, err
	}
	hd.Drop = noff // half written: drop it
	ne := s.entryAt(noff)
	bits := uint8(v.kind) // a new key starts unreferenced
	if live {
		bits |= refBit // a rewritten one was just used
	}
	*ne = entry{Flags: flags, Expiry: expiry, VLen: uint32(vlen), KLen: uint16(len(key)), Tag: tagOf(h), Bits: bits}
	copy(s.keyOf(noff, ne), key)
	s.putValueLocked(noff, ne, v)
	if off == 0 {
		slot := &s.index[s.bucket(h)]
		ne.Next = *slot
		*slot = noff // the commit point
		hd.Drop = dropNone
		hd.Count++
	} else {
		// Replace the old entry in its chain; eviction may have changed the
		// chain since findLocked, so walk it again.
		p := &s.index[s.bucket(h)]
		for n := 0; *p != off; n++ {
			if *p == 0 || !s.okEntry(*p) || n > s.maxSteps() {
				return forcible, d.corruptLocked(s, "chain")
			}
			p = &s.entryAt(*p).Next
		}
		ne.Next = e.Next
		*p = noff // the commit point: from here repair keeps the new entry
		hd.Drop = off
		if !s.queueUnlinkLocked(off, e) {
			return forcible, d.corruptLocked(s, "queue")
		}
		if err := s.freeEntryLocked(off, e); err != nil {
			return forcible, d.corruptLocked(s, "free")
		}
		hd.Drop = dropNone
	}
	if !s.queuePushLocked(noff, ne) {
		return forcible, d.corruptLocked(s, "queue")
	}
	hd.Writes++
	return forcible, nil
}

// putValueLocked writes v's bytes into an entry whose VLen is already set.
func (s *shard) putValueLocked(off uint32, e *entry, v Value) {
	switch v.kind {
	case KindInt, KindFloat:
		*s.num(off, e) = v.num
	case KindBool:
		s.valueOf(off, e)[0] = byte(v.num)
	case KindBytes:
		copy(s.valueOf(off, e), v.b)
	case KindList:
		*s.listOf(off, e) = listHdr{}
	}
}

// Delete removes key. Deleting an absent key is not an error.
func (d *Dict) Delete(key string) (err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	s, _, off, err := d.lookup(key, true)
	if err != nil {
		return err
	}
	defer d.unlock(s)
	if off == 0 {
		return nil
	}
	if err := s.removeLocked(off); err != nil {
		return d.corruptLocked(s, "remove")
	}
	s.hdr().Writes++
	return nil
}

// Incr adds delta to the number under key and returns the sum; the TTL and
// the flags stay. An int wraps around on overflow; a float adds delta as a
// float and returns the sum truncated. Errors: ErrNotFound for an absent or
// expired key, ErrNotNumber for bytes, a bool or a list.
func (d *Dict) Incr(key string, delta int64) (_ int64, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, true); err != nil {
		return 0, err
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	if err := d.lock(s); err != nil {
		return 0, err
	}
	n, _, found, err := d.incrLocked(s, key, h, delta, float64(delta), false)
	d.unlock(s)
	if err == nil && !found {
		err = ErrNotFound
	}
	return n, err
}

// IncrFloat adds delta to the number under key and returns the sum as a
// float64; an int becomes a float. Errors as Incr.
func (d *Dict) IncrFloat(key string, delta float64) (_ float64, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, true); err != nil {
		return 0, err
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	if err := d.lock(s); err != nil {
		return 0, err
	}
	_, f, found, err := d.incrLocked(s, key, h, 0, delta, true)
	d.unlock(s)
	if err == nil && !found {
		err = ErrNotFound
	}
	return f, err
}

// IncrInit adds delta to the number under key, or creates the key as
// init+delta with initTTL (0 = never) and flags 0 when it is absent or
// expired; init and initTTL are ignored for a live key. forcible reports
// evictions made to create it.
func (d *Dict) IncrInit(key string, delta, init int64, initTTL time.Duration) (n int64, forcible bool, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, true); err != nil {
		return 0, false, err
	}
	if initTTL < 0 {
		return 0, false, ErrBadTTL
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	if err := d.lock(s); err != nil {
		return 0, false, err
	}
	n, _, found, err := d.incrLocked(s, key, h, delta, float64(delta), false)
	if err == nil && !found {
		var expiry int64
		if expiry, err = d.expiryFor(initTTL); err == nil {
			forcible, err = d.findStoreLocked(s, key, h, Int(init+delta), expiry, 0, modeSet, true, false)
			if err == nil {
				n = init + delta
			}
		}
		d.unlock(s)
		return n, forcible, err
	}
	d.unlock(s)
	return n, false, err
}

// incrLocked adds to a live number and returns the sum as an int and as a
// float; found is false for an absent or expired key. An int adds idelta, or
// becomes a float plus fdelta when asFloat; a float adds fdelta.
func (d *Dict) incrLocked(s *shard, key string, h uint64, idelta int64, fdelta float64, asFloat bool) (int64, float64, bool, error) {
	off, _, err := s.findLocked(key, h)
	if err != nil {
		return 0, 0, false, d.corruptLocked(s, "index")
	}
	hd := s.hdr()
	if off == 0 {
		hd.Misses++
		return 0, 0, false, nil
	}
	e := s.entryAt(off)
	if expired(e, d.clock) {
		hd.Misses++
		return 0, 0, false, nil
	}
	if e.kind() != KindInt && e.kind() != KindFloat {
		return 0, 0, true, ErrNotNumber
	}
	if e.VLen != 8 || !s.okBody(off, e) {
		return 0, 0, false, d.corruptLocked(s, "number length")
	}
	p := s.num(off, e)
	var n int64
	var f float64
	switch {
	case e.kind() == KindInt && !asFloat:
		n = int64(*p) + idelta
		f = float64(n)
		*p = uint64(n) // one aligned store: whole even if the process dies here
	case e.kind() == KindInt:
		f = float64(int64(*p)) + fdelta
		n = int64(f)
		hd.Drop = off // two words change
		*p = math.Float64bits(f)
		e.Bits = uint8(KindFloat) | refBit
		hd.Drop = dropNone
	default:
		f = math.Float64frombits(*p) + fdelta
		n = int64(f)
		*p = math.Float64bits(f)
	}
	e.use()
	hd.Hits++
	hd.Writes++
	return n, f, true, nil
}

package dict

import (
	"math"
	"sync/atomic"
	"time"
)

// Entry writes: an operation on a live entry that leaves it the size it
// is takes the entry's page lock (pin), not the shard's, so that processes
// writing their own keys share no cache line (DESIGN.md, section 6).
// Whatever needs more — a key to create, an entry to resize or remove, one
// expired or left half written — falls back to the shard's lock.

// pinLive pins key's entry for an entry write when it is live and sound:
// ok reports that the caller holds pw, the entry's page lock, and must
// release it (unpin). Otherwise the key is absent, expired or left
// half written, or the shard kept changing: the caller takes the shard's
// lock, under which the operation is decided again.
func (d *Dict) pinLive(s *shard, key string, h uint64) (off uint32, e *entry, pw *uint64, ok bool) {
	off, seq, ok := s.findOptimistic(key, h)
	if ok && off != 0 {
		pw = s.pinFirst(off, seq)
	}
	if pw == nil {
		var found bool
		if off, pw, found, ok = s.pinRetry(key, h, off, seq, ok); !ok || !found {
			return 0, nil, nil, false
		}
	}
	e = s.entryAt(off)
	w := e.ver()
	if x := expiryOf(w); writing(w) || (x != 0 && d.Now() >= x) || !s.okBytes(off, e) {
		s.unpin(off, pw)
		return 0, nil, nil, false
	}
	return off, e, pw, true
}

// sameShape reports whether v can take the place of e's value at entry
// level: neither is a list, and v is stored in as many bytes, so that the
// entry's chunk, size and links stay as they are.
func sameShape(e *entry, v *Value) bool {
	k := e.kind()
	return k != KindList && k != KindNone && v.kind != KindList && v.kind != KindNone && storedSize(v.kind, len(v.b)) == e.vlen()
}

// rewriteInPage writes p.v, of e's shape (sameShape), into the live entry
// at off, with p.expiry, and p.flags unless p.keepFlags. The caller holds
// the entry's page lock. A number that keeps its kind, expiry and flags is
// one aligned store, whole even if the process dies there, as incr's.
// Otherwise Ver is odd while the words change: a reader that overlaps
// retries, and a process killed in between leaves the entry for repair to
// drop (I6).
func (s *shard) rewriteInPage(off uint32, e *entry, p *put) {
	v, expiry, flags, keepFlags := &p.v, p.expiry, p.flags, p.keepFlags
	if (v.kind == KindInt || v.kind == KindFloat) && e.kind() == v.kind &&
		expiryOf(e.ver()) == expiry && (keepFlags || e.flags() == flags) {
		atomic.StoreUint64(s.num(off, e), v.num)
		e.use()
		return
	}
	w := e.beginWrite()
	if !keepFlags && e.flags() != flags {
		atomic.StoreUint32(&e.Flags, flags)
	}
	if e.kind() != v.kind {
		e.setKindUsed(v.kind)
	}
	s.putValue(off, e, *v)
	e.endWrite(w, expiry)
	e.use()
}

// setInPage is store's entry write: a Set or Replace of a live key with a
// value of its shape, or an Add that finds the key live. done false: the
// shard's lock decides. It calls no user code, so it unlocks where it
// returns, with no deferred call.
func (d *Dict) setInPage(s *shard, key string, h uint64, p *put) (done bool, err error) {
	off, e, pw, ok := d.pinLive(s, key, h)
	if !ok {
		return false, nil
	}
	switch {
	case p.mode == modeAdd:
		s.unpin(off, pw)
		return true, ErrExists
	case !sameShape(e, &p.v):
		s.unpin(off, pw)
		return false, nil
	}
	s.rewriteInPage(off, e, p)
	d.unlockCounted(s, key, h, off, pw)
	return true, nil
}

// expireInPage is Expire's entry write. done false: the shard's lock
// decides.
func (d *Dict) expireInPage(s *shard, key string, h uint64, expiry int64) (done bool) {
	off, e, pw, ok := d.pinLive(s, key, h)
	if !ok {
		return false
	}
	e.endWrite(e.beginWrite(), expiry)
	d.unlockCounted(s, key, h, off, pw)
	return true
}

// casInPage is CompareAndSwap's entry write: a live key that does not hold
// old, or one whose value p.v can replace in place. done false: the
// shard's lock decides. It calls no user code, so it unlocks where it
// returns, as setInPage.
func (d *Dict) casInPage(s *shard, key string, h uint64, old Value, p *put) (done, swapped bool, err error) {
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
	case !sameShape(e, &p.v):
		s.unpin(off, pw)
		return false, false, nil
	}
	s.rewriteInPage(off, e, p)
	d.unlockCounted(s, key, h, off, pw)
	return true, true, nil
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
	s.rewriteInPage(off, e, &put{v: next, expiry: expiry, keepFlags: true})
	n, slow = s.entryCounted(off, tWrites)
	return n, slow, true, nil
}

// unlockCounted counts an entry write on the entry at off and releases its
// page's lock pw, then does what the count asks (flushPageCounts).
func (d *Dict) unlockCounted(s *shard, key string, h uint64, off uint32, pw *uint64) {
	n, slow := s.entryCounted(off, tWrites)
	s.unpin(off, pw)
	if slow {
		d.flushPageCounts(s, key, h, off, n)
	}
}

// current returns the value of a live entry that passed okBytes and is not
// a list, for Update's fn: a bytes value aliases the zone, capped.
func (s *shard) current(off uint32, e *entry) Value {
	switch k := e.kind(); k {
	case KindInt, KindFloat:
		v := Value{kind: k, num: math.Float64bits(0)}
		if e.VLen == 8 {
			v.num = *s.num(off, e)
		}
		return v
	case KindBool:
		return Bool(e.VLen == 1 && s.valueOf(off, e)[0] != 0)
	}
	return Value{kind: KindBytes, b: capped(s.valueOf(off, e))}
}

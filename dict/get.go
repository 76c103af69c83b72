package dict

import (
	"runtime"

	"github.com/shmzone/shmzone/shm"
)

// Get returns the value and flags under key. It marks the entry used, so
// that eviction passes it over once. A bytes value is the caller's own copy.
//
// Get returns ErrNotFound if key is absent or expired, and ErrIsList for a
// list.
func (d *Dict) Get(key string) (Value, uint32, error) {
	var r readResult
	err := d.get(key, nil, &r)
	return r.v, r.flags, err
}

// GetInto is Get that appends a bytes value to dst[:0] and returns it in
// the Value. With room in dst it allocates nothing. dst may be reused once
// the Value is no longer needed.
func (d *Dict) GetInto(key string, dst []byte) (Value, uint32, error) {
	var r readResult
	err := d.get(key, dst[:0], &r)
	return r.v, r.flags, err
}

// GetStale is Get that also returns an expired value, with stale true,
// until its memory is reclaimed. After that it returns ErrNotFound.
func (d *Dict) GetStale(key string) (v Value, flags uint32, stale bool, err error) {
	r := readResult{allowStale: true}
	err = d.get(key, nil, &r)
	return r.v, r.flags, r.stale, err
}

func (d *Dict) get(key string, dst []byte, r *readResult) error {
	if d.guard {
		r.dst = dst
		return d.guardedGet(key, r)
	}
	if err := d.check(key, false); err != nil {
		return err
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	// The first try, outside lockGet's loop: the common case makes one
	// call less.
	need, ok, err := d.getOptimistic(s, key, h, dst, r)
	if !ok {
		runtime.Gosched()
		r.dst = dst
		return d.lockGet(s, key, h, r, 1)
	}
	if need < 0 {
		return err
	}
	r.dst = make([]byte, 0, need)
	return d.lockGet(s, key, h, r, 0)
}

// guardedGet is get with Options.GuardFaults (as guardedIncr).
func (d *Dict) guardedGet(key string, r *readResult) (err error) {
	defer d.catchFault(&err, shm.GuardFaults())
	if err := d.check(key, false); err != nil {
		return err
	}
	h := hashKey(d.seed, key)
	return d.lockGet(d.shardFor(h), key, h, r, 0)
}

// lockGet is get after try optimistic tries: the rest of them, then the
// shard's lock.
func (d *Dict) lockGet(s *shard, key string, h uint64, r *readResult, try int) error {
	for try < tries {
		need, ok, err := d.getOptimistic(s, key, h, r.dst, r)
		switch {
		case !ok:
			try++
			runtime.Gosched()
		case need >= 0:
			r.dst = make([]byte, 0, need)
		default:
			return err
		}
	}
	for {
		if err := d.lock(s); err != nil {
			return err
		}
		need, err := d.getInShard(s, key, h, r)
		d.unlock(s)
		if need < 0 {
			return err
		}
		// The bytes do not fit dst: grow it outside the lock and look again.
		r.dst = make([]byte, 0, need)
	}
}

// readResult is what a get asks for and what it found.
type readResult struct {
	dst        []byte // where a bytes value goes; nil for a new slice
	allowStale bool   // return an expired value not yet reclaimed
	v          Value
	flags      uint32
	stale      bool // v has expired
}

// getInShard reads key's entry into r; need >= 0 asks the caller for a dst of
// that capacity and a second call.
func (d *Dict) getInShard(s *shard, key string, h uint64, r *readResult) (need int, err error) {
	off, err := s.findInShard(key, h)
	if err != nil {
		return -1, d.corruptInShard(s, "index")
	}
	if off == 0 {
		d.tally(s, tMisses)
		return -1, ErrNotFound
	}
	if !d.readOnly {
		if off, err = d.drainInShard(s, off); err != nil {
			return -1, err
		}
		if off == 0 {
			d.tally(s, tMisses)
			return -1, ErrNotFound
		}
	}
	e := s.entryAt(off)
	stale := false
	if expired(e, d.clock) {
		if !r.allowStale {
			d.tally(s, tMisses)
			return -1, ErrNotFound
		}
		stale = true
	}
	if !s.okBytes(off, e) {
		return -1, d.corruptInShard(s, "entry")
	}
	if e.kind() == KindList {
		return -1, ErrIsList
	}
	v, ok := s.entryValue(off, e)
	if !ok {
		return -1, d.corruptInShard(s, "value")
	}
	if v.kind == KindBytes {
		n := len(v.b)
		if n > cap(r.dst) || r.dst == nil {
			return n, nil
		}
		dst := r.dst[:n:n]
		copy(dst, v.b)
		v.b = dst
	}
	r.v = v
	r.flags, r.stale = e.flags(), stale
	if !d.readOnly {
		e.use()
	}
	d.tally(s, tHits)
	return -1, nil
}

// getOptimistic is getInShard without a lock: it finds the entry with
// findOptimistic and copies what it needs, reading every word atomically,
// then validates the entry's Ver and the shard's Seq; ok false means
// something changed under it (or it read what a change in progress
// leaves) and nothing it read counts. need >= 0 asks for a dst of that
// capacity.
func (d *Dict) getOptimistic(s *shard, key string, h uint64, dst []byte, r *readResult) (need int, ok bool, err error) {
	off, seq, ok := s.findOptimistic(key, h)
	if !ok {
		return -1, false, nil
	}
	if off == 0 {
		d.tally(s, tMisses)
		return -1, true, ErrNotFound
	}
	e := s.entryAt(off)
	w := e.ver()
	if writing(w) {
		return -1, false, nil
	}
	stale := false
	if x := expiryOf(w); x != 0 && d.Now() >= x {
		if !r.allowStale {
			if e.ver() != w || s.seq() != seq {
				return -1, false, nil
			}
			d.tally(s, tMisses)
			return -1, true, ErrNotFound
		}
		stale = true
	}
	bits, vlen, flags := e.bits(), e.vlen(), e.flags()
	vo := int(off) + valOff(len(key))
	if vo+vlen > len(s.arena) {
		return -1, false, nil
	}
	// The value is kept in scalars and stored into r field by field: a
	// Value built here and copied whole is stored in parts and loaded in
	// wider words, a load the CPU cannot forward from the stores
	// (DESIGN.md, section 4).
	kind := Kind(bits & kindMask)
	var (
		num uint64
		b   []byte
	)
	switch kind {
	case KindBytes:
		if vlen > cap(dst) || dst == nil {
			return vlen, true, nil
		}
		b = loadBytes(dst, s.arena, vo, vlen)
	case KindList:
		err = ErrIsList
	default:
		var ok bool
		if num, ok = s.scalarAt(kind, vo, vlen); !ok {
			return -1, false, nil
		}
	}
	if e.ver() != w || s.seq() != seq {
		return -1, false, nil
	}
	if err != nil {
		return -1, true, err
	}
	if bits&refBit == 0 && !d.readOnly {
		s.markUsed(off, seq)
	}
	r.v.kind, r.v.num, r.v.b = kind, num, b
	r.flags, r.stale = flags, stale
	if n, slow := s.counted(tHits); slow {
		d.flushTallyCount(s, tHits, n)
	}
	return -1, true, nil
}

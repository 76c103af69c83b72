package dict

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/shm"
)

// IncrInitNum is IncrInit that returns the result as it is stored, a
// float64. An int's result is exact below 2^53. A float's keeps its
// fraction, which IncrInit truncates. out says what creating the key did.
//
// A float result that does not fit in an int64 is stored and returned.
// IncrInit refuses it. Otherwise IncrInitNum returns the errors of
// IncrInit.
func (d *Dict) IncrInitNum(key string, delta, init int64, initTTL time.Duration) (sum float64, out Outcome, err error) {
	if d.guard {
		return d.guardedIncrInitNum(key, delta, init, initTTL)
	}
	_, sum, out, err = d.incrInit(key, hashKey(d.seed, key), init, initTTL, incrOp{i: delta, f: float64(delta), mode: incrNum})
	return sum, out, err
}

// guardedIncrInitNum is IncrInitNum with Options.GuardFaults (as
// guardedIncr).
func (d *Dict) guardedIncrInitNum(key string, delta, init int64, initTTL time.Duration) (sum float64, out Outcome, err error) {
	defer d.catchFault(&err, shm.GuardFaults())
	_, sum, out, err = d.incrInit(key, hashKey(d.seed, key), init, initTTL, incrOp{i: delta, f: float64(delta), mode: incrNum})
	return sum, out, err
}

// Incr adds delta to the number stored under key and returns the result.
// It keeps the key's TTL and flags.
//
// Integers wrap on overflow. Floats are added as floats and the result is
// truncated toward zero. If that result does not fit in an int64, Incr
// leaves the value unchanged and returns an error wrapping ErrNotNumber.
//
// Incr returns ErrNotFound if key is absent or expired, and ErrNotNumber if
// the value is not a number.
func (d *Dict) Incr(key string, delta int64) (int64, error) {
	if d.guard {
		return d.guardedIncr(key, delta)
	}
	n, _, found, err := d.incr(key, hashKey(d.seed, key), incrOp{i: delta, f: float64(delta)})
	if err == nil && !found {
		err = ErrNotFound
	}
	return n, err
}

// guardedIncr is Incr with Options.GuardFaults: a separate function, so
// that Incr itself sets up no deferred call (about a nanosecond).
func (d *Dict) guardedIncr(key string, delta int64) (_ int64, err error) {
	defer d.catchFault(&err, shm.GuardFaults())
	n, _, found, err := d.incr(key, hashKey(d.seed, key), incrOp{i: delta, f: float64(delta)})
	if err == nil && !found {
		err = ErrNotFound
	}
	return n, err
}

// IncrFloat adds delta to the number stored under key and returns the
// result as a float64. An int becomes a float. IncrFloat returns the errors
// of Incr.
func (d *Dict) IncrFloat(key string, delta float64) (_ float64, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	_, f, found, err := d.incr(key, hashKey(d.seed, key), incrOp{f: delta, mode: incrToFloat})
	if err == nil && !found {
		err = ErrNotFound
	}
	return f, err
}

// IncrInit adds delta to the number stored under key and returns the
// result. If key is absent or expired, IncrInit creates it as init+delta,
// with TTL initTTL and flags 0. init and initTTL are ignored for a live key.
//
// forcible reports that creating the key evicted live entries. A live number
// adds as with Incr, with the same errors.
func (d *Dict) IncrInit(key string, delta, init int64, initTTL time.Duration) (n int64, forcible bool, err error) {
	if d.guard {
		return d.guardedIncrInit(key, delta, init, initTTL)
	}
	n, _, out, err := d.incrInit(key, hashKey(d.seed, key), init, initTTL, incrOp{i: delta, f: float64(delta), mode: incrToInt})
	return n, out.Forcible, err
}

// guardedIncrInit is IncrInit with Options.GuardFaults (as guardedIncr).
func (d *Dict) guardedIncrInit(key string, delta, init int64, initTTL time.Duration) (n int64, forcible bool, err error) {
	defer d.catchFault(&err, shm.GuardFaults())
	n, _, out, err := d.incrInit(key, hashKey(d.seed, key), init, initTTL, incrOp{i: delta, f: float64(delta), mode: incrToInt})
	return n, out.Forcible, err
}

// incrInit is IncrInit (op.mode incrToInt) and IncrInitNum (incrNum): the
// sum as an int and as a float. op says what to add and how. A live key's
// increment is incr's; creating it, createInit's. h is key's hash.
func (d *Dict) incrInit(key string, h uint64, init int64, initTTL time.Duration, op incrOp) (int64, float64, Outcome, error) {
	if initTTL < 0 {
		return 0, 0, Outcome{}, ErrBadTTL
	}
	n, f, found, err := d.incr(key, h, op)
	if err != nil || found {
		return n, f, Outcome{}, err
	}
	return d.createInit(key, h, init, initTTL, op)
}

// createInit is incrInit of a key incr found absent or expired, under the
// shard's lock (a function of its own, so that incrInit has no deferred
// call to pay for when the key is live).
func (d *Dict) createInit(key string, h uint64, init int64, initTTL time.Duration, op incrOp) (n int64, f float64, out Outcome, err error) {
	s := d.shardFor(h)
	if err := d.lock(s); err != nil {
		return 0, 0, out, err
	}
	defer d.unlock(s)
	// Another process may have created it since: add to it then.
	off, err := d.findDrainedInShard(s, key, h)
	if err != nil {
		return 0, 0, out, err
	}
	n, f, found, err := d.incrAtInShard(s, off, op)
	if err != nil || found {
		return n, f, out, err
	}
	expiry, err := d.expiryFor(initTTL)
	if err != nil {
		return 0, 0, out, err
	}
	_, out, err = d.storeInShard(s, key, h, off, put{v: Int(init + op.i), expiry: expiry, evict: true})
	if err != nil {
		return 0, 0, out, err
	}
	if op.exp != nil {
		*op.exp = expiry
	}
	return init + op.i, float64(init + op.i), out, nil
}

// incr adds to key's live number (incrEntry): under the entry's page lock
// alone when it can pin it, otherwise under the shard's lock. found is false
// for an absent or expired key. The common case, an int's increment, adds
// here when plainInt finds nothing else to check or write; anything else
// on a pinned entry is incrInPage's. h is key's hash.
func (d *Dict) incr(key string, h uint64, op incrOp) (int64, float64, bool, error) {
	if err := d.check(key, true); err != nil {
		return 0, 0, false, err
	}
	s := d.shardFor(h)
	off, seq, ok := s.findOptimistic(key, h)
	if ok && off != 0 {
		if pw := s.pinFirst(off, seq); pw != nil {
			if p := d.plainInt(s, off, len(key), op.mode); p != nil {
				n := int64(atomic.LoadUint64(p)) + op.i
				atomic.StoreUint64(p, uint64(n)) // one aligned store: whole even if the process dies here
				if op.exp != nil {
					*op.exp = expiryOf(s.entryAt(off).ver())
				}
				c, slow := s.entryCounted(off, tIncrs)
				s.unpin(off, pw)
				if slow {
					d.flushPageCounts(s, key, h, off, c)
				}
				return n, float64(n), true, nil
			}
			return d.incrInPage(place{s, key, h}, off, pw, op)
		}
	}
	return d.incrRetry(place{s, key, h}, off, seq, ok, op)
}

// incrRetry is incr after its first try to pin key's entry failed (see
// pinRetry).
func (d *Dict) incrRetry(k place, off uint32, seq uint64, ok bool, op incrOp) (int64, float64, bool, error) {
	off, pw, found, ok := k.s.pinRetry(k.key, k.h, off, seq, ok)
	if ok && !found {
		d.tally(k.s, tMisses)
		return 0, 0, false, nil
	}
	if ok {
		return d.incrInPage(k, off, pw, op)
	}
	return d.lockIncr(k, op)
}

// plainInt returns the number of the entry at off, whose page lock the
// caller holds, when incr may add to it with nothing else to check or
// write: a whole, live int whose ref bit is already set, in the queue's
// protected segment or not, to which an int is added (mode is not
// incrToFloat).
// Otherwise nil: incrEntry decides. klen is the length of the key that
// found the entry, its KLen, which does not change while it is linked: the
// number's address needs no load of the entry.
func (d *Dict) plainInt(s *shard, off uint32, klen int, mode incrMode) *uint64 {
	if mode == incrToFloat {
		return nil
	}
	e := s.entryAt(off)
	w := e.ver()
	if writing(w) {
		return nil
	}
	if x := expiryOf(w); x != 0 && d.Now() >= x {
		return nil
	}
	b := atomic.LoadUint32(e.bitsWord())
	if uint8(b>>bitsShift)&(kindMask|refBit) != uint8(KindInt)|refBit || e.vlen() != 8 {
		return nil
	}
	v := int(off) + valOff(klen)
	if v+8 > len(s.arena) {
		return nil
	}
	return s.numAt(v)
}

// incrInPage is incr on the entry at off, key's, whose page lock pw it
// holds and releases: incrEntry, or the shard's lock for an entry that
// incrEntry finds broken.
func (d *Dict) incrInPage(k place, off uint32, pw *uint64, op incrOp) (int64, float64, bool, error) {
	s := k.s
	n, f, res := d.incrEntry(s, off, op)
	var c uint32
	slow := false
	if res == incrDone {
		c, slow = s.entryCounted(off, tIncrs)
	}
	s.unpin(off, pw)
	if slow {
		d.flushPageCounts(s, k.key, k.h, off, c)
	}
	if res == incrBroken {
		return d.lockIncr(k, op) // the shard's lock repairs it
	}
	return d.incrReturn(s, n, f, res)
}

// incrReturn is what an increment returns when incrEntry ended in res,
// which is not incrBroken: the sum, whether the key was found, and the
// error. It counts a miss.
func (d *Dict) incrReturn(s *shard, n int64, f float64, res incrResult) (int64, float64, bool, error) {
	switch res {
	case incrMiss:
		d.tally(s, tMisses)
		return 0, 0, false, nil
	case incrNotNumber:
		return 0, 0, true, ErrNotNumber
	case incrBeyondInt:
		return 0, 0, true, errBeyondInt(f)
	}
	return n, f, true, nil
}

// lockIncr is incr under the shard's lock (a function of its own, as
// lockMutate).
func (d *Dict) lockIncr(k place, op incrOp) (int64, float64, bool, error) {
	if err := d.lock(k.s); err != nil {
		return 0, 0, false, err
	}
	defer d.unlock(k.s)
	return d.incrInShard(k, op)
}

// incrInShard is incr under the shard's lock.
func (d *Dict) incrInShard(k place, op incrOp) (int64, float64, bool, error) {
	off, err := d.findDrainedInShard(k.s, k.key, k.h)
	if err != nil {
		return 0, 0, false, err
	}
	return d.incrAtInShard(k.s, off, op)
}

// incrAtInShard is incrInShard of the entry at off, 0 when absent, as
// findDrainedInShard found it under this hold of the lock.
func (d *Dict) incrAtInShard(s *shard, off uint32, op incrOp) (int64, float64, bool, error) {
	if off == 0 {
		d.tally(s, tMisses)
		return 0, 0, false, nil
	}
	n, f, res := d.incrEntry(s, off, op)
	switch res {
	case incrBroken:
		return 0, 0, false, d.corruptInShard(s, "number")
	case incrDone:
		d.tally(s, tIncrs)
	}
	return d.incrReturn(s, n, f, res)
}

// What incrEntry did.
type incrResult uint8

// An incrOp is what an increment adds, and how.
type incrOp struct {
	i    int64   // added to an int
	f    float64 // added to a float
	mode incrMode
	exp  *int64 // when not nil, a done increment stores the entry's expiry here
}

// A place is where a key lives: the key, its hash and its shard.
type place struct {
	s   *shard
	key string
	h   uint64
}

// How incrEntry adds, and which sum its caller returns.
type incrMode uint8

// incrEntry adds to the number of the entry at off, which is key's: the
// caller holds the entry's page lock, or the shard's lock and has drained the
// page. An int adds idelta, or becomes a float plus fdelta in incrToFloat
// mode; a float adds fdelta. It returns the sum as an int and as a float.
// In incrToInt mode a float sum that no int64 holds (fitsInt) is not
// stored: incrBeyondInt, with the sum as a float. The caller counts a
// done increment: under the page lock with entryCounted, under the
// shard's with tally.
func (d *Dict) incrEntry(s *shard, off uint32, op incrOp) (int64, float64, incrResult) {
	idelta, fdelta, mode := op.i, op.f, op.mode
	e := s.entryAt(off)
	w := e.ver()
	if writing(w) {
		return 0, 0, incrBroken // its writer died mid-write
	}
	if x := expiryOf(w); x != 0 && d.Now() >= x {
		return 0, 0, incrMiss
	}
	kind := e.kind()
	if kind != KindInt && kind != KindFloat {
		return 0, 0, incrNotNumber
	}
	if e.vlen() != 8 || !s.okBytes(off, e) {
		return 0, 0, incrBroken
	}
	p := s.num(off, e)
	var n int64
	var f float64
	switch {
	case kind == KindInt && mode != incrToFloat:
		n = int64(atomic.LoadUint64(p)) + idelta
		f = float64(n)
		atomic.StoreUint64(p, uint64(n)) // one aligned store: whole even if the process dies here
	case kind == KindInt:
		f = float64(int64(atomic.LoadUint64(p))) + fdelta
		n = int64(f)
		bw := e.beginWrite() // two words change: a death between them leaves Ver odd
		atomic.StoreUint64(p, math.Float64bits(f))
		e.setKindUsed(KindFloat)
		e.endWrite(bw, expiryOf(w))
	default:
		f = math.Float64frombits(atomic.LoadUint64(p)) + fdelta
		if mode == incrToInt && !fitsInt(f) {
			return 0, f, incrBeyondInt
		}
		n = int64(f)
		atomic.StoreUint64(p, math.Float64bits(f))
	}
	e.use()
	if op.exp != nil {
		*op.exp = expiryOf(w)
	}
	return n, f, incrDone
}

const (
	incrDone      incrResult = iota
	incrMiss                 // the entry has expired
	incrNotNumber            // the entry holds bytes, a bool or a list
	incrBeyondInt            // a float whose sum no int64 holds, for incrToInt: nothing written
	incrBroken               // a half-written or malformed entry, for the shard's lock to repair
)

const (
	// incrToInt is Incr's and IncrInit's: an int stays an int, a float
	// adds as a float, and the sum is returned as an int64, so a float sum
	// that no int64 holds is refused (incrBeyondInt).
	incrToInt incrMode = iota
	// incrNum is IncrInitNum's: as incrToInt, but the sum is returned as a
	// float64, so any float sum is stored.
	incrNum
	// incrToFloat is IncrFloat's: an int becomes a float.
	incrToFloat
)

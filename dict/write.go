package dict

import (
	"math"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shmzone/shmzone/shm"
)

// How storeInShard treats an existing key.
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
	return d.store(key, ttl, put{v: v, flags: flags, mode: modeSet, evict: true})
}

// SafeSet is Set without eviction: ErrNoMemory when the value does not fit in
// free or expired memory.
func (d *Dict) SafeSet(key string, v Value, ttl time.Duration, flags uint32) error {
	_, err := d.store(key, ttl, put{v: v, flags: flags, mode: modeSet})
	return err
}

// Add is Set for an absent key only: ErrExists when key holds a live value or
// a list. An expired key counts as absent.
func (d *Dict) Add(key string, v Value, ttl time.Duration, flags uint32) (forcible bool, err error) {
	return d.store(key, ttl, put{v: v, flags: flags, mode: modeAdd, evict: true})
}

// SafeAdd is Add without eviction.
func (d *Dict) SafeAdd(key string, v Value, ttl time.Duration, flags uint32) error {
	_, err := d.store(key, ttl, put{v: v, flags: flags, mode: modeAdd})
	return err
}

// Replace is Set for a live key only: ErrNotFound when key is absent or
// expired. The kind may change.
func (d *Dict) Replace(key string, v Value, ttl time.Duration, flags uint32) (forcible bool, err error) {
	return d.store(key, ttl, put{v: v, flags: flags, mode: modeReplace, evict: true})
}

// store checks key, p.v and ttl, then writes p under key: in place under
// the entry's page lock when the key is live and p.v fits its entry,
// otherwise under the shard's lock.
func (d *Dict) store(key string, ttl time.Duration, p put) (bool, error) {
	if err := d.check(key, true); err != nil {
		return false, err
	}
	expiry, err := d.checkValue(key, &p.v, ttl)
	if err != nil {
		return false, err
	}
	p.expiry = expiry
	if d.guard {
		return d.guardedWrite(key, &p)
	}
	return d.write(key, &p)
}

// guardedWrite is write with Options.GuardFaults (as guardedIncr).
func (d *Dict) guardedWrite(key string, p *put) (_ bool, err error) {
	defer d.catchFault(&err, shm.GuardFaults())
	return d.write(key, p)
}

// write is store's work once p is checked.
func (d *Dict) write(key string, p *put) (bool, error) {
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	if done, err := d.setInPage(s, key, h, p); done {
		return false, err
	}
	return d.lockStore(s, key, h, p)
}

// lockStore is store's write under the shard's lock: a new key, a
// value of another size, or an entry that its pinned write could not take.
func (d *Dict) lockStore(s *shard, key string, h uint64, p *put) (bool, error) {
	if err := d.lock(s); err != nil {
		return false, err
	}
	out, err := d.findStoreInShard(s, key, h, *p)
	d.unlock(s)
	return out.Forcible, err
}

// findStoreInShard finds key's entry and writes p under it (storeInShard).
func (d *Dict) findStoreInShard(s *shard, key string, h uint64, p put) (Outcome, error) {
	off, _, err := s.findInShard(key, h)
	if err != nil {
		return Outcome{}, d.corruptInShard(s, "index")
	}
	return d.storeInShard(s, key, h, off, p)
}

// put is what storeInShard writes and how.
type put struct {
	v         Value
	expiry    int64  // Unix ms, 0 = never
	flags     uint32 // the user flags, unless keepFlags
	mode      mode   // what an existing key allows (modeSet, modeAdd, modeReplace)
	evict     bool   // evict live entries when the shard is full (Set), or fail (SafeSet)
	keepFlags bool   // keep a live entry's flags (CompareAndSwap, Update); a new entry gets 0
}

// storeInShard writes p.v under key, whose entry is at off (0 when absent) as
// findInShard found it under this hold of the lock.
func (d *Dict) storeInShard(s *shard, key string, h uint64, off uint32, p put) (out Outcome, err error) {
	v, expiry, flags, m, evict, keepFlags := p.v, p.expiry, p.flags, p.mode, p.evict, p.keepFlags
	if off != 0 {
		// Writers already in the entry's page finish before it changes;
		// one that died there lost it.
		if err := s.drainPage(off); err != nil {
			return out, d.failInShard(s, err, "page")
		}
		if gone, err := d.settleInShard(s, off); err != nil {
			return out, err
		} else if gone {
			off = 0
		}
	}
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
		return out, ErrExists
	case m == modeReplace && !live:
		return out, ErrNotFound
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
			if err := s.freeNodesInShard(off, e); err != nil {
				return out, d.corruptInShard(s, "list")
			}
		}
		e.Flags, e.VLen = flags, uint32(vlen)
		e.setExpiry(expiry)
		e.setKindUsed(v.kind)
		s.putValue(off, e, v)
		hd.Drop = dropNone
		e.use()
		d.tally(s, tWrites)
		return out, nil
	}
	fresh := off == 0 // the key had no entry: it may have lost one to eviction, and left a trace
	prot := uint8(0)
	if !live && off != 0 {
		// An expired entry of another size: free it first so that its
		// memory serves the new value before any live entry is evicted.
		prot = e.bits() & protBit
		if err := s.removeInShard(off); err != nil {
			return out, d.failInShard(s, err, "remove")
		}
		off = 0
	}
	recalled := false
	if fresh {
		recalled, out.Lost = s.recallInShard(h, d.clock)
	}
	noff, forcible, err := s.allocInShard(need, evict, off, d.clock)
	out.Forcible = forcible
	if err != nil {
		hd.Drop = dropNone
		if err == errCorruptArena {
			return out, d.corruptInShard(s, "alloc")
		}
		return out, err
	}
	hd.Drop = noff // half written: drop it
	ne := s.entryAt(noff)
	bits := uint8(v.kind) // a new key starts unreferenced, in probation
	if live {
		bits |= refBit // a rewritten one was just used
	}
	if off != 0 {
		bits |= e.bits() & protBit // and keeps its segment
	}
	bits |= prot
	*ne = entry{Flags: flags, Ver: uint64(expiry), VLen: uint32(vlen), KLen: uint16(len(key)), Tag: tagOf(h), Bits: bits}
	copy(s.keyOf(noff, ne), key)
	s.putValue(noff, ne, v)
	if off == 0 {
		slot := &s.index[s.bucket(h)]
		ne.Next = *slot
		*slot = noff // the commit point
		hd.Drop = dropNone
		hd.Count++
	} else {
		// Replace the old entry in its chain; eviction may have changed the
		// chain since findInShard, so walk it again.
		p := &s.index[s.bucket(h)]
		for n := 0; *p != off; n++ {
			if *p == 0 || !s.okEntry(*p) || n > s.maxSteps() {
				return out, d.corruptInShard(s, "chain")
			}
			p = &s.entryAt(*p).Next
		}
		ne.Next = e.Next
		*p = noff // the commit point: from here repair keeps the new entry
		hd.Drop = off
		if !s.unqueueInShard(off, e) {
			return out, d.corruptInShard(s, "queue")
		}
		if err := s.freeEntryInShard(off, e); err != nil {
			return out, d.corruptInShard(s, "free")
		}
		hd.Drop = dropNone
	}
	if recalled {
		// A key evicted while in use is back: it joins the protected
		// segment, unreferenced, where it is demoted first.
		if s.recalls != nil {
			// A copy: key itself must not escape (allocation-free writes).
			*s.recalls = append(*s.recalls, recall{strings.Clone(key), hd.Count})
		}
		if !s.enqueueRecalledInShard(noff, ne) {
			return out, d.corruptInShard(s, "queue")
		}
		if err := s.balanceInShard(0); err != nil {
			return out, d.corruptInShard(s, "queue")
		}
	} else if !s.enqueueInShard(noff, ne) {
		return out, d.corruptInShard(s, "queue")
	}
	d.tally(s, tWrites)
	return out, nil
}

// putValue writes v's bytes into an entry whose VLen is already set; the
// caller holds the entry's page lock, or the shard's after draining it.
func (s *shard) putValue(off uint32, e *entry, v Value) {
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
	s, h, off, err := d.lookup(key, true)
	if err != nil {
		return err
	}
	defer d.unlock(s)
	if off == 0 {
		return nil
	}
	if err := s.removeFoundInShard(off, h); err != nil {
		return d.failInShard(s, err, "remove")
	}
	d.tally(s, tWrites)
	return nil
}

// Incr adds delta to the number under key and returns the sum; the TTL and
// the flags stay. An int wraps around on overflow; a float adds delta as a
// float and returns the sum truncated toward zero. A float sum that no
// int64 holds (NaN, an infinity, or beyond ±2^63, as Float(1e19) plus 0 or
// Float(0) plus MaxInt64, which is 2^63 as a float) is refused: the float
// stays as it was and the error wraps ErrNotNumber (IncrFloat and
// IncrInitNum return such a sum). Errors: ErrNotFound for an absent or
// expired key, ErrNotNumber for bytes, a bool or a list.
func (d *Dict) Incr(key string, delta int64) (int64, error) {
	if d.guard {
		return d.guardedIncr(key, delta)
	}
	n, _, found, err := d.incr(key, incrOp{i: delta, f: float64(delta)})
	if err == nil && !found {
		err = ErrNotFound
	}
	return n, err
}

// guardedIncr is Incr with Options.GuardFaults: a separate function, so
// that Incr itself sets up no deferred call (about a nanosecond).
func (d *Dict) guardedIncr(key string, delta int64) (_ int64, err error) {
	defer d.catchFault(&err, shm.GuardFaults())
	n, _, found, err := d.incr(key, incrOp{i: delta, f: float64(delta)})
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
	_, f, found, err := d.incr(key, incrOp{f: delta, mode: incrToFloat})
	if err == nil && !found {
		err = ErrNotFound
	}
	return f, err
}

// IncrInit adds delta to the number under key, or creates the key as
// init+delta with initTTL (0 = never) and flags 0 when it is absent or
// expired; init and initTTL are ignored for a live key. forcible reports
// evictions made to create it. A live number adds as with Incr, and a
// float sum that no int64 holds is refused as Incr refuses it.
func (d *Dict) IncrInit(key string, delta, init int64, initTTL time.Duration) (n int64, forcible bool, err error) {
	if d.guard {
		return d.guardedIncrInit(key, delta, init, initTTL)
	}
	n, _, out, err := d.incrInit(key, delta, init, initTTL, incrToInt)
	return n, out.Forcible, err
}

// guardedIncrInit is IncrInit with Options.GuardFaults (as guardedIncr).
func (d *Dict) guardedIncrInit(key string, delta, init int64, initTTL time.Duration) (n int64, forcible bool, err error) {
	defer d.catchFault(&err, shm.GuardFaults())
	n, _, out, err := d.incrInit(key, delta, init, initTTL, incrToInt)
	return n, out.Forcible, err
}

// incrInit is IncrInit (mode incrToInt) and IncrInitNum (incrNum): the sum
// as an int and as a float. A live key's increment is incr's; creating it,
// createInit's.
func (d *Dict) incrInit(key string, delta, init int64, initTTL time.Duration, mode incrMode) (int64, float64, Outcome, error) {
	if initTTL < 0 {
		return 0, 0, Outcome{}, ErrBadTTL
	}
	n, f, found, err := d.incr(key, incrOp{i: delta, f: float64(delta), mode: mode})
	if err != nil || found {
		return n, f, Outcome{}, err
	}
	return d.createInit(key, delta, init, initTTL, mode)
}

// createInit is incrInit of a key incr found absent or expired, under the
// shard's lock (a function of its own, so that incrInit has no deferred
// call to pay for when the key is live).
func (d *Dict) createInit(key string, delta, init int64, initTTL time.Duration, mode incrMode) (n int64, f float64, out Outcome, err error) {
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	if err := d.lock(s); err != nil {
		return 0, 0, out, err
	}
	defer d.unlock(s)
	// Another process may have created it since: add to it then.
	n, f, found, err := d.incrInShard(place{s, key, h}, incrOp{i: delta, f: float64(delta), mode: mode})
	if err != nil || found {
		return n, f, out, err
	}
	expiry, err := d.expiryFor(initTTL)
	if err != nil {
		return 0, 0, out, err
	}
	out, err = d.findStoreInShard(s, key, h, put{v: Int(init + delta), expiry: expiry, evict: true})
	if err != nil {
		return 0, 0, out, err
	}
	return init + delta, float64(init + delta), out, nil
}

// incr adds to key's live number (incrEntry): under the entry's page lock
// alone when it can pin it, otherwise under the shard's lock. found is false
// for an absent or expired key. The common case, an int's increment, adds
// here when plainInt finds nothing else to check or write; anything else
// on a pinned entry is incrInPage's.
func (d *Dict) incr(key string, op incrOp) (int64, float64, bool, error) {
	if err := d.check(key, true); err != nil {
		return 0, 0, false, err
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	off, seq, ok := s.findOptimistic(key, h)
	if ok && off != 0 {
		if pw := s.pinFirst(off, seq); pw != nil {
			if p := d.plainInt(s, off, len(key), op.mode); p != nil {
				n := int64(atomic.LoadUint64(p)) + op.i
				atomic.StoreUint64(p, uint64(n)) // one aligned store: whole even if the process dies here
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
	return (*uint64)(unsafe.Pointer(&s.arena[v]))
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
	switch res {
	case incrDone:
		return n, f, true, nil
	case incrMiss:
		d.tally(s, tMisses)
		return 0, 0, false, nil
	case incrNotNumber:
		return 0, 0, true, ErrNotNumber
	case incrBeyondInt:
		return 0, 0, true, errBeyondInt(f)
	}
	// incrBroken: the shard's lock repairs it.
	return d.lockIncr(k, op)
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
	s := k.s
	off, _, err := s.findInShard(k.key, k.h)
	if err != nil {
		return 0, 0, false, d.corruptInShard(s, "index")
	}
	if off == 0 {
		d.tally(s, tMisses)
		return 0, 0, false, nil
	}
	if err := s.drainPage(off); err != nil {
		return 0, 0, false, d.failInShard(s, err, "page")
	}
	if gone, err := d.settleInShard(s, off); err != nil || gone {
		if err == nil {
			d.tally(s, tMisses)
		}
		return 0, 0, false, err
	}
	n, f, res := d.incrEntry(s, off, op)
	switch res {
	case incrMiss:
		d.tally(s, tMisses)
		return 0, 0, false, nil
	case incrNotNumber:
		return 0, 0, true, ErrNotNumber
	case incrBeyondInt:
		return 0, 0, true, errBeyondInt(f)
	case incrBroken:
		return 0, 0, false, d.corruptInShard(s, "number")
	}
	d.tally(s, tIncrs)
	return n, f, true, nil
}

// What incrEntry did.
type incrResult uint8

const (
	incrDone      incrResult = iota
	incrMiss                 // the entry has expired
	incrNotNumber            // the entry holds bytes, a bool or a list
	incrBeyondInt            // a float whose sum no int64 holds, for incrToInt: nothing written
	incrBroken               // a half-written or malformed entry, for the shard's lock to repair
)

// An incrOp is what an increment adds, and how.
type incrOp struct {
	i    int64   // added to an int
	f    float64 // added to a float
	mode incrMode
}

// A place is where a key lives: the key, its hash and its shard.
type place struct {
	s   *shard
	key string
	h   uint64
}

// How incrEntry adds, and which sum its caller returns.
type incrMode uint8

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
	return n, f, incrDone
}

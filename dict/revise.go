package dict

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/shm"
)

// MaxStateSize is the largest value Revise works on.
const MaxStateSize = 32

// A State is a small value as Revise passes it: four 8-byte words, which
// Go passes in registers, not through memory. Word i, W0 to W3, holds the
// value's bytes 8i to 8i+7 as a little-endian number. A value of n bytes
// fills the first n/8 words.
type State struct{ W0, W1, W2, W3 uint64 }

// word returns word i of s.
func (s *State) word(i int) uint64 {
	switch i {
	case 0:
		return s.W0
	case 1:
		return s.W1
	case 2:
		return s.W2
	}
	return s.W3
}

// setWord sets word i of s to w.
func (s *State) setWord(i int, w uint64) {
	switch i {
	case 0:
		s.W0 = w
	case 1:
		s.W1 = w
	case 2:
		s.W2 = w
	default:
		s.W3 = w
	}
}

// ReviseFunc is Revise's fn. It gets s, a copy of a value, and found. It
// returns the value to store, whether to store it, and a TTL as
// MutateOutcome's fn does. Words of next beyond the value's size are
// ignored.
type ReviseFunc func(s State, found bool) (next State, store bool, ttl time.Duration)

// Revise changes a fixed-size bytes value as MutateOutcome does, but fn
// works on a copy, outside any lock. The copy is a State: a value of 8,
// 16, 24 or 32 bytes, passed in registers, so that none is allocated. Revise
// is the read-modify-write for a state that is often only read, such as
// a rate limiter's, which a rejection leaves as it is.
//
// Revise reads key's value without a lock and calls fn with a copy of it
// and found true. When key is absent or expired, fn gets size zero bytes
// and found false. When fn returns false, Revise takes no lock and writes
// nothing but the bit that marks the entry used, as Get. Only a shard that
// keeps changing under its reads sends it to the shard's lock, as it sends
// Get. When fn returns true, Revise stores fn's result under the entry's
// lock if the value is still the one fn was given. If it is not, Revise
// calls fn again with the value it now finds. So fn may run more than
// once. Each call must depend on its arguments alone. The last call's
// result is the one that counts.
//
// A stored value keeps its TTL and flags when fn returns a TTL of 0. A new
// entry has flags 0, and no TTL unless fn returns one. fn must not call
// the Dict.
//
// Revise returns ErrWrongShape without calling fn when the live value is
// of another kind or size. It returns ErrBadValue for a size that is not
// 8, 16, 24 or 32, ErrBadTTL if fn returns a negative TTL for a value it
// stores, and the errors of Set for a new entry.
func (d *Dict) Revise(key string, size int, fn ReviseFunc) (out Outcome, err error) {
	return d.reviseBytes(key, hashKey(d.seed, key), size, fn)
}

// reviseBytes is Revise of key, whose hash is h.
func (d *Dict) reviseBytes(key string, h uint64, size int, fn ReviseFunc) (out Outcome, err error) {
	if size < 8 || size > MaxStateSize || size%8 != 0 {
		return out, ErrBadValue
	}
	return d.revise(key, h, KindBytes, size, fn)
}

// ReviseInt is Revise of an int. fn gets the number, or 0 and found false
// when key is absent or expired, and returns the next one. A number is
// read and written whole: a reader never sees part of a change.
//
// ReviseInt returns ErrWrongShape without calling fn when the live value
// is not an int, and the errors of Revise.
func (d *Dict) ReviseInt(key string, fn func(n int64, found bool) (next int64, store bool, ttl time.Duration)) (out Outcome, err error) {
	return d.reviseInt(key, hashKey(d.seed, key), fn)
}

// reviseInt is ReviseInt of key, whose hash is h.
func (d *Dict) reviseInt(key string, h uint64, fn func(n int64, found bool) (next int64, store bool, ttl time.Duration)) (out Outcome, err error) {
	sfn := func(s State, found bool) (State, bool, time.Duration) {
		n, store, ttl := fn(int64(s.W0), found)
		return State{W0: uint64(n)}, store, ttl
	}
	return d.revise(key, h, KindInt, 8, sfn)
}

// reviseOp is one Revise: the key's place, the value's kind and size, and
// fn.
type reviseOp struct {
	place
	kind Kind
	size int
	fn   ReviseFunc
}

// word converts w, a word of the value as the zone holds it, to a State's
// word, or back: a bytes value's words are little-endian numbers, an
// int's its native word.
func (op *reviseOp) word(w uint64) uint64 {
	if op.kind == KindBytes {
		return leWord(w)
	}
	return w
}

// revise is Revise of a value of kind, KindBytes or KindInt, stored in
// size bytes, under key, whose hash is h.
func (d *Dict) revise(key string, h uint64, kind Kind, size int, fn ReviseFunc) (out Outcome, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, true); err != nil {
		return out, err
	}
	// Field by field: a literal is built on the stack and copied whole,
	// and the copy's wide loads wait for the literal's narrow stores.
	var op reviseOp
	op.s, op.key, op.h = d.shardFor(h), key, h
	op.kind, op.size, op.fn = kind, size, fn
	for try := 0; try < tries; try++ {
		res, err := d.reviseOptimistic(&op)
		if res == reviseDone {
			return out, err
		}
		if res == reviseLock {
			break
		}
		if try > 0 {
			runtime.Gosched()
		}
	}
	return d.lockRevise(&op)
}

// What one optimistic try of Revise did.
type reviseResult uint8

const (
	reviseDone  reviseResult = iota // decided, stored or not, or failed
	reviseAgain                     // the value changed under it: try again
	reviseLock                      // absent, expired or broken: under the shard's lock
)

// reviseOptimistic is one try of Revise without the shard's lock. It reads
// the key's value into op.cur, validated, and calls fn with it. A store
// pins the entry's page and writes fn's result only if the value is still
// the one read.
func (d *Dict) reviseOptimistic(op *reviseOp) (reviseResult, error) {
	s := op.s
	off, seq, ok := s.findOptimistic(op.key, op.h)
	if !ok {
		return reviseAgain, nil
	}
	if off == 0 {
		// A new key: only a store needs the shard's lock.
		if _, store, _ := op.fn(State{}, false); !store {
			return reviseDone, nil
		}
		return reviseLock, nil
	}
	e := s.entryAt(off)
	w := e.ver()
	if writing(w) {
		return reviseAgain, nil
	}
	if x := expiryOf(w); x != 0 && d.Now() >= x {
		// Expired is absent: only a store needs the shard's lock.
		if s.seq() != seq {
			return reviseAgain, nil
		}
		if _, store, _ := op.fn(State{}, false); !store {
			return reviseDone, nil
		}
		return reviseLock, nil
	}
	bits, vlen := e.bits(), e.vlen()
	vo := int(off) + valOff(len(op.key))
	if Kind(bits&kindMask) != op.kind || vlen != op.size || vo+vlen > len(s.arena) {
		if e.ver() != w || s.seq() != seq {
			return reviseAgain, nil
		}
		return reviseDone, ErrWrongShape
	}
	var cur State
	for i := 0; i < vlen/8; i++ {
		cur.setWord(i, op.word(atomic.LoadUint64(s.numAt(vo+8*i))))
	}
	if e.ver() != w || s.seq() != seq {
		return reviseAgain, nil
	}
	next, store, ttl := op.fn(cur, true)
	if !store {
		if bits&refBit == 0 && !d.readOnly {
			s.markUsed(off, seq)
		}
		if n, slow := s.counted(tHits); slow {
			d.flushTallyCount(s, tHits, n)
		}
		return reviseDone, nil
	}
	if ttl < 0 {
		return reviseDone, ErrBadTTL
	}
	return d.reviseInPage(op, at{off, seq}, cur, next, ttl)
}

// at is where an optimistic find found an entry: its offset, and the
// shard's Seq then.
type at struct {
	off uint32
	seq uint64
}

// reviseInPage stores next into the entry at a, under its page lock, if
// its value is still cur, of op.kind, and it is still live. A value
// rewritten in place as another kind in the same bytes is not cur: the
// next try refuses its shape.
func (d *Dict) reviseInPage(op *reviseOp, a at, cur, next State, ttl time.Duration) (reviseResult, error) {
	s, off := op.s, a.off
	pw := s.pinFirst(off, a.seq)
	if pw == nil {
		if pw = s.tryPin(off, a.seq); pw == nil {
			return reviseAgain, nil
		}
	}
	e := s.entryAt(off)
	w := e.ver()
	if x := expiryOf(w); writing(w) || (x != 0 && d.Now() >= x) || !s.okBytes(off, e) {
		s.unpin(off, pw)
		return reviseLock, nil
	}
	vo, n := int(off)+valOff(int(e.KLen)), op.size/8
	if e.kind() != op.kind || int(e.VLen) != op.size {
		s.unpin(off, pw)
		return reviseAgain, nil
	}
	for i := 0; i < n; i++ {
		if *s.numAt(vo + 8*i) != op.word(cur.word(i)) {
			s.unpin(off, pw)
			return reviseAgain, nil
		}
	}
	expiry := expiryOf(w)
	if ttl > 0 {
		expiry, _ = d.expiryFor(ttl) // a positive TTL is no error
	}
	w = e.beginWrite()
	for i := 0; i < n; i++ {
		*s.numAt(vo + 8*i) = op.word(next.word(i))
	}
	e.endWrite(w, expiry)
	e.use()
	c, slow := s.entryCounted(off, tWrites)
	s.unpin(off, pw)
	if slow {
		d.flushPageCounts(s, op.key, op.h, off, c)
	}
	return reviseDone, nil
}

// lockRevise is Revise under the shard's lock: for a key that is absent,
// expired or broken, or a value that kept changing. fn still works on a
// copy, which is stored only if fn asks.
func (d *Dict) lockRevise(op *reviseOp) (out Outcome, err error) {
	mfn := func(b []byte, found bool) (bool, time.Duration) {
		var cur State
		for i := 0; i < len(b)/8; i++ {
			cur.setWord(i, op.word(binary.NativeEndian.Uint64(b[8*i:])))
		}
		next, store, ttl := op.fn(cur, found)
		if !store {
			return false, 0 // a found entry stays as it is
		}
		for i := 0; i < len(b)/8; i++ {
			binary.NativeEndian.PutUint64(b[8*i:], op.word(next.word(i)))
		}
		return true, ttl
	}
	zv := Bytes(zeros[:op.size])
	if op.kind == KindInt {
		zv = Int(0)
	}
	err = d.lockMutate(op.key, zv, 0, mutateFn{ttl: mfn}, &out)
	return out, err
}

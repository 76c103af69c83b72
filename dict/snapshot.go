package dict

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/shm"
	"github.com/shmzone/shmzone/slab"
)

// Read-only views. A Dict opened with Options.ReadOnly cannot write the
// zone, so it cannot take a shard's lock; yet what walks a shard's structure
// (Check, Keys, Scan) must see it whole, never half made by another process.
// It works on a snapshot: a copy of the shard's bytes (header, index, arena)
// in memory of its own, taken as a seqlock reader reads: Seq even, copy,
// Seq unchanged. No structural change overlapped such a copy, so its index,
// chains, queue, Count, lists and slab metadata agree with each other, and
// the code that walks a locked shard walks a view over the copy (a shard
// whose h, index, arena and slab point into it) unchanged.
//
// What the copy does not fix are the words entry writers change without the
// shard's lock (DESIGN.md, section 8): an entry's value may be torn in the copy and its
// Ver odd. The checks allow that (checkInShard's copied), and Scan reads each
// value again from the zone, validated as Get validates it (copyLive).
//
// A shard whose Seq stays odd under a lock whose holder died is copied as it
// stands: nothing can change it until a writer takes the lock over, which
// changes the lock word, and the copy is valid while that word and Seq are
// what they were. A live holder that keeps the lock past the Dict's lock
// timeout, or changes that overlap every copy for changeWaits times as
// long, make the shard busy: an error wrapping ErrLockTimeout, never a
// report of corruption. Keys and Scan do not wait that long: after
// copyTries overlapped copies, they read the shard entry by entry
// (walklive.go).

// snapshot is a consistent copy of one shard and a view over it. Its buffer
// is reused from shard to shard.
type snapshot struct {
	buf  []byte  // the copy, as long as a shard, aligned for its words
	view shard   // the shard as the copy holds it; z and lockw are nil
	seq  uint64  // the shard's Seq while the copy was taken
	lock uint64  // the shard's lock word then, when seq is odd (a dead holder's)
	live copyBuf // Keys' copy of a shard read entry by entry (keysLive)
}

// copyChunk is how many bytes a copy takes between two looks at Seq: a copy
// that a change overlaps stops at the next look instead of going on.
const copyChunk = 16 << 10

// Pacing of the tries of a read-only view (patience): the first yieldTries
// yield the processor; then each sleeps, from napMin doubling up to napMax.
// A Seq that stays odd, and so the same, for deadCheckWait has its holder's
// life checked: a dead one's shard is copied as it stands.
// A shard that keeps changing is tried for changeWaits times the Dict's
// lock timeout before a read gives up. A live holder that keeps its lock is
// waited for the lock timeout alone. Changes end, but a stuck holder may
// not, and a busy zone on a loaded machine overlaps many copies.
const changeWaits = 10

const (
	yieldTries    = 64
	napMin        = 20 * time.Microsecond
	napMax        = time.Millisecond
	deadCheckWait = 5 * time.Millisecond
)

// patience paces the retries of a read-only view that met a change in
// progress, and gives up once they have lasted bound (never when bound <= 0).
type patience struct {
	bound time.Duration
	tries int
	start time.Time
}

// wait waits before the next try, and reports false, without waiting, when
// the tries have lasted bound.
func (p *patience) wait() bool {
	p.tries++
	if p.tries == 1 {
		p.start = time.Now()
	} else if p.bound > 0 && time.Since(p.start) >= p.bound {
		return false
	}
	if p.tries <= yieldTries {
		runtime.Gosched()
		return true
	}
	nap := napMin << min(p.tries-yieldTries-1, 10)
	time.Sleep(min(nap, napMax))
	return true
}

// current reports whether shard s's structure is still the one sn copied.
func (sn *snapshot) current(s *shard) bool {
	return s.seq() == sn.seq && (sn.seq&1 == 0 || atomic.LoadUint64(&s.h.Lock) == sn.lock)
}

// take copies shard s into sn, of a read-only Dict, and makes sn.view a
// shard over the copy. With early set, it returns errChanging once
// copyTries changes overlapped its copies, for a caller that then reads the
// shard entry by entry (walkLive).
//
// Errors: errChanging; ErrLockTimeout (wrapped) when no copy could be taken
// within the Dict's lock timeout; ErrCorrupt when the copy's slab header is
// not the one the shard was opened with.
func (d *Dict) take(s *shard, sn *snapshot, early bool) error {
	if len(sn.buf) != len(s.mem) {
		sn.buf = alignedBytes(len(s.mem))
	}
	p := patience{bound: changeWaits * d.lockTimeout}
	var oddSeq uint64 // the odd Seq last seen, and since when
	var oddSince time.Time
	held := false // the last try found one change in progress for long, by a live process
	overlaps := 0 // changes that overlapped a copy, or that one found begun
	for {
		seq := s.seq()
		lock := uint64(0)
		ok := true
		held = false
		if seq&1 != 0 {
			// A change is in progress: wait for it, unless its maker is
			// gone and the shard will stay as it is.
			ok = false
			if seq != oddSeq {
				oddSeq, oddSince = seq, time.Now()
				overlaps++
			} else if time.Since(oddSince) >= deadCheckWait {
				lock = atomic.LoadUint64(&s.h.Lock)
				ok = d.z.LockState(&s.h.Lock) != shm.LockLive
				held = !ok
			}
		}
		if ok {
			if sn.copyShard(s, seq) && (seq&1 == 0 || atomic.LoadUint64(&s.h.Lock) == lock) {
				sn.seq, sn.lock = seq, lock
				return sn.attach(s)
			}
			overlaps++
		}
		if early && overlaps >= copyTries && !held {
			return errChanging
		}
		if held && time.Since(oddSince) >= d.lockTimeout {
			return fmt.Errorf("dict: shard %d: %w after %v: a live process holds its lock", s.id, ErrLockTimeout, d.lockTimeout)
		}
		if !p.wait() {
			return fmt.Errorf("dict: shard %d: %w after %v: the shard kept changing while it was copied", s.id, ErrLockTimeout, p.bound)
		}
	}
}

// copyShard copies shard s's bytes into sn.buf, loading each word
// atomically, and reports whether Seq was seq throughout.
func (sn *snapshot) copyShard(s *shard, seq uint64) bool {
	for i := 0; i < len(s.mem); i += copyChunk {
		j := min(i+copyChunk, len(s.mem))
		loadBytes(sn.buf[i:j], s.mem, i, j-i)
		if s.seq() != seq {
			return false
		}
	}
	return true
}

// attach makes sn.view a view of the copy of shard s.
func (sn *snapshot) attach(s *shard) error {
	arena := sn.buf[len(s.mem)-len(s.arena):]
	sl, err := slab.Attach(arena)
	if err != nil {
		return fmt.Errorf("dict: shard %d: %w: %v", s.id, ErrCorrupt, err)
	}
	sn.view = shard{shardFields: shardFields{
		h:       shardHdrAt(sn.buf),
		mem:     sn.buf,
		index:   indexSlots(sn.buf, len(s.index)),
		arena:   arena,
		slab:    sl,
		idxMask: s.idxMask,
		seed:    s.seed,
		id:      s.id,
		shift:   s.shift,
		steps:   s.steps,
		timeout: s.timeout,
	}}
	return nil
}

// What copyLive's read of an entry came to.
const (
	liveRetry   = iota // something changed under the read: nothing was kept
	liveWriting        // the entry's Ver is odd: a write is in progress, or its writer died
	liveDone           // the entry is in c
	liveGone           // the key is absent, expired, or a list now
)

// copyLive appends the entry at off of the copy in sn to c, as the zone
// holds it now, for Scan on a read-only view. It reads the entry at off
// while the shard's structure is still the copy's, otherwise wherever the
// index holds its key now. It reads as Get reads without a lock: every word atomically, the
// entry's Ver even and unchanged around the read, the shard's structure
// unchanged after it; what fails that is undone and read again. A key that
// is gone now is left out, and so is an entry whose writer died in the
// middle of a write (its Ver stays odd, and no live process holds its page
// lock): the next process that changes the shard drops it (doc.go I6).
// Errors: ErrLockTimeout (wrapped) when no read held within the Dict's lock
// timeout.
func (d *Dict) copyLive(s *shard, sn *snapshot, off uint32, now int64, c *copyBuf) error {
	key := sn.view.keyOf(off, sn.view.entryAt(off))
	var h uint64
	hashed := false
	p := patience{bound: changeWaits * d.lockTimeout}
	var oddVer uint64 // the odd Ver last seen, and since when
	var oddSince time.Time
	for {
		at, seq, ok := off, uint64(0), sn.current(s)
		copied := ok // at is the copy's entry, key's while sn is current
		if !ok {
			if !hashed {
				h, hashed = hashKey(s.seed, string(key)), true
			}
			at, seq, ok = s.findOptimistic(string(key), h)
		}
		if ok {
			if at == 0 {
				return nil
			}
			same := func() bool { return copied && sn.current(s) || !copied && s.seq() == seq }
			m := c.mark()
			res, w := s.readLive(at, key, now, c)
			switch {
			case res == liveDone && same():
				return nil
			case res == liveGone && same():
				c.undo(m)
				return nil
			case res == liveWriting && w != oddVer:
				oddVer, oddSince = w, time.Now()
			case res == liveWriting && time.Since(oddSince) >= deadCheckWait:
				// A writer holds the page lock while Ver is odd, and
				// makes Ver even before it unlocks: a Ver still odd
				// after the page was seen without a live holder is a
				// dead writer's.
				if pw := s.slab.PageWord(at); pw != nil && d.z.LockState(pw) != shm.LockLive &&
					s.entryAt(at).ver() == w && same() {
					return nil
				}
			}
			c.undo(m)
		}
		if !p.wait() {
			return fmt.Errorf("dict: shard %d: %w after %v: the shard kept changing while it was read", s.id, ErrLockTimeout, p.bound)
		}
	}
}

// readLive appends key's entry at off of the live shard s to c, without a
// lock, and returns what it found and the entry's Ver; the caller validates
// the shard's structure after it.
func (s *shard) readLive(off uint32, key []byte, now int64, c *copyBuf) (int, uint64) {
	if !s.okEntry(off) {
		return liveRetry, 0
	}
	e := s.entryAt(off)
	w := e.ver()
	if writing(w) {
		return liveWriting, w
	}
	res := liveDone
	if x := expiryOf(w); x != 0 && now >= x {
		res = liveGone
	}
	bits, vlen, flags := e.bits(), e.vlen(), e.flags()
	vo := int(off) + valOff(len(key))
	if vo+vlen > len(s.arena) {
		return liveRetry, w
	}
	r := copyRec{kind: Kind(bits & kindMask), flags: flags, expiry: expiryOf(w), now: now}
	v, ok := s.valueAt(r.kind, vo, vlen)
	switch {
	case !ok:
		return liveRetry, w
	case r.kind == KindList:
		res = liveGone // a value in the copy: a list written since
	case r.kind == KindBytes:
		c.addLoaded(key, s.arena, vo, vlen, r)
	default:
		r.num = v.num
		c.add(key, nil, r)
	}
	if e.ver() != w {
		return liveRetry, w
	}
	return res, w
}

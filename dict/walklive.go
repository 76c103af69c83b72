package dict

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/shm"
)

// Reading a busy shard of a read-only view entry by entry. A shard that
// changes faster than it can be copied whole (take) is read bucket by
// bucket of its index instead (walkLive). Each bucket is read as Get reads
// a key: every word loaded atomically, every offset bounds-checked, and Seq
// unchanged around the read. A read that a change overlapped is undone and
// read again, for that bucket alone. So a busy shard is read in the short
// gaps between its changes, and one bucket needs one gap.
//
// What the read gives: each bucket as it stood at one moment, each value
// whole (readLive), and each key at most once, since a key lives in one
// bucket. What it does not give: one moment for the whole shard, nor the
// eviction order. Keys and Scan list such a shard's keys in index order.

// liveBroken is what walker.bucket and copyListLive return for a chain or a
// list that is not whole: corruption, unless Seq changed meanwhile.
const liveBroken = liveGone + 1

// copyTries is how many copies of a shard a change may overlap before a
// read-only Keys or Scan reads it entry by entry instead.
const copyTries = 8

// errChanging is returned by take, when asked to give up early, for a shard
// whose copies copyTries changes overlapped.
var errChanging = errors.New("dict: the shard kept changing while it was copied")

// errFrozen is returned by walkLive for a shard whose Seq stays odd under a
// lock whose holder died: nothing changes it, and take copies it whole.
var errFrozen = errors.New("dict: the shard's lock holder died in a change")

// walkLive appends the live entries of shard s of a read-only Dict to c,
// bucket by bucket. Lists are copied with their elements. It returns after
// the last bucket, or once c holds max records of keys (0 = all).
//
// Errors: ErrCorrupt when a bucket's chain cannot be walked while Seq stays
// unchanged; errFrozen (see above); ErrLockTimeout (wrapped) when a live
// holder kept the shard's lock past the lock timeout, or one bucket found no
// gap between changes in changeWaits times the lock timeout.
func (d *Dict) walkLive(s *shard, now int64, c *copyBuf, max int) error {
	wk := walker{d: d, s: s, now: now, c: c}
	keys := 0
	for b := 0; b < len(s.index); {
		seq := s.seq()
		if seq&1 != 0 {
			if err := wk.wait.odd(d, s, seq); err != nil {
				return err
			}
			continue
		}
		m := c.mark()
		n, res := wk.bucket(uint32(b))
		switch {
		case s.seq() != seq:
			res = liveRetry
		case res == liveBroken:
			return d.corruptInShard(s, "index")
		}
		if res == liveRetry || res == liveWriting {
			c.undo(m)
			if !wk.wait.p.wait() {
				return fmt.Errorf("dict: shard %d: %w after %v: the shard kept changing while it was read entry by entry", s.id, ErrLockTimeout, wk.wait.p.bound)
			}
			continue
		}
		wk.wait = liveWait{}
		keys += n
		if max > 0 && keys >= max {
			return nil
		}
		b++
	}
	return nil
}

// walker is walkLive's state: where it reads, where it copies to, and the
// pacing of its tries of one bucket.
type walker struct {
	d    *Dict
	s    *shard
	now  int64
	c    *copyBuf
	key  []byte // scratch for a key
	wait liveWait
}

// liveWait paces walkLive's tries of one bucket: a change in progress, or an
// entry being written.
type liveWait struct {
	p        patience
	oddSeq   uint64    // the odd Seq last seen
	since    time.Time // when oddSeq was first seen
	oddAt    uint32    // the entry last seen with an odd Ver
	oddVer   uint64    // and that Ver
	verSince time.Time // when oddVer was first seen there
}

// odd waits for a change in progress to end. It returns errFrozen when the
// change's maker died, and ErrLockTimeout (wrapped) when a live one held
// the lock past the lock timeout.
func (w *liveWait) odd(d *Dict, s *shard, seq uint64) error {
	if w.p.bound == 0 {
		w.p.bound = changeWaits * d.lockTimeout
	}
	if seq != w.oddSeq {
		w.oddSeq, w.since = seq, time.Now()
	} else if held := time.Since(w.since); held >= deadCheckWait {
		switch lock := atomic.LoadUint64(&s.h.Lock); {
		case d.z.LockState(&s.h.Lock) != shm.LockLive && s.seq() == seq && atomic.LoadUint64(&s.h.Lock) == lock:
			return errFrozen
		case held >= d.lockTimeout:
			return fmt.Errorf("dict: shard %d: %w after %v: a live process holds its lock", s.id, ErrLockTimeout, d.lockTimeout)
		}
	}
	if !w.p.wait() {
		return fmt.Errorf("dict: shard %d: %w after %v: the shard kept changing while it was read entry by entry", s.id, ErrLockTimeout, w.p.bound)
	}
	return nil
}

// deadWriter reports whether the entry at off, with the odd Ver ver, is a
// dead writer's: the same Ver for deadCheckWait, and no live holder of its
// page lock. Such an entry is left out, as copyLive leaves it out.
func (w *liveWait) deadWriter(d *Dict, s *shard, off uint32, ver uint64) bool {
	if off != w.oddAt || ver != w.oddVer {
		w.oddAt, w.oddVer, w.verSince = off, ver, time.Now()
		return false
	}
	if time.Since(w.verSince) < deadCheckWait {
		return false
	}
	pw := s.slab.PageWord(off)
	return pw != nil && d.z.LockState(pw) != shm.LockLive && s.entryAt(off).ver() == ver
}

// bucket appends the live entries of bucket b to wk.c, and returns how
// many keys it added. It reads without a lock; the caller checks Seq after
// it. res is liveBroken when the chain or a list was not whole, liveRetry
// when a value changed under the read, liveWriting when an entry was being
// written, and liveDone otherwise.
func (wk *walker) bucket(b uint32) (n, res int) {
	s, c := wk.s, wk.c
	if wk.wait.p.bound == 0 {
		wk.wait.p.bound = changeWaits * wk.d.lockTimeout
	}
	off := atomic.LoadUint32(&s.index[b])
	for steps := 0; off != 0; steps++ {
		if !s.okEntry(off) || steps > s.steps {
			return n, liveBroken
		}
		e := s.entryAt(off)
		klen, _ := e.klenTag()
		k := int(off) + entryHdrSize
		if k+klen > len(s.arena) {
			return n, liveBroken
		}
		if cap(wk.key) < klen {
			wk.key = make([]byte, klen)
		}
		key := loadBytes(wk.key[:klen], s.arena, k, klen)
		if e.kind() == KindList {
			switch r := s.copyListLive(off, key, wk.now, c); r {
			case liveDone:
				n++
			case liveBroken:
				return n, r
			}
		} else {
			m := c.mark()
			switch r, ver := s.readLive(off, key, wk.now, c); r {
			case liveDone:
				n++
			case liveGone:
				c.undo(m)
			case liveWriting:
				c.undo(m)
				if !wk.wait.deadWriter(wk.d, s, off, ver) {
					return n, r
				}
			default:
				c.undo(m)
				return n, r
			}
		}
		off = e.next()
	}
	return n, liveDone
}

// copyListLive appends the list whose entry is at off, of key key, to c,
// with its elements, without a lock: lists change only under the shard's
// lock, so the caller's check of Seq validates the copy. It returns
// liveDone, liveGone for an expired list (nothing is added), or liveBroken
// when the list was not whole (what was added is left for the caller to
// undo).
func (s *shard) copyListLive(off uint32, key []byte, now int64, c *copyBuf) int {
	e := s.entryAt(off)
	w := e.ver()
	if x := expiryOf(w); x != 0 && now >= x {
		return liveGone
	}
	lo := int(off) + valOff(len(key))
	if lo+listHdrSize > len(s.arena) {
		return liveBroken
	}
	var lh [listHdrSize]byte
	loadBytes(lh[:], s.arena, lo, listHdrSize)
	n := int(binary.NativeEndian.Uint32(lh[listLenOff:]))
	head := binary.NativeEndian.Uint32(lh[listHeadOff:])
	at := len(c.recs)
	stored := c.add(key, nil, copyRec{kind: KindList, flags: e.flags(), expiry: expiryOf(w), now: now})
	i := 0
	for no := head; no != 0; i++ {
		if !s.okNode(no) || i >= s.steps {
			return liveBroken
		}
		var nh [nodeHdrSize]byte
		loadBytes(nh[:], s.arena, int(no), nodeHdrSize)
		next := binary.NativeEndian.Uint32(nh[nodeNextOff:])
		vlen := int(binary.NativeEndian.Uint32(nh[nodeVLenOff:]))
		kind := Kind(nh[nodeKindOff])
		d := int(no) + nodeHdrSize
		if kind == KindList || !fits(kind, vlen) || d+vlen > len(s.arena) {
			return liveBroken
		}
		r := copyRec{kind: kind}
		switch kind {
		case KindBytes:
			c.addLoaded(nil, s.arena, d, vlen, r)
		default:
			var tmp [8]byte
			r.num = nodeNum(kind, loadBytes(tmp[:vlen], s.arena, d, vlen))
			c.add(nil, nil, r)
		}
		no = next
	}
	if i != n {
		return liveBroken
	}
	if stored && !c.full {
		c.recs[at].elems = i
	}
	return liveDone
}

// nodeNum decodes a list element's number, or bool, from its data.
func nodeNum(k Kind, data []byte) uint64 {
	v, _ := nodeValue(k, data)
	return v.num
}

// readShard copies the live entries of shard s of a read-only Dict into c,
// for Scan: from a copy of the shard (take, then scanCopy), or entry by
// entry when the shard keeps changing (walkLive).
func (d *Dict) readShard(s *shard, sn *snapshot, now int64, c *copyBuf) error {
	err := d.take(s, sn, true)
	if errors.Is(err, errChanging) {
		m := c.mark()
		if err = d.walkLive(s, now, c, 0); !errors.Is(err, errFrozen) {
			return err
		}
		c.undo(m)
		err = d.take(s, sn, false)
	}
	if err != nil {
		return err
	}
	return d.scanCopy(s, sn, now, c)
}

// keysLive is keysInShard for a shard of a read-only Dict that kept
// changing while it was copied: it reads the shard entry by entry
// (walkLive) into sn.live, then appends the keys to buf and their lengths to lens.
func (d *Dict) keysLive(s *shard, sn *snapshot, buf []byte, lens []int, max int) (nbytes, nkeys int, fit bool, err error) {
	now, c := d.Now(), &sn.live
	for {
		c.reset()
		err := d.walkLive(s, now, c, max)
		if errors.Is(err, errFrozen) {
			if err := d.take(s, sn, false); err != nil {
				return 0, 0, false, err
			}
			return d.keysInShard(&sn.view, buf, lens, max)
		}
		if err != nil {
			return 0, 0, false, err
		}
		if !c.full {
			break
		}
		c.grow()
	}
	fit = true
	for j := 0; j < len(c.recs) && (max == 0 || nkeys < max); j++ {
		r := c.recs[j]
		k := c.key(r)
		if fit && len(buf)+len(k) <= cap(buf) && len(lens) < cap(lens) {
			buf = append(buf, k...)
			lens = append(lens, len(k))
		} else {
			fit = false
		}
		nbytes += len(k)
		nkeys++
		j += r.elems
	}
	// buf and lens were filled in place: the caller reslices them.
	return nbytes, nkeys, fit, nil
}

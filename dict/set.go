package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// setInPage is store's entry write: a Set or Replace of a live key with a
// value of its shape, or an Add that finds the key live. done false: the
// shard's lock decides. It calls no user code, so it unlocks where it
// returns, with no deferred call.
func (d *Dict) setInPage(k place, v *Value, expiry int64, flags uint32, m mode) (done bool, err error) {
	s := k.s
	off, e, pw, ok := d.pinLive(s, k.key, k.h)
	if !ok {
		return false, nil
	}
	switch {
	case m&^modeSafe == modeAdd:
		s.unpin(off, pw)
		return true, ErrExists
	case !sameShape(e, v):
		s.unpin(off, pw)
		return false, nil
	}
	s.rewriteInPage(off, e, v, expiry, flags)
	d.unlockCounted(s, k.key, k.h, off, pw)
	return true, nil
}

// How storeInShard treats an existing key.
type mode uint8

// Set stores v under key with a TTL and user flags. A TTL of 0 means the
// value never expires.
//
// When the shard is full, Set reclaims expired entries first. It then evicts
// the oldest entries not used since the eviction hand last passed them.
// forcible reports that live entries were evicted.
//
// On ErrNoMemory, key keeps its old value; forcible may still be true.
func (d *Dict) Set(key string, v Value, ttl time.Duration, flags uint32) (forcible bool, err error) {
	return d.store(key, v, ttl, flags, modeSet)
}

// SafeSet is Set without eviction. It returns ErrNoMemory when the value
// fits in neither free nor expired memory.
func (d *Dict) SafeSet(key string, v Value, ttl time.Duration, flags uint32) error {
	_, err := d.store(key, v, ttl, flags, modeSet|modeSafe)
	return err
}

// Add is Set for an absent key only. An expired key counts as absent. Add
// returns ErrExists when key holds a live value or a list.
func (d *Dict) Add(key string, v Value, ttl time.Duration, flags uint32) (forcible bool, err error) {
	return d.store(key, v, ttl, flags, modeAdd)
}

// SafeAdd is Add without eviction.
func (d *Dict) SafeAdd(key string, v Value, ttl time.Duration, flags uint32) error {
	_, err := d.store(key, v, ttl, flags, modeAdd|modeSafe)
	return err
}

// Replace is Set for a live key only. The kind may change. Replace returns
// ErrNotFound when key is absent or expired.
func (d *Dict) Replace(key string, v Value, ttl time.Duration, flags uint32) (forcible bool, err error) {
	return d.store(key, v, ttl, flags, modeReplace)
}

// store checks key, p.v and ttl, then writes p under key: in place under
// the entry's page lock when the key is live and p.v fits its entry,
// otherwise under the shard's lock.
// The fast path passes the value and its settings as parameters, not in a
// put: a put built by the caller and copied whole is loaded in wide words
// that the CPU cannot forward from the caller's narrow stores (DESIGN.md,
// section 4).
func (d *Dict) store(key string, v Value, ttl time.Duration, flags uint32, m mode) (bool, error) {
	if d.guard {
		return d.guardedWrite(key, v, ttl, flags, m)
	}
	return d.write(key, v, ttl, flags, m)
}

// guardedWrite is write with Options.GuardFaults (as guardedIncr).
func (d *Dict) guardedWrite(key string, v Value, ttl time.Duration, flags uint32, m mode) (_ bool, err error) {
	defer d.catchFault(&err, shm.GuardFaults())
	return d.write(key, v, ttl, flags, m)
}

// write is store's work: it checks key, v and ttl, then writes.
func (d *Dict) write(key string, v Value, ttl time.Duration, flags uint32, m mode) (bool, error) {
	if err := d.check(key, true); err != nil {
		return false, err
	}
	expiry, err := d.checkValue(key, &v, ttl)
	if err != nil {
		return false, err
	}
	h := hashKey(d.seed, key)
	k := place{d.shardFor(h), key, h}
	if done, err := d.setInPage(k, &v, expiry, flags, m); done {
		return false, err
	}
	return d.lockStore(k, &v, expiry, flags, m)
}

// lockStore is store's write under the shard's lock: a new key, a
// value of another size, or an entry that its pinned write could not take.
func (d *Dict) lockStore(k place, v *Value, expiry int64, flags uint32, m mode) (bool, error) {
	if err := d.lock(k.s); err != nil {
		return false, err
	}
	p := put{v: *v, expiry: expiry, flags: flags, mode: m &^ modeSafe, evict: m&modeSafe == 0}
	out, err := d.findStoreInShard(k.s, k.key, k.h, p)
	d.unlock(k.s)
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
		s.logRecall(key, hd.Count)
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

const (
	modeSet     mode = iota // write whatever is there
	modeAdd                 // fail with ErrExists on a live key
	modeReplace             // fail with ErrNotFound unless the key is live

	// modeSafe, added to another mode, fails with ErrNoMemory where the
	// write would evict a live entry (SafeSet, SafeAdd).
	modeSafe mode = 1 << 7
)

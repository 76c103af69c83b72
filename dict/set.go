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
	off, err := d.findDrainedInShard(s, key, h)
	if err != nil {
		return Outcome{}, err
	}
	_, out, err := d.storeInShard(s, key, h, off, p)
	return out, err
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

// storeInShard writes p.v under key and returns the offset of the entry
// that holds it. off is key's entry, 0 when absent, as findDrainedInShard
// found it under this hold of the lock. An entry of p.v's chunk size is
// written in place. A live entry of another size is replaced in its chain.
// Otherwise a new entry joins the chain.
func (d *Dict) storeInShard(s *shard, key string, h uint64, off uint32, p put) (uint32, Outcome, error) {
	live := off != 0 && !expired(s.entryAt(off), d.clock)
	switch {
	case p.mode == modeAdd && live:
		return 0, Outcome{}, ErrExists
	case p.mode == modeReplace && !live:
		return 0, Outcome{}, ErrNotFound
	}
	if p.keepFlags {
		p.flags = 0
		if live {
			p.flags = s.entryAt(off).Flags
		}
	}
	k := place{s, key, h}
	switch {
	case off != 0 && s.fitsInPlace(off, entrySize(len(key), storedLen(p.v))):
		return off, Outcome{}, d.rewriteInShard(s, off, &p)
	case live:
		return d.replaceInShard(k, off, &p)
	default:
		return d.insertInShard(k, off, &p)
	}
}

// fitsInPlace reports whether an entry of need bytes fits the chunk of the
// entry at off. The arena's bound matters only in a corrupt arena, where
// off may be no chunk.
func (s *shard) fitsInPlace(off uint32, need int) bool {
	e := s.entryAt(off)
	return s.slab.ChunkSize(need) == s.slab.ChunkSize(entrySize(int(e.KLen), int(e.VLen))) &&
		int(off)+need <= len(s.arena)
}

// rewriteInShard writes p in place in the entry at off, whose chunk it
// fits. Drop names the entry while it is half written.
func (d *Dict) rewriteInShard(s *shard, off uint32, p *put) error {
	hd := s.hdr()
	e := s.entryAt(off)
	hd.Drop = off
	if e.kind() == KindList {
		if err := s.freeNodesInShard(off, e); err != nil {
			return d.corruptInShard(s, "list")
		}
	}
	e.Flags, e.VLen = p.flags, uint32(storedLen(p.v))
	e.setExpiry(p.expiry)
	e.setKindUsed(p.v.kind)
	s.putValue(off, e, p.v)
	hd.Drop = dropNone
	e.use()
	d.tally(s, tWrites)
	return nil
}

// replaceInShard writes p in a new entry that takes the place of key's live
// entry at off, of another size, in its chain and frees the old one. The
// new entry keeps the old one's segment and is marked used.
func (d *Dict) replaceInShard(k place, off uint32, p *put) (uint32, Outcome, error) {
	s, hd := k.s, k.s.hdr()
	e := s.entryAt(off)
	noff, out, err := d.allocEntryInShard(k, off, p, refBit) // a rewritten key was just used
	if err != nil {
		return 0, out, err
	}
	ne := s.entryAt(noff)
	// Eviction may have changed the chain since findInShard: unlinkInShard
	// walks it again.
	if err := s.unlinkInShard(off, k.h, exitReplaced, noff); err != nil {
		return 0, out, d.corruptInShard(s, "chain")
	}
	if err := s.freeEntryInShard(off, e); err != nil {
		return 0, out, d.corruptInShard(s, "free")
	}
	hd.Drop = dropNone
	if !s.enqueueInShard(noff, ne) {
		return 0, out, d.corruptInShard(s, "queue")
	}
	d.tally(s, tWrites)
	return noff, out, nil
}

// insertInShard writes p in a new entry at the head of key's chain. An
// expired entry of key at off, of another size, is freed first, so that its
// memory serves the new value before any live entry is evicted. The new
// entry keeps that entry's segment. A key that had no entry may find the
// trace of one evicted while in use: its new entry then joins the
// protected segment.
func (d *Dict) insertInShard(k place, off uint32, p *put) (uint32, Outcome, error) {
	s, hd := k.s, k.s.hdr()
	prot := uint8(0)
	if off != 0 {
		prot = s.entryAt(off).bits() & protBit
		if err := s.removeInShard(off, exitDeleted); err != nil {
			return 0, Outcome{}, d.failInShard(s, err, "remove")
		}
	}
	var out Outcome
	recalled := false
	if off == 0 {
		recalled, out.Lost = s.recallInShard(k.h, d.clock)
	}
	noff, aout, err := d.allocEntryInShard(k, 0, p, prot)
	out.Forcible = aout.Forcible
	if err != nil {
		return 0, out, err
	}
	ne := s.entryAt(noff)
	slot := &s.index[s.bucket(k.h)]
	ne.Next = *slot
	*slot = noff // the commit point
	hd.Drop = dropNone
	hd.Count++
	if !recalled {
		if !s.enqueueInShard(noff, ne) {
			return 0, out, d.corruptInShard(s, "queue")
		}
		d.tally(s, tWrites)
		return noff, out, nil
	}
	// A key evicted while in use is back: it joins the protected
	// segment, unreferenced, where it is demoted first.
	s.logRecall(k.key, hd.Count)
	if !s.enqueueRecalledInShard(noff, ne) {
		return 0, out, d.corruptInShard(s, "queue")
	}
	if err := s.balanceInShard(0); err != nil {
		return 0, out, d.corruptInShard(s, "queue")
	}
	d.tally(s, tWrites)
	return noff, out, nil
}

// allocEntryInShard allocates an entry for p under key and writes it
// unlinked and unqueued, with bits added to its kind. The entry at pin, 0
// for none, survives the allocation, and the new entry takes its segment as
// the allocation left it. A new key starts unreferenced, in probation. Drop
// names the new entry: a repair frees it until the caller links it.
func (d *Dict) allocEntryInShard(k place, pin uint32, p *put, bits uint8) (uint32, Outcome, error) {
	s, hd := k.s, k.s.hdr()
	vlen := storedLen(p.v)
	noff, forcible, err := s.allocInShard(entrySize(len(k.key), vlen), p.evict, pin, d.clock)
	out := Outcome{Forcible: forcible}
	if err != nil {
		hd.Drop = dropNone
		if err == errCorruptArena {
			return 0, out, d.corruptInShard(s, "alloc")
		}
		return 0, out, err
	}
	hd.Drop = noff // half written: drop it
	if pin != 0 {
		bits |= s.entryAt(pin).bits() & protBit
	}
	ne := s.entryAt(noff)
	*ne = entry{Flags: p.flags, Ver: uint64(p.expiry), VLen: uint32(vlen), KLen: uint16(len(k.key)), Tag: tagOf(k.h), Bits: uint8(p.v.kind) | bits}
	copy(s.keyOf(noff, ne), k.key)
	s.putValue(noff, ne, p.v)
	return noff, out, nil
}

const (
	modeSet     mode = iota // write whatever is there
	modeAdd                 // fail with ErrExists on a live key
	modeReplace             // fail with ErrNotFound unless the key is live

	// modeSafe, added to another mode, fails with ErrNoMemory where the
	// write would evict a live entry (SafeSet, SafeAdd).
	modeSafe mode = 1 << 7
)

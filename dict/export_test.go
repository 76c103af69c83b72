package dict

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/shm"
)

// What the external tests (package dict_test) reach inside a Dict; it exists
// only in test builds.

// ShardLock returns the lock word in the zone of shard i of a writable d,
// which the crash tests hold in a helper process and inspect once it is
// killed.
func ShardLock(d *Dict, i int) *uint64 { return &d.shards[i].h.Lock }

// ShardSeq returns shard i's Seq, which every holder of the shard's lock
// moves by 2.
func ShardSeq(d *Dict, i int) uint64 { return atomic.LoadUint64(&d.shards[i].h.Seq) }

// LockShard takes shard i's lock as d's zone, waiting without bound,
// counted as d's own locks are (d.unlock releases it).
func LockShard(d *Dict, i int) { d.z.LockWithinCounted(&d.shards[i].h.Lock, d.shards[i].holds, 0) }

// LockState reports what shard i's lock word says of its holder, as d's
// zone judges it.
func LockState(d *Dict, i int) shm.LockState { return d.z.LockState(&d.shards[i].h.Lock) }

// OwnerWord returns the lock word a writable d's zone writes, and the owner
// slot it names. TryLock writes the word into a free word, here one of the
// test's own memory, which no other owner sees. The slot is the word's low
// 32 bits (shm's I5).
func OwnerWord(d *Dict) (uint64, int) {
	var w uint64
	if !d.z.TryLock(&w) {
		panic("TryLock of a free word failed")
	}
	return w, int(uint32(w))
}

// ShardOf returns the shard that holds key.
func ShardOf(d *Dict, key string) int { return int(hashKey(d.seed, key) & d.mask) }

// UpdateLocked is Update under the shard's lock whatever fn returns: for
// the tests whose helper must hold a shard's lock, not an entry's.
func UpdateLocked(d *Dict, key string, fn func(cur Value, ok bool) (Value, time.Duration, bool)) error {
	var out Outcome
	return d.lockUpdate(key, fn, &out)
}

// MoveToOwn is the move that a write in place makes of key's entry
// (move.go), as if the write had found it in a page of another process's:
// for the crash test of moves.
func MoveToOwn(d *Dict, key string) {
	h := hashKey(d.seed, key)
	d.moveToOwn(d.shardFor(h), key, h, 0)
}

// WalkLive reads every shard of a read-only d entry by entry, as Keys and
// Scan read a shard that keeps changing (walkLive), and calls fn with each
// live key. It fails when a key comes twice.
func WalkLive(d *Dict, fn func(it Item)) error {
	var c copyBuf
	seen := map[string]bool{}
	for i := range d.shards {
		s := &d.shards[i]
		for {
			c.reset()
			if err := d.walkLive(s, d.Now(), &c, 0); err != nil {
				return err
			}
			if !c.full {
				break
			}
			c.grow()
		}
		for j := 0; j < len(c.recs); j++ {
			r := c.recs[j]
			it := Item{Key: string(c.key(r)), Value: c.value(r), Flags: r.flags}
			if r.kind == KindList {
				for _, er := range c.recs[j+1 : j+1+r.elems] {
					it.List = append(it.List, c.value(er))
				}
				j += r.elems
			}
			if seen[it.Key] {
				return fmt.Errorf("key %q came twice", it.Key)
			}
			seen[it.Key] = true
			fn(it)
		}
	}
	return nil
}

// EntryVer returns the Ver word of key's entry, live or expired, read as a
// reader reads it, and false when the shard holds no entry of key.
func EntryVer(d *Dict, key string) (uint64, bool) {
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	for {
		off, _, ok := s.findOptimistic(key, h)
		if !ok {
			continue
		}
		if off == 0 {
			return 0, false
		}
		return s.entryAt(off).ver(), true
	}
}

// PageWord returns the lock word of the page that holds key's entry, and
// false when the shard holds no entry of key.
func PageWord(d *Dict, key string) (uint64, bool) {
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	for {
		off, _, ok := s.findOptimistic(key, h)
		if !ok {
			continue
		}
		if off == 0 {
			return 0, false
		}
		return atomic.LoadUint64(s.slab.PageWord(off)), true
	}
}

// HoldPage takes the lock of the page that holds key's live entry as an
// entry writer of d takes it (pinned and marked), and returns the function
// that releases it; nil when key has no entry or its page is busy.
func HoldPage(d *Dict, key string) (release func()) {
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	off, seq, ok := s.findOptimistic(key, h)
	if !ok || off == 0 {
		return nil
	}
	pw := s.tryPin(off, seq)
	if pw == nil {
		return nil
	}
	return func() { s.unpin(off, pw) }
}

// HoldShardWord takes shard i's lock word as d's zone without making Seq
// odd: a holder that has changed nothing yet. Whatever waits for the lock
// waits; readers go on. It is counted as d's own locks are, so that d
// does not take it for a dead holder's. It returns the function that releases it.
func HoldShardWord(d *Dict, i int) (release func()) {
	s := &d.shards[i]
	if !d.z.TryLockCounted(s.lockw, s.holds) {
		panic("shard lock busy")
	}
	return func() { shm.UnlockCounted(s.lockw, s.holds) }
}

// prefixChunk is the most buckets one step of KeysWithPrefix looks at, for
// its test's zone.
const prefixChunk = walkBuckets

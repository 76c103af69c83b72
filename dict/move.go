package dict

import (
	"errors"
	"sync/atomic"

	"github.com/shmzone/shmzone/slab"
)

// Entries move to the pages of the process that writes them.
//
// A process takes slab pages of its own for the entries it creates
// (slab.ownPage), so that the entries of different processes share no cache
// line and no page lock word. Entries that some other process created do
// not lie in the writer's pages: those of a process that has since exited
// (a restarted worker finds its clients' entries in its predecessor's
// pages), or restored from a snapshot, or of clients that moved from one
// process to another. Two processes that each write their own such entries
// then write the same lines and page locks, and together run slower than
// one. The moves below let them scale again (DESIGN.md, section 4;
// BenchmarkProcs keys=mixed in bench/RESULTS.md).
//
// So a process that writes an entry in place, in a page it did not take
// (slab.Mine), moves it to a page of its own: at the moveEvery-th write of
// that page's entries in the process (the page's count, entryCounted, so
// that the check costs the write nothing), under the shard's lock, with
// the mechanism that clears pages (moveInShard), which keeps the entry's
// place in the eviction queue and its bits, and loses at most the entry
// being moved to a SIGKILL. The move is advice, and bounded:
//   - at most one try per shard and millisecond, in all processes together
//     (the shard header's MovedAt, a word of a line the move writes anyway,
//     and triedSince), so that a zone of S shards spends at most S moves a
//     millisecond however many processes share it;
//   - not of the key the process last moved in the shard (shard.lastMoved):
//     found in another's page again, it is a key that another process
//     writes too, and moved back. A hot key that several processes write
//     so moves once each way, not back and forth; keys that several
//     processes write, of which there are more than one a shard, move at
//     the rate above at most;
//   - only when the shard's lock and the entry's page lock are free: it
//     never waits for either (a page lock may be held through a Mutate's
//     fn, for as long as the fn takes);
//   - only into a page of the process's own with room, or a free page it
//     takes while more than a moveReserve-th of the shard's pages are free
//     (slab.AllocOwn): moves never take the last free pages, which new keys
//     need, and in a full zone nothing moves. (A move frees its old chunk
//     but may take a page for the new one. A full page that a move leaves
//     a hole in names no owner from then on, and the next process that
//     needs a page of its size class fills it: release.go.)

// moveEvery is how many writes in place a process makes to the entries of
// one slab page between two checks of whether the entry written should
// move (moveToOwn): a power of two that divides tallyFlush, so that one
// test of the page's count serves both.
const moveEvery = 64

// moveReserve: a move takes a free page for its entry only while more than
// one page in moveReserve of the shard's is free.
const moveReserve = 16

// moveToOwn moves key's entry, which the caller just wrote in place at off
// and whose page lock it has released, to a page of this process's own
// when off's page is not one, within the bounds above. It returns
// nothing: the write is done whatever becomes of the move, and an error
// met under the shard's lock is dealt with there, as by any other holder.
func (d *Dict) moveToOwn(s *shard, key string, h uint64, off uint32) {
	if settled(s, off) || atomic.LoadUint64(&s.lastMoved) == h {
		return
	}
	now := uint32(d.Now())
	if triedSince(atomic.LoadUint32(&s.h.MovedAt), now) || !d.z.TryLockCounted(s.lockw, s.holds) {
		return
	}
	d.beginChange(s)
	defer d.unlock(s)
	hd := s.hdr()
	if triedSince(hd.MovedAt, now) {
		return // another process tried in this millisecond
	}
	atomic.StoreUint32(&hd.MovedAt, now)
	off, err := s.findInShard(key, h)
	if err != nil {
		_ = d.corruptInShard(s, "index")
		return
	}
	if off == 0 || settled(s, off) {
		return // gone, or moved by another goroutine of the process
	}
	// A writer inside the page may be running a Mutate's fn, or have died
	// there: the move is not worth a wait.
	if drained, err := s.tryDrainPage(off); err != nil || !drained {
		if err != nil {
			_ = d.corruptInShard(s, "page")
		}
		return
	}
	if gone, err := d.settleInShard(s, off); err != nil || gone {
		return
	}
	e := s.entryAt(off)
	if !s.okBytes(off, e) {
		_ = d.corruptInShard(s, "entry")
		return
	}
	s.sweepInShard()
	// Until the index points to the copy, a repair must drop the copy;
	// after, the old chunk: whichever the index does not reach.
	hd.Drop = dropUnreachable
	moved, err := s.moveInShard(off, e, true)
	if err != nil {
		_ = d.corruptInShard(s, "move")
		return
	}
	hd.Drop = dropNone
	if moved {
		hd.Moves++
		atomic.StoreUint64(&s.lastMoved, h)
	}
}

// settled reports whether the entry at off is where its writer's entries
// go: in a small page of this process's own (slab.Mine), or in a run of
// pages, which holds it alone and shares no line nor page lock with another
// entry (slab.InRun).
func settled(s *shard, off uint32) bool { return s.slab.Mine(off) || s.slab.InRun(off) }

// triedSince reports whether a shard's last try to move, at (its
// MovedAt), is at now or up to a minute later: the coarse clocks of
// processes differ by a millisecond or two, and one whose clock lags waits
// until it passes at, so that a shard gets one try a millisecond in all
// processes together. An at further from now (a clock set back, or the
// wrap of the 32 bits every 49.7 days) allows a try.
func triedSince(at, now uint32) bool {
	d := int32(now - at)
	return d <= 0 && d > -60_000
}

// maxPageChunks bounds the chunks of a page: (4096 - 8) / 16, for the
// smallest class in the smallest page.
const maxPageChunks = 256

// moveInShard moves the linked entry at off, whose page is drained, to a
// chunk of its size in another page: with own, a page this process took
// for itself (slab.AllocOwn, leaving moveReserve's share of the pages
// free), otherwise any (slab.AllocAway). The index
// and the queue point to the copy, which keeps the entry's bits, and the
// old chunk is freed. moved is false when no such page has room.
func (s *shard) moveInShard(off uint32, e *entry, own bool) (moved bool, err error) {
	size, err := s.slab.Size(off)
	if err != nil {
		return false, errCorruptArena
	}
	var noff uint32
	if own {
		noff, err = s.slab.AllocOwn(size, s.slab.Pages()/moveReserve)
	} else {
		noff, err = s.slab.AllocAway(size, off)
	}
	if err != nil {
		if errors.Is(err, slab.ErrNoMemory) {
			return false, nil
		}
		return false, errCorruptArena
	}
	copy(s.arena[noff:int(noff)+size], s.arena[off:int(off)+size])
	ne := s.entryAt(noff)
	h := hashKey(s.seed, bytesString(s.keyOf(noff, ne)))
	if err := s.unlinkInShard(off, h, exitMoved, noff); err != nil {
		return false, err
	}
	e.setBits(0) // a freed chunk never looks like an entry to repair
	if err := s.slab.Free(off); err != nil {
		return false, errCorruptArena
	}
	return true, nil
}

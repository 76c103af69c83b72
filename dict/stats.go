package dict

import (
	"cmp"
	"slices"

	"github.com/shmzone/shmzone/shm"
	"github.com/shmzone/shmzone/slab"
)

// Stats are a dictionary's figures, summed over its shards. The counters
// count since the zone was created, across every process.
//
// Each process counts Hits, Misses and Writes in its own memory. It adds
// them to the zone within a few hundred milliseconds, or at once with
// SyncStats. A zone over 512 MiB adds the counts of writes in place up to
// 100 ms later per 256 MiB. A process's own Stats include all of its
// counts; another process's may lag. A process that is killed loses the
// counts it had not added.
//
// LockWaits counts waits for a shard's lock, not for an entry's page lock.
type Stats struct {
	Capacity  int64  // zone size in bytes
	FreeSpace int64  // bytes allocatable without eviction
	Shards    int    // shard count
	Entries   int64  // entries, expired ones not yet reclaimed included
	Hits      uint64 // reads and increments that found a live key
	Misses    uint64 // reads and increments that did not
	Writes    uint64 // successful writes
	Evictions uint64 // live entries evicted to make room
	// Lost counts keys created anew while their previous entry, evicted
	// live, would still have been live: what the key held was lost to
	// eviction, not to its TTL (Outcome.Lost, which errs toward not
	// counting). A zone whose Lost grows is too small for the keys in use.
	Lost        uint64
	Expirations uint64 // expired entries reclaimed
	// Protected counts the entries in the eviction queue's protected
	// segment: used again after they were written, evicted only when no
	// other is left (package doc).
	Protected  int64
	LockWaits  uint64 // lock acquisitions that had to wait
	Recoveries uint64 // shards rebuilt after a dead lock owner or corruption
	// Moves counts the entries that a process moved, after writing them,
	// from a page another process filled to a page of its own, so that the
	// entries each process writes share no cache line with another's
	// (DESIGN.md, section 6).
	Moves uint64
	// HeldPages counts the slab pages that open Dicts hold for the entries
	// they write. Each holds at most three pages with room per size
	// class and shard; the others are full.
	HeldPages int64
	// StrandedBytes counts the free bytes of slab pages that also hold
	// entries: room only for entries of those pages' size classes. It is
	// part of FreeSpace.
	StrandedBytes int64
	// Busy counts the shards left out of the other figures because a live
	// process held their lock past LockTimeout.
	Busy int
}

// Stats returns the dictionary's figures. It locks one shard at a time, so
// the sums are not one instant's. A shard whose lock stays held past the
// lock timeout is left out, and counted in Busy. Stats reads every slab
// page's descriptor. It asks the kernel once per process that holds pages
// whether that process is alive.
func (d *Dict) Stats() Stats {
	if d.guard {
		var err error
		defer d.catchFault(&err, shm.GuardFaults())
	}
	st := Stats{Capacity: d.Size(), Shards: len(d.shards)}
	if d.usable() != nil {
		return st
	}
	live := liveTags(d.z)
	for i := range d.shards {
		s := &d.shards[i]
		if d.lock(s) != nil {
			st.Busy++
			continue
		}
		h := s.hdr()
		st.FreeSpace += s.slab.FreeBytes()
		st.Entries += int64(h.Count)
		c := d.counts(s)
		st.Hits += c[tHits] + c[tIncrs]
		st.Misses += c[tMisses]
		st.Writes += c[tWrites] + c[tIncrs]
		st.Evictions += h.Evictions
		st.Lost += h.Lost
		st.Protected += int64(h.ProtCount)
		st.Expirations += h.Expirations
		st.LockWaits += h.LockWaits
		st.Recoveries += h.Recoveries
		st.Moves += h.Moves
		st.HeldPages += int64(s.slab.HeldPages(s.pacedTags(live)))
		st.StrandedBytes += s.slab.StrandedBytes()
		d.unlock(s)
	}
	return st
}

// pacedTags returns live, which also moves the shard's Seq by 2 every
// walkStep pages it is asked about (advance). HeldPages asks it of every
// page that names an owner, under the shard's lock, and asks the kernel
// of each new owner. The shard's lock waiters so see that walk progress.
func (s *shard) pacedTags(live func(tag uint32) bool) func(tag uint32) bool {
	p := pacer{s: s}
	return func(tag uint32) bool {
		p.tick()
		return live(tag)
	}
}

// ShardStats returns shard i's figures, with Shards 1; only Capacity and
// Busy 1 when its lock stays held past LockTimeout.
func (d *Dict) ShardStats(i int) Stats {
	if d.guard {
		var err error
		defer d.catchFault(&err, shm.GuardFaults())
	}
	st := Stats{Shards: 1}
	if d.usable() != nil || i < 0 || i >= len(d.shards) {
		return st
	}
	s := &d.shards[i]
	st.Capacity = int64(len(s.mem))
	if d.lock(s) != nil {
		st.Busy = 1
		return st
	}
	defer d.unlock(s)
	h := s.hdr()
	st.FreeSpace = s.slab.FreeBytes()
	st.Entries = int64(h.Count)
	c := d.counts(s)
	st.Hits, st.Misses, st.Writes = c[tHits]+c[tIncrs], c[tMisses], c[tWrites]+c[tIncrs]
	st.Evictions, st.Expirations = h.Evictions, h.Expirations
	st.Lost, st.Protected = h.Lost, int64(h.ProtCount)
	st.LockWaits, st.Recoveries, st.Moves = h.LockWaits, h.Recoveries, h.Moves
	st.HeldPages, st.StrandedBytes = int64(s.slab.HeldPages(s.pacedTags(liveTags(d.z)))), s.slab.StrandedBytes()
	return st
}

// SlabStats returns the use of each slab size class, summed over the shards;
// the last row, with Size 0, counts page runs (large entries). A shard whose
// lock stays held past LockTimeout is left out.
func (d *Dict) SlabStats() []slab.ClassStats {
	if d.guard {
		var err error
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if d.usable() != nil {
		return nil
	}
	sum := map[int]*slab.ClassStats{}
	var order []int
	for i := range d.shards {
		s := &d.shards[i]
		if d.lock(s) != nil {
			continue // busy: left out, as Stats does
		}
		rows := s.slab.Stats()
		d.unlock(s)
		for _, r := range rows {
			c, ok := sum[r.Size]
			if !ok {
				c = &slab.ClassStats{Size: r.Size}
				sum[r.Size] = c
				order = append(order, r.Size)
			}
			c.Pages += r.Pages
			c.Used += r.Used
			c.Free += r.Free
		}
	}
	out := make([]slab.ClassStats, 0, len(order))
	for _, size := range order {
		if size != 0 {
			out = append(out, *sum[size])
		}
	}
	// One row per size: the sort has no ties to keep in order.
	slices.SortFunc(out, func(a, b slab.ClassStats) int { return cmp.Compare(a.Size, b.Size) })
	if r, ok := sum[0]; ok {
		out = append(out, *r)
	}
	return out
}

// SyncStats adds to the zone the counts of this process that it has not
// added yet. Other processes' Stats then include them. Without it, they are
// added within a few hundred milliseconds. A read-only Dict has none to
// add.
func (d *Dict) SyncStats() {
	if d.usable() == nil {
		d.guardedFlush(true)
	}
}

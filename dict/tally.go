package dict

import (
	"sync"
	"sync/atomic"

	"github.com/shmzone/shmzone/shm"
)

// Operation counts. An operation never writes a count in the zone: each
// process counts in memory of its own, one cache line per shard (so that its
// goroutines on different shards do not share a line either), and adds its
// counts to the shard header's second line now and then: every tallyFlush
// counts of a kind, every 100 ms or so while it counts (the coarse clock's
// ticker, below), and when it closes the Dict; its own Stats add what it
// has not added yet. Another process's counts are so a few hundred
// milliseconds behind at most (tallyFlush-1 per shard and kind with an
// injected clock), and a process killed loses the counts it had not added.

// Kinds of count.
const (
	tHits      = iota // a read that found a live key
	tMisses           // a read or increment that did not
	tWrites           // a successful write
	tIncrs            // an increment of a live key: a hit and a write
	numTallies        // a power of two: tally masks a kind with it
)

// tallyFlush is how many counts of a kind a process keeps before it adds
// them to the zone: a power of two.
const tallyFlush = 1024

// tallies is one shard's counts of this process, a cache line of its own.
type tallies struct {
	n [numTallies]atomic.Uint64
	_ [64 - numTallies*8]byte
}

// tally counts one operation of kind k on shard s. It reads the coarse
// clock, so that the clock's ticker runs, and flushes, while the Dict
// counts.
func (d *Dict) tally(s *shard, k int) {
	if n, slow := s.counted(k); slow {
		d.tallySlow(s, k, n)
	}
}

// counted is tally's common case, small enough to inline where tally, a
// call, is not: it counts one operation of kind k on shard s, one atomic
// add to process memory, and reports whether tallySlow must follow with n,
// the kind's count: it reached a multiple of tallyFlush, or the coarse
// clock is not running (or its ticker asks whether it is read). The hot
// paths (a read's hit, an increment, a write in place) use it as
//
//	if n, slow := s.counted(k); slow {
//		d.tallySlow(s, k, n)
//	}
//
// which saves the call of tally: about a nanosecond of a read.
func (s *shard) counted(k int) (n uint64, slow bool) {
	n = s.tally.n[k&(numTallies-1)].Add(1)
	return n, n&(tallyFlush-1) == 0 || atomic.LoadInt64(&coarse.word)&stateMask != clockRunning
}

// tallySlow flushes a kind whose count reached tallyFlush, and reads the
// coarse clock when it is not running (or its ticker asks whether it is
// read), which restarts it.
func (d *Dict) tallySlow(s *shard, k int, n uint64) {
	if n&(tallyFlush-1) == 0 {
		d.flushTally(s, k)
	}
	if d.onTicker {
		coarseNow()
	}
}

// flushTally adds this process's counts of kind k on shard s to the zone.
// A read-only view has nowhere to add them: it keeps them, unread.
func (d *Dict) flushTally(s *shard, k int) {
	if d.readOnly {
		return
	}
	if n := d.tallies[s.id].n[k].Swap(0); n != 0 {
		atomic.AddUint64(s.h.tally(k), n)
	}
}

// flushTallies adds every count of this process to the zone.
func (d *Dict) flushTallies() {
	for i := range d.shards {
		for k := 0; k < numTallies; k++ {
			d.flushTally(&d.shards[i], k)
		}
	}
}

// counts returns shard s's counts of kind k: the zone's, and this
// process's that it has not added yet.
func (d *Dict) counts(s *shard, k int) uint64 {
	n := atomic.LoadUint64(s.h.tally(k))
	if !d.readOnly { // a read-only view only looks: its reads are not the zone's
		n += d.tallies[s.id].n[k].Load()
	}
	return n
}

// tally returns the zone's count of kind k.
func (h *shardHdr) tally(k int) *uint64 {
	switch k {
	case tHits:
		return &h.Hits
	case tMisses:
		return &h.Misses
	case tWrites:
		return &h.Writes
	}
	return &h.Incrs
}

// The Dicts on the coarse clock whose counts its ticker adds to the zone at
// each check (clock.go), every 100 ms or so while the clock is read, and a
// last time when it stops for want of reads: a process's counts reach the
// zone within a few hundred milliseconds however slowly it counts. A Dict
// keeps the clock read while it counts (tally).
var open struct {
	mu    sync.RWMutex
	dicts map[*Dict]struct{}
}

// registerTallies and unregisterTallies add a Dict to, and remove it from,
// those the ticker flushes; unregister waits for a flush in progress.
func registerTallies(d *Dict) {
	open.mu.Lock()
	defer open.mu.Unlock()
	if open.dicts == nil {
		open.dicts = map[*Dict]struct{}{}
	}
	open.dicts[d] = struct{}{}
}

func unregisterTallies(d *Dict) {
	open.mu.Lock()
	defer open.mu.Unlock()
	delete(open.dicts, d)
}

// flushOpenTallies adds the counts of every registered Dict to its zone.
func flushOpenTallies() {
	open.mu.RLock()
	defer open.mu.RUnlock()
	for d := range open.dicts {
		d.flushGuarded()
	}
}

// SyncStats adds the operation counts of this process that its Dict has
// not added to the zone yet (Stats.Hits, Misses, Writes), so that the Stats
// of other processes include them now; otherwise they are added within a
// few hundred milliseconds. A read-only Dict has none to add.
func (d *Dict) SyncStats() {
	if d.usable() == nil {
		d.flushGuarded()
	}
}

// flushGuarded is flushTallies under the Dict's fault guard, if it has one.
func (d *Dict) flushGuarded() {
	if !d.guard {
		d.flushTallies()
		return
	}
	var err error
	defer d.catchFault(&err, shm.GuardFaults())
	d.flushTallies()
}

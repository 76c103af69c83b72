package dict

import (
	"sync"
	"sync/atomic"

	"github.com/shmzone/shmzone/internal/coarseclock"
	"github.com/shmzone/shmzone/shm"
)

// Operation counts. An operation never writes a count in the zone: each
// process counts in memory of its own, and adds its counts to the shard
// header's second line now and then: every tallyFlush counts of a kind in
// one word, every 100 ms or so while it counts (the coarse clock's ticker,
// below; for the page counts of a zone over 512 MiB, less often:
// pagesPerCheck), and when it closes the Dict; its own Stats add what it
// has not added yet. Another process's counts are so a few hundred
// milliseconds behind at most (with an injected clock, tallyFlush-1 per
// word), and a process killed loses the counts it had not added.
//
// Its words:
//   - reads, misses, and writes under a shard's lock: one cache line per
//     shard (tallies), so that its goroutines on different shards do not
//     share a line, added to with an atomic add;
//   - entry writes (pagelock.go), which hold the lock of their entry's slab
//     page: a word per page and kind (pageTally), added to with a plain
//     add. The page's lock orders every writer of the page in every
//     process, so the add is exact. The write spends no second locked
//     instruction on its count: its page lock's compare-and-swap is the
//     first. DESIGN.md, section 4, compares it with an atomic add. The
//     words count up, mod 2^32, and are never reset: what is added to the zone is what each gained since
//     it was last looked at (seen), under tallyMu. They cost the process
//     16 bytes per slab page (4 KiB by default), and the page's pin mark
//     (pagelock.go) 4 more: 0.5% of the zone's size.

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

// pageTally is this process's counts of the entry writes made under the
// lock of one slab page of a shard, and its mark of a pin of the page.
type pageTally struct {
	n      [pageKinds]uint32 // tWrites, tIncrs: bump, by the page's writer
	seen   [pageKinds]uint32 // n as last added to the zone: under tallyMu
	pinned uint32            // 1 while a goroutine pins the page (pagelock.go): storePinMark, by the pinner
}

// pageKinds are the kinds of count an entry write makes: tWrites and tIncrs,
// at index k-tWrites of a pageTally's words.
const pageKinds = 2

// entryCounted is counted for an entry write of kind k (tWrites or tIncrs)
// on the entry at off, whose page's lock the caller holds: it adds one to
// the page's word of kind k and reports whether flushPageCounts must follow with
// n, the word's count: at every moveEvery-th count of the word (tallyFlush
// is a multiple), or when the coarse clock is not running, as counted
// does. Unlike counted it does not inline: the compiler puts it just over
// its budget, and an inlined version measured no faster in Incr, Count or
// Req.
func (s *shard) entryCounted(off uint32, k int) (n uint32, slow bool) {
	p := s.pageOf(off)
	if p >= len(s.pages) {
		return 0, false // a read-only view's: it writes no entry
	}
	n = bump(&s.pages[p].n[(k-tWrites)&1])
	return n, n&(moveEvery-1) == 0 || !coarseclock.IsRunning()
}

// pageOf returns the index of the slab page that holds off, an entry's
// offset (from the shard's copy of the slab's PageGeometry); for an off
// outside the pages, none below len(s.pages): below the pages, the
// subtraction wraps past the arena's end, as the pages end within the
// 4 GiB that offsets address.
func (s *shard) pageOf(off uint32) int {
	return int((off - s.pagesOff) >> s.pageShift)
}

// flushPageCounts is flushTallyCount for entryCounted, called once the page's lock is
// released (it may wait for tallyMu, held by a flush that scans every
// page: no writer waits for it holding a lock): it adds the counts of the
// page of the entry at off, key's, to the zone when n reached a multiple
// of tallyFlush, considers moving the entry to a page of this process's
// own at every moveEvery-th (moveToOwn), and reads the coarse clock.
func (d *Dict) flushPageCounts(s *shard, key string, h uint64, off uint32, n uint32) {
	if n&(tallyFlush-1) == 0 {
		d.flushPage(s, s.pageOf(off))
	}
	if n&(moveEvery-1) == 0 {
		d.moveToOwn(s, key, h, off)
	}
	if d.onTicker {
		coarseclock.Now()
	}
}

// flushPage adds the counts of page p of shard s to the zone. It unlocks
// tallyMu in a deferred call: a fault in the zone (GuardFaults) unwinds
// through it, and Close flushes again.
func (d *Dict) flushPage(s *shard, p int) {
	if p >= len(s.pages) {
		return
	}
	d.tallyMu.Lock()
	defer d.tallyMu.Unlock()
	var add [pageKinds]uint64
	s.pages[p].take(&add)
	s.addPageCounts(&add)
}

// take adds to add what the page's counts gained since they were last
// taken, and marks them taken; the caller holds tallyMu.
func (pt *pageTally) take(add *[pageKinds]uint64) {
	for k := range pt.n {
		if n := atomic.LoadUint32(&pt.n[k]); n != pt.seen[k] {
			add[k] += uint64(n - pt.seen[k])
			pt.seen[k] = n
		}
	}
}

// pending adds to add what the page's counts gained since they were last
// taken; the caller holds tallyMu.
func (pt *pageTally) pending(add *[pageKinds]uint64) {
	for k := range pt.n {
		add[k] += uint64(atomic.LoadUint32(&pt.n[k]) - pt.seen[k])
	}
}

// addPageCounts adds entry writes' counts, taken from pages, to the zone's.
func (s *shard) addPageCounts(add *[pageKinds]uint64) {
	for k, n := range add {
		if n != 0 {
			atomic.AddUint64(s.h.tally(tWrites+k), n)
		}
	}
}

// tally counts one operation of kind k on shard s. It reads the coarse
// clock, so that the clock's ticker runs, and flushes, while the Dict
// counts.
func (d *Dict) tally(s *shard, k int) {
	if n, slow := s.counted(k); slow {
		d.flushTallyCount(s, k, n)
	}
}

// counted is tally's common case, small enough to inline where tally, a
// call, is not: it counts one operation of kind k on shard s, one atomic
// add to process memory, and reports whether flushTallyCount must follow with n,
// the kind's count: it reached a multiple of tallyFlush, or the coarse
// clock is not running (or its ticker asks whether it is read). The hot
// paths (a read's hit, an increment, a write in place) use it as
//
//	if n, slow := s.counted(k); slow {
//		d.flushTallyCount(s, k, n)
//	}
//
// which saves the call of tally: about a nanosecond of a read.
func (s *shard) counted(k int) (n uint64, slow bool) {
	n = s.tally.n[k&(numTallies-1)].Add(1)
	return n, n&(tallyFlush-1) == 0 || !coarseclock.IsRunning()
}

// flushTallyCount flushes a kind whose count reached tallyFlush, and reads the
// coarse clock when it is not running (or its ticker asks whether it is
// read), which restarts it.
func (d *Dict) flushTallyCount(s *shard, k int, n uint64) {
	if n&(tallyFlush-1) == 0 {
		d.flushTally(s, k)
	}
	if d.onTicker {
		coarseclock.Now()
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

// flushTallies adds every count of this process to the zone; the page
// counts too when pages is true.
func (d *Dict) flushTallies(pages bool) {
	d.tallyMu.Lock()
	defer d.tallyMu.Unlock()
	for i := range d.shards {
		s := &d.shards[i]
		for k := 0; k < numTallies; k++ {
			d.flushTally(s, k)
		}
		if !pages {
			continue
		}
		var add [pageKinds]uint64
		for p := range s.pages {
			s.pages[p].take(&add)
		}
		s.addPageCounts(&add)
	}
}

// counts returns shard s's counts of each kind: the zone's, and this
// process's that it has not added yet.
func (d *Dict) counts(s *shard) (c [numTallies]uint64) {
	d.tallyMu.Lock() // a flush moves counts from pages to the zone under it
	defer d.tallyMu.Unlock()
	for k := range c {
		c[k] = atomic.LoadUint64(s.h.tally(k))
	}
	if d.readOnly { // a read-only view only looks: its reads are not the zone's
		return c
	}
	for k := range c {
		c[k] += d.tallies[s.id].n[k].Load()
	}
	var add [pageKinds]uint64
	for p := range s.pages {
		s.pages[p].pending(&add)
	}
	for k, n := range add {
		c[tWrites+k] += n
	}
	return c
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
// each check (internal/coarseclock), every 100 ms or so while the clock is read (page
// counts every pageTicks checks), and a last time when it stops for want
// of reads: a process's counts reach the zone within a few hundred
// milliseconds however slowly it counts (pagesPerCheck). A Dict keeps the
// clock read while it counts (tally).
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

// The process clock's ticker flushes the counts of the Dicts that use it.
func init() { coarseclock.OnCheck(flushOpenTallies) }

// flushOpenTallies adds the counts of every registered Dict to its zone, at
// the clock's check: its page counts every pageTicks checks, and at the
// last check, before the clock stops.
func flushOpenTallies(last bool) {
	open.mu.RLock()
	defer open.mu.RUnlock()
	for d := range open.dicts {
		d.checkFlush(last)
	}
}

// checkFlush is flushOpenTallies for one Dict.
func (d *Dict) checkFlush(last bool) {
	d.guardedFlush(last || d.checks.Add(1)%d.pageTicks == 0)
}

// pagesPerCheck is how many page counts the clock's checks scan, on
// average, each check: a Dict's page counts are added every
// pages/pagesPerCheck checks, at least every check. So the checks scan
// about 65,536 pages' counts a check on average, whatever the zone's size.
// That bounds the share of a core they take (DESIGN.md, section 4). The page counts of a zone under 512 MiB are added at every
// check; in a larger one, an entry write's count may wait about 100 ms
// more per 256 MiB before it is (SyncStats adds it at once).
const pagesPerCheck = 1 << 16

// guardedFlush is flushTallies under the Dict's fault guard, if it has one.
func (d *Dict) guardedFlush(pages bool) {
	if !d.guard {
		d.flushTallies(pages)
		return
	}
	var err error
	defer d.catchFault(&err, shm.GuardFaults())
	d.flushTallies(pages)
}

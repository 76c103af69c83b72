package dict

import "sync/atomic"

// Operation counts. An operation never writes a count in the zone: each
// process counts in memory of its own, one cache line per shard (so that its
// goroutines on different shards do not share a line either), and adds its
// counts to the shard header's second line now and then: every tallyFlush
// counts of a kind, when it reads the figures (Stats), and when it closes
// the Dict. Stats of another process are so at most tallyFlush-1 counts per
// shard and kind behind, and a process killed loses the counts it had not
// added.

// Kinds of count.
const (
	tHits   = iota // a read that found a live key
	tMisses        // a read or increment that did not
	tWrites        // a successful write
	tIncrs         // an increment of a live key: a hit and a write
	numTallies
)

// tallyFlush is how many counts of a kind a process keeps before it adds
// them to the zone: a power of two.
const tallyFlush = 1024

// tallies is one shard's counts of this process, a cache line of its own.
type tallies struct {
	n [numTallies]atomic.Uint64
	_ [64 - numTallies*8]byte
}

// tally counts one operation of kind k on shard s.
func (d *Dict) tally(s *shard, k int) {
	if n := d.tallies[s.id].n[k].Add(1); n&(tallyFlush-1) == 0 {
		d.flushTally(s, k)
	}
}

// flushTally adds this process's counts of kind k on shard s to the zone.
// A read-only view has nowhere to add them: it keeps them.
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
	return atomic.LoadUint64(s.h.tally(k)) + d.tallies[s.id].n[k].Load()
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

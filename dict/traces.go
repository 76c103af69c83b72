package dict

import "sync/atomic"

// The traces are a shard's memory of keys evicted while live, which
// outlives their entries. Each live eviction writes a trace of its key: a
// fingerprint of the key's hash and the generation it was written in. A
// new key that finds its trace was in use: it lost its entry to eviction,
// and its new entry joins the protected segment (storeLocked).
//
// The traces are buckets of traceBucket slots, a cache line each. A key
// has two buckets, both named by its hash, and its trace goes to the one
// with more free slots. A generation ends every traceGens-th of the
// slots' number of traces, and a trace lives traceGens generations: the
// shard remembers about the last traceBuckets×traceBucket live evictions.
// When both buckets are full of live traces, the oldest of them gives
// way. A slot whose generation is no longer live is free; each write
// clears those of its two buckets, so that no stale slot lives on until
// its generation number comes round again.
//
// Each generation keeps the earliest expiry of its traces (TraceExp). A
// key found before that expiry, or in a generation whose traces have none,
// lost a live entry: Outcome.Lost, Stats.Lost. A trace whose own entry
// expired sooner than the others' may be counted too.
//
// Traces are read and written only under the shard's lock. Nothing in
// them is trusted: any value of a slot or of the header's trace words
// only makes a key seem seen before, or not.

const (
	traceBucket     = 16              // slots per bucket
	traceBucketSize = traceBucket * 4 // bytes per bucket: a cache line
	traceShare      = 20              // a shard gives a traceShare-th of its bytes to traces
	maxTraceBuckets = 1 << 16         // the buckets two 16-bit hash fields can name
	traceTagBits    = 5               // bits of a slot's generation
	traceTagMask    = 1<<traceTagBits - 1
	traceGens       = 16 // generations a trace lives, at most half of 1<<traceTagBits
)

// traceHash returns the buckets and the fingerprint of the key of hash h.
// The key's hash is keyed by the zone's seed, so no one who lacks the seed
// can pick keys that share a key's buckets or fingerprint.
func (s *shard) traceHash(h uint64) (b1, b2 int, fp uint32) {
	// The low bits of h name the shard: mix the others into them.
	x := h ^ h>>29
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 32
	n := uint64(len(s.traces) / traceBucket)
	b1 = int(uint64(uint16(x)) * n >> 16)
	b2 = int(uint64(uint16(x>>16)) * n >> 16)
	fp = uint32(x >> (32 + traceTagBits))
	if fp == 0 {
		fp = 1
	}
	return b1, b2, fp
}

// bucketAt returns bucket b of the traces, capped.
func (s *shard) bucketAt(b int) []uint32 {
	i := b * traceBucket
	return s.traces[i : i+traceBucket : i+traceBucket]
}

// traceLocked writes a trace of the key of hash h, whose live entry with
// the given expiry (0 = never) is being evicted.
func (s *shard) traceLocked(h uint64, expiry int64) {
	if len(s.traces) == 0 {
		return
	}
	hd := s.hdr()
	b1, b2, fp := s.traceHash(h)
	gen := hd.TraceGen
	var (
		free              = -1 // the slot written when one is free
		most              = 0  // free slots in free's bucket
		oldest, oldestAge = -1, uint32(0)
	)
	for _, b := range [2]int{b1, b2} {
		bk := s.bucketAt(b)
		n, first := 0, -1
		for i, t := range bk {
			if t != 0 {
				age := (gen - t) & traceTagMask
				if age < traceGens {
					if age >= oldestAge {
						oldest, oldestAge = b*traceBucket+i, age
					}
					continue
				}
				bk[i] = 0 // stale
			}
			n++
			if first < 0 {
				first = b*traceBucket + i
			}
		}
		if n > most {
			free, most = first, n
		}
	}
	if free < 0 {
		free = oldest
	}
	s.traces[free] = fp<<traceTagBits | gen&traceTagMask
	if x := &hd.TraceExp[gen%traceGens]; expiry != 0 && (*x == 0 || uint64(expiry) < *x) {
		*x = uint64(expiry)
	}
	hd.TraceFill++
	if hd.TraceFill >= s.traceFill() {
		hd.TraceFill = 0
		hd.TraceGen = gen + 1
		hd.TraceExp[(gen+1)%traceGens] = 0
	}
}

// traceFill returns the traces a generation holds: one traceGens-th of
// the slots.
func (s *shard) traceFill() uint32 { return uint32(max(len(s.traces)/traceGens, 1)) }

// recallLocked looks for a trace of the key of hash h, which has no entry,
// and clears it: found reports one, and lost that the entry it traces
// would still be live at now, which Lost counts.
func (s *shard) recallLocked(h uint64, now func() int64) (found, lost bool) {
	hd := s.hdr()
	if len(s.traces) == 0 || hd.TraceGen == 0 && hd.TraceFill == 0 {
		return false, false // no trace was ever written
	}
	b1, b2, fp := s.traceHash(h)
	gen := hd.TraceGen
	for _, b := range [2]int{b1, b2} {
		bk := s.bucketAt(b)
		for i, t := range bk {
			if t>>traceTagBits != fp || (gen-t)&traceTagMask >= traceGens {
				continue
			}
			bk[i] = 0
			x := hd.TraceExp[t%traceGens]
			if x == 0 || now() < int64(x) {
				atomic.AddUint64(&hd.Lost, 1)
				return true, true
			}
			return true, false
		}
	}
	return false, false
}

// clearTracesLocked forgets every trace: for a flush.
func (s *shard) clearTracesLocked() {
	hd := s.hdr()
	clear(s.traces)
	hd.TraceGen, hd.TraceFill = 0, 0
	clear(hd.TraceExp[:])
}

// recall is a new entry that found its key's trace, and the shard's Count
// with it, as shard.recalls records it.
type recall struct {
	key   string
	count uint32
}

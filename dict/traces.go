package dict

import "sync/atomic"

// The traces are a shard's memory of keys evicted while live, which
// outlives their entries. Each live eviction writes a trace of its key: a
// fingerprint of the key's hash and the generation it was written in. A
// new key that finds its trace was in use: it lost its entry to eviction,
// and its new entry joins the protected segment (storeInShard).
//
// The traces are buckets of traceBucket slots, a cache line each. A key
// has two buckets, both named by its hash, and its trace goes to the
// first free slot of the first, else of the second. A generation ends
// every (traceGens+1)-th of the slots' number of traces, and a trace lives
// traceGens generations: the shard remembers about its last
// traceBuckets×traceBucket live evictions. When both buckets are full of
// live traces, the oldest of them gives way. A slot whose generation is no
// longer live is free. Every traceSweep traces, one bucket is swept of
// such slots, in turn, so that none lives on until its generation number
// comes round again.
//
// Each generation keeps the earliest expiry of its traces (TraceExp). A
// key found before that expiry, or in a generation whose traces have none,
// lost a live entry: Outcome.Lost, Stats.Lost. A key whose entry would
// still be live is not counted when another trace of its generation had
// an expiry already past.
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
	traceSweep      = 8  // traces written per bucket swept of stale slots
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

// traceInShard writes a trace of the key of hash h, whose live entry with
// the given expiry (0 = never) is being evicted.
func (s *shard) traceInShard(h uint64, expiry int64) {
	if len(s.traces) == 0 {
		return
	}
	hd := s.hdr()
	b1, b2, fp := s.traceHash(h)
	gen := hd.TraceGen
	v := fp<<traceTagBits | gen&traceTagMask
	if !putFree(s.bucketAt(b1), gen, v) && !putFree(s.bucketAt(b2), gen, v) {
		s.traces[s.oldestOf(b1, b2, gen)] = v
	}
	if x := &hd.TraceExp[gen%traceGens]; expiry != 0 && (*x == 0 || uint64(expiry) < *x) {
		*x = uint64(expiry)
	}
	hd.TraceFill++
	if hd.TraceFill%traceSweep == 0 {
		// Stale slots are free, but a slot left stale for traceGens more
		// generations would look live again: the sweep clears them first.
		n := uint32(len(s.traces) / traceBucket)
		bk := s.bucketAt(int(hd.TraceSwept % n))
		for i, t := range bk {
			if (gen-t)&traceTagMask >= traceGens {
				bk[i] = 0
			}
		}
		hd.TraceSwept = (hd.TraceSwept + 1) % n
	}
	if hd.TraceFill >= s.traceFill() {
		hd.TraceFill = 0
		hd.TraceGen = gen + 1
		hd.TraceExp[(gen+1)%traceGens] = 0
	}
}

// putFree writes v, a trace of generation gen, to the first free slot of
// bk, an empty one or one of a generation no longer live, and reports
// whether it found one.
func putFree(bk []uint32, gen, v uint32) bool {
	for i, t := range bk {
		if t == 0 || (gen-t)&traceTagMask >= traceGens {
			bk[i] = v
			return true
		}
	}
	return false
}

// oldestOf returns the slot of buckets b1 and b2, full of live traces,
// whose trace is the oldest.
func (s *shard) oldestOf(b1, b2 int, gen uint32) int {
	oldest, age := b1*traceBucket, uint32(0)
	for _, b := range [2]int{b1, b2} {
		for i, t := range s.bucketAt(b) {
			if a := (gen - t) & traceTagMask; a > age {
				oldest, age = b*traceBucket+i, a
			}
		}
	}
	return oldest
}

// traceFill returns the traces a generation holds: a (traceGens+1)-th of
// the slots, so that the live generations leave one slot in traceGens+1
// free.
func (s *shard) traceFill() uint32 { return uint32(max(len(s.traces)/(traceGens+1), 1)) }

// recallInShard looks for a trace of the key of hash h, which has no entry,
// and clears it: found reports one, and lost that the entry it traces
// would still be live at now, which Lost counts.
func (s *shard) recallInShard(h uint64, now func() int64) (found, lost bool) {
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

// clearTracesInShard forgets every trace: for a flush.
func (s *shard) clearTracesInShard() {
	hd := s.hdr()
	clear(s.traces)
	hd.TraceGen, hd.TraceFill, hd.TraceSwept = 0, 0, 0
	clear(hd.TraceExp[:])
}

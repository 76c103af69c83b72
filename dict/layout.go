package dict

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// A shard (shm.Zone.Shard(i)), offsets relative to its first byte, drawn for
// a shard of 64 KiB (shm.MinShardSize) with an index of 8 slots:
//
//	0              320               352     384                  3648                   65536
//	+--------------+-----------------+-------+--------------------+---------- ... -------+
//	| shard header | index [8]uint32 | (pad) | traces [816]uint32 | arena                |
//	+--------------+-----------------+-------+--------------------+---------- ... -------+
//	               indexOff                  traceOffset(8)       arenaOffset(8, 65536) ShardSize
//
// The header is shardHdrSize bytes, the index IndexSize slots of slotSize
// bytes, and the pad aligns what follows to arenaAlign; an index of 16 slots
// or more ends aligned, with no pad. The traces are the shard's memory of
// keys evicted while live (traces.go): traceBuckets(ShardSize) buckets of
// traceBucket uint32 slots, a cache line each, about a twentieth of the
// shard. The arena is a slab region (slab/layout.go):
// the slab's header is at arena offset 0, so no chunk is ever at 0 and 0 is
// nil; every slab page starts with slab.PageHdr (8) bytes that no chunk
// covers, the page's lock word (slab.PageLock), and its chunks follow. Index
// slots and every link in an entry or a node are offsets into the arena.
//
// The shard header, shardHdr, is five cache lines: the first written only by
// whoever takes or holds Lock, the second by the counts processes add
// atomically and by eviction's own state (under Lock), the rest the state
// of the traces, under Lock:
//
//	0                8                16       20        24        28       32
//	+----------------+----------------+--------+---------+---------+--------+
//	| lock           | seq            | drop   |queueHead|queueTail| count  |
//	+----------------+----------------+--------+---------+---------+--------+
//	32               40               48               56               64
//	+----------------+----------------+----------------+----------------+
//	| evictions      | expirations    | lockWaits      | recoveries     |
//	+----------------+----------------+----------------+----------------+
//	64               72               80               88               96
//	+----------------+----------------+----------------+----------------+
//	| hits           | misses         | writes         | incrs          |
//	+----------------+----------------+----------------+----------------+
//	96               104        108        112        116     120       128
//	+----------------+----------+----------+----------+-------+---------+
//	| lost           | protTail |protCount | traceGen |movedAt| moves   |
//	+----------------+----------+----------+----------+-------+---------+
//	128                                                                 256
//	+------------------------------------ ... --------------------------+
//	| traceExp [traceGens]uint64                                        |
//	+------------------------------------ ... --------------------------+
//	256        260        264                                           320
//	+----------+----------+-------------- ... --------------------------+
//	| traceFill|traceSwept| (pad)                                       |
//	+----------+----------+-------------- ... --------------------------+
//
// A trace slot is a uint32: a fingerprint of the key's hash in its high
// 32-traceTagBits bits, and the low traceTagBits bits of the generation
// that wrote it below. An empty slot is 0.
//
// An entry is one slab chunk: its header, the key, a pad to 8 bytes and the
// value at valOff(KLen), so that an 8-byte number is aligned. A counter with
// a 13-byte key:
//
//	0              32          45    48        56
//	+--------------+-----------+-----+---------+
//	| entry header | key       |(pad)| value   |
//	+--------------+-----------+-----+---------+
//	                                 valOff    entrySize
//
// The entry's header, entry (entryHdrSize bytes):
//
//	0               4               8               12              16
//	+---------------+---------------+---------------+---------------+
//	| next (bucket) | qPrev         | qNext         | flags         |
//	+---------------+---------------+---------------+---------------+
//	16                              24              28      30  31   32
//	+-------------------------------+---------------+-------+---+----+
//	| ver (version, expiry)         | vLen          | kLen  |tag|bits|
//	+-------------------------------+---------------+-------+---+----+
//
// Next chains the index bucket. QPrev and QNext link the eviction queue, the
// CLOCK queue, in two segments (segments.go): from its head, the protected
// entries, those used again after they were written, down to ProtTail; then
// the probation entries, new ones first, down to its tail, where the hand
// starts. QPrev points toward the head, QNext toward the tail. Ver is version<<expiryBits | expiry, the
// expiry in Unix ms (0 = never). KLen, Tag and Bits share one 4-aligned word,
// bitsWord. A 16-byte-key counter takes 32+16+8 = 56 bytes, a slab class of
// its own, and 4 bytes of index slot.
//
// A list's value is a listHdr (listHdrSize bytes); its elements are nodes,
// each a chunk of its own: a node's header (nodeHdrSize bytes), then its
// data.
//
//	0      4      8      12     16
//	+------+------+------+------+
//	| len  | head | tail |(pad) |
//	+------+------+------+------+
//
//	0      4      8      12   13      16
//	+------+------+------+----+-------+
//	| next | prev | vLen |kind| (pad) |
//	+------+------+------+----+-------+
//
// layout_test.go holds each drawing to its overlay and pins the offsets.

// Layout identifies this layout in the zone header, and the key hash with
// it. A process that hashed keys another way would look for them in the
// wrong buckets. "DIC7" is DIC6 with traces of evicted keys in place of the
// header's 16 ghosts.
const Layout = 0x44494337 // "DIC7": DIC6 (XXH3-64 keys, the two-segment queue) with the traces of evicted keys instead of the header's 16 ghosts

// shardHdr is the overlay of a shard's header, cache lines of its own.
// The first line is written only by changes to the shard's structure, under
// Lock: operations on existing entries and reads leave it clean, so that it
// stays in every core's cache. The second holds the counts that processes
// add to it now and then (stats.go) and the eviction's own state; the
// traces' generations follow.
type shardHdr struct {
	Lock        uint64            // CAS only: 0 or the owner's slot and generation (shm.Zone.Lock)
	Seq         uint64            // under lock, read atomically: odd while Lock is held (doc.go I7)
	Drop        uint32            // under lock: what repair must drop (dropNone, dropUnreachable, or an entry)
	QueueHead   uint32            // under lock: head of the eviction queue: the newest protected entry, else the newest
	QueueTail   uint32            // under lock: tail of the eviction queue: where the CLOCK hand starts
	Count       uint32            // under lock: entries in the index, expired ones included
	Evictions   uint64            // under lock: live entries evicted
	Expirations uint64            // under lock: expired entries reclaimed
	LockWaits   uint64            // under lock: acquisitions that had to wait
	Recoveries  uint64            // under lock: takeovers from a dead owner, each followed by repair
	Hits        uint64            // atomic: reads and increments that found a live key, as processes flush them
	Misses      uint64            // atomic: those that did not
	Writes      uint64            // atomic: successful writes
	Incrs       uint64            // atomic: increments of a live key, each a hit and a write
	Lost        uint64            // under lock, read atomically: new keys whose trace says their evicted entry was still live (Outcome.Lost)
	ProtTail    uint32            // under lock: the last protected entry of the queue, 0 when none is
	ProtCount   uint32            // under lock: the protected entries
	TraceGen    uint32            // under lock: the generation traces are written in (traces.go)
	MovedAt     uint32            // under lock, read atomically: the Unix ms, mod 2^32, of the last try to move an entry to its writer's pages (move.go)
	Moves       uint64            // under lock: entries moved to a page of the process that wrote them (move.go)
	TraceExp    [traceGens]uint64 // under lock: per generation modulo traceGens, the earliest expiry among its traces (0: none has one)
	TraceFill   uint32            // under lock: the traces written in generation TraceGen
	TraceSwept  uint32            // under lock: the bucket of traces the next sweep clears of stale slots
	_           [56]byte          // padding to a whole cache line
}

// Drop values; any other value is the offset of the one entry to drop.
const (
	dropNone        = 0
	dropUnreachable = ^uint32(0) // an allocation is in progress: drop entries the index does not reach
)

// entry is the overlay of an entry's fixed header. "Shard lock" is the
// shard's Lock, "page lock" the lock word of the slab page that holds the
// entry (slab.PageLock). DESIGN.md, sections 6 and 8, says who writes what
// and how readers that take no lock read it.
type entry struct {
	Next  uint32 // shard lock: next entry in the index bucket
	QPrev uint32 // shard lock: queue neighbour toward the head
	QNext uint32 // shard lock: queue neighbour toward the tail
	Flags uint32 // page lock, atomic: user flags
	Ver   uint64 // page lock, atomic: version<<expiryBits | expiry in Unix ms (0 = never)
	VLen  uint32 // shard and page lock, atomic: value bytes
	KLen  uint16 // fixed while linked: key bytes, 1..MaxKeyLen
	Tag   uint8  // fixed while linked: hash bits, compared before the key
	Bits  uint8  // page lock, atomic (bitsWord): the Kind in kindMask (0 = not an entry, set on free), and refBit
}

// The Ver word of an entry: a version in its high bits, odd while a write of
// the entry is in progress (a seqlock that readers validate against), and
// the expiry in the low expiryBits.
const (
	expiryBits = 44                      // Unix ms up to the year 2527
	expiryMask = 1<<expiryBits - 1       // the expiry's bits
	verOne     = uint64(1) << expiryBits // one step of the version
	// maxExpiry is the latest expiry an entry can hold; a later one is
	// stored as this.
	maxExpiry = expiryMask
)

// bitsWord returns the 32-bit word that holds KLen, Tag and Bits, through
// which Bits changes atomically (KLen and Tag do not change while the entry
// is linked).
func (e *entry) bitsWord() *uint32 { return (*uint32)(unsafe.Pointer(&e.KLen)) }

// Bits of entry.Bits.
const (
	kindMask = 0x0f // the value's Kind
	protBit  = 0x40 // in the queue's protected segment (segments.go); changes under the shard's lock
	refBit   = 0x80 // used since the eviction hand last passed (CLOCK)
)

// listHdr is the value of a list entry.
type listHdr struct {
	Len  uint32 // under lock
	Head uint32 // under lock: first node
	Tail uint32 // under lock: last node
	_    uint32 // padding
}

// node is the overlay of a list element's header.
type node struct {
	Next uint32 // under lock
	Prev uint32 // under lock
	VLen uint32 // under lock
	Kind uint8  // under lock: KindBytes, KindInt, KindFloat or KindBool
	_    [3]byte
}

const (
	shardHdrSize = int(unsafe.Sizeof(shardHdr{}))
	indexOff     = shardHdrSize
	slotSize     = 4
	arenaAlign   = 64

	entryHdrSize = int(unsafe.Sizeof(entry{}))
	listHdrSize  = int(unsafe.Sizeof(listHdr{}))
	nodeHdrSize  = int(unsafe.Sizeof(node{}))

	// MaxKeyLen is the longest key.
	MaxKeyLen = 1<<16 - 1
)

var (
	_ [shardHdrSize - 320]struct{}
	_ [320 - shardHdrSize]struct{}
	_ [entryHdrSize - 32]struct{}
	_ [32 - entryHdrSize]struct{}
	_ [listHdrSize - 16]struct{}
	_ [nodeHdrSize - 16]struct{}
	_ [16 - nodeHdrSize]struct{}
)

// traceOffset returns where a shard's traces start for an index of n
// slots: the index's end, aligned to arenaAlign.
func traceOffset(n int) int {
	return (indexOff + n*slotSize + arenaAlign - 1) / arenaAlign * arenaAlign
}

// traceBuckets returns how many buckets of traces a shard of size bytes
// holds: a traceShare-th of it, at least one, at most maxTraceBuckets.
func traceBuckets(size int) int {
	return min(max(size/traceShare/traceBucketSize, 1), maxTraceBuckets)
}

// arenaOffset returns where a shard of size bytes starts its arena for an
// index of n slots: after its traces.
func arenaOffset(n, size int) int {
	return traceOffset(n) + traceBuckets(size)*traceBucketSize
}

// valOff returns the offset of the value from the start of an entry.
func valOff(klen int) int { return (entryHdrSize + klen + 7) &^ 7 }

// entrySize returns the bytes an entry with this key and value length needs.
func entrySize(klen, vlen int) int { return valOff(klen) + vlen }

func (s *shard) hdr() *shardHdr { return s.h }

// shardHdrAt returns the overlay of a shard's header.
func shardHdrAt(mem []byte) *shardHdr { return (*shardHdr)(unsafe.Pointer(&mem[0])) }

// entryAt returns the entry at off; off must have passed okEntry.
func (s *shard) entryAt(off uint32) *entry {
	return (*entry)(unsafe.Pointer(&s.arena[off]))
}

// keyOf returns the entry's key bytes, capped. The entry must have passed
// okBytes.
func (s *shard) keyOf(off uint32, e *entry) []byte {
	k := int(off) + entryHdrSize
	n := k + int(e.KLen)
	return s.arena[k:n:n]
}

// valueOf returns the entry's value bytes, capped. The entry must have
// passed okBytes.
func (s *shard) valueOf(off uint32, e *entry) []byte {
	v := int(off) + valOff(int(e.KLen))
	n := v + int(e.VLen)
	return s.arena[v:n:n]
}

// num returns a pointer to the 8-byte number of an entry that passed okBytes
// with VLen 8; valOff is 8-aligned and the arena is 64-aligned.
func (s *shard) num(off uint32, e *entry) *uint64 {
	return (*uint64)(unsafe.Pointer(&s.arena[int(off)+valOff(int(e.KLen))]))
}

// Reads that take no lock load every byte of the zone they use with
// sync/atomic (DESIGN.md, section 8), 8 bytes at a time. The arena starts
// 8-aligned and its length is a multiple of 8 (shm.ShardAlign, arenaAlign);
// an entry starts 8-aligned (okEntry), and so do its key and its value
// (valOff); a chunk's size is a multiple of 8 (slab). So the aligned words
// that cover a key or a value lie in its entry's chunk, and a range of the
// arena that ends inside it is covered by words inside it.

// entryIn returns the entry at off of arena, a shard's; off must be
// 8-aligned, with room for the entry's header. For findOptimistic, which
// keeps the arena in a local.
func entryIn(arena []byte, off uint32) *entry {
	return (*entry)(unsafe.Pointer(&arena[off]))
}

// loadBytes copies the n bytes at off of arena, which writers may be
// changing, to dst with atomic loads of the words that cover them, and
// returns dst[:n:n]. off must be 8-aligned and off+n at most len(arena);
// dst must have room for n bytes.
func loadBytes(dst, arena []byte, off, n int) []byte {
	src := arena[off : off+(n+7)&^7]
	p := unsafe.Pointer(unsafe.SliceData(src))
	dst = dst[:n:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		binary.NativeEndian.PutUint64(dst[i:], atomic.LoadUint64((*uint64)(unsafe.Add(p, i))))
	}
	if i < n {
		w := atomic.LoadUint64((*uint64)(unsafe.Add(p, i)))
		for j := 0; i < n; i, j = i+1, j+1 {
			dst[i] = byteOf(w, j)
		}
	}
	return dst
}

// loadByte returns the byte at off of arena, 8-aligned, with an atomic
// load of the word that begins there.
func loadByte(arena []byte, off int) byte {
	return byteOf(atomic.LoadUint64((*uint64)(unsafe.Pointer(&arena[off : off+8][0]))), 0)
}

// keyWords reports whether the len(key) bytes at k of arena, a key in the
// zone, are key's, for a key of 8 bytes or more on a machine that loads
// unaligned words (unalignedWords); keyIsShort answers for other keys. It
// compares word by word, each word of the zone loaded atomically and each
// of key loaded unaligned. k must be 8-aligned and k+len(key) at most
// len(arena). It is small enough to be inlined in findOptimistic's loop.
func keyWords(arena []byte, k int, key string) bool {
	// The caller checked k+len(key) against the arena, whose length is a
	// multiple of 8: the words up to it rounded up are in the arena.
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(arena)), k)
	q := unsafe.Pointer(unsafe.StringData(key))
	n, i := len(key), 0
	for ; i < n-8; i += 8 {
		if atomic.LoadUint64((*uint64)(unsafe.Add(p, i))) != *(*uint64)(unsafe.Add(q, i)) {
			return false
		}
	}
	// The last 1 to 8 bytes: the zone's from the word at i, key's from its
	// last 8 bytes.
	return tailIs(atomic.LoadUint64((*uint64)(unsafe.Add(p, i))), *(*uint64)(unsafe.Add(q, n-8)), uint(64-8*(n-i)))
}

// keyIsShort is keyWords for a key under 8 bytes, or for any key on a
// machine that loads only aligned words. An empty key compares no byte,
// even at the arena's end.
func keyIsShort(arena []byte, k int, key string) bool {
	n := len(key)
	switch {
	case n == 0:
		return true
	case n >= 8:
		return keyIsBytes(arena, k, key)
	}
	w := atomic.LoadUint64((*uint64)(unsafe.Pointer(&arena[k : k+8][0])))
	for j := 0; j < n; j++ {
		if byteOf(w, j) != key[j] {
			return false
		}
	}
	return true
}

// keyIsBytes is keyWords for a machine that loads only aligned words.
func keyIsBytes(arena []byte, k int, key string) bool {
	var b [8]byte
	for i := 0; i < len(key); i += 8 {
		binary.NativeEndian.PutUint64(b[:], atomic.LoadUint64((*uint64)(unsafe.Pointer(&arena[k+i : k+i+8][0]))))
		if string(b[:min(8, len(key)-i)]) != key[i:min(i+8, len(key))] {
			return false
		}
	}
	return true
}

// unalignedWords: the machine loads a word from any address as fast as
// from an aligned one.
const unalignedWords = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" || runtime.GOARCH == "386" ||
	runtime.GOARCH == "ppc64le" || runtime.GOARCH == "ppc64" || runtime.GOARCH == "s390x"

// numAt returns a pointer to the 8-byte number at arena offset vo, which an
// optimistic reader computed from the key it looked up (valOff(len(key))) and
// bounds-checked: not from the entry's KLen, which a writer may be changing
// under it.
func (s *shard) numAt(vo int) *uint64 {
	return (*uint64)(unsafe.Pointer(&s.arena[vo]))
}

// listOf returns the list header of a list entry that passed okBytes.
func (s *shard) listOf(off uint32, e *entry) *listHdr {
	return (*listHdr)(unsafe.Pointer(&s.arena[int(off)+valOff(int(e.KLen))]))
}

func (s *shard) nodeAt(off uint32) *node { return (*node)(unsafe.Pointer(&s.arena[off])) }

func (s *shard) nodeData(off uint32, n *node) ([]byte, bool) {
	d := int(off) + nodeHdrSize
	if d+int(n.VLen) > len(s.arena) {
		return nil, false
	}
	return s.arena[d : d+int(n.VLen)], true
}

// indexSlots views a shard's index as a slice of slots.
func indexSlots(mem []byte, n int) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(&mem[indexOff])), n)
}

// traceSlots views the traces of a shard, mem, with an index of n slots.
func traceSlots(mem []byte, n int) []uint32 {
	k := traceBuckets(len(mem)) * traceBucket
	off := traceOffset(n)
	_ = mem[off : off+k*4] // bounds
	return unsafe.Slice((*uint32)(unsafe.Pointer(&mem[off])), k)
}

// alignedBytes returns n zeroed bytes of this process aligned for the
// overlays' 64-bit words, to hold a copy of a shard (snapshot.go).
func alignedBytes(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

// stringBytes views a string's bytes without copying; they must not change.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// bytesString views bytes as a string without copying; they must not change
// while the string is in use.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Offsets of the fields a lock-free read of a list loads (walklive.go).
const (
	listLenOff, listHeadOff  = int(unsafe.Offsetof(listHdr{}.Len)), int(unsafe.Offsetof(listHdr{}.Head))
	nodeNextOff, nodeVLenOff = int(unsafe.Offsetof(node{}.Next)), int(unsafe.Offsetof(node{}.VLen))
	nodeKindOff              = int(unsafe.Offsetof(node{}.Kind))
)

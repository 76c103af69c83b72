package dict

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/shmzone/shmzone/shm"
)

// The seed corpus of FuzzOpen: the seed builder and fuzzSeeds, every kind
// of damage aimed at the base zone's known offsets.

// Slab layout constants for aiming seeds (slab/layout.go pins them): the
// header, the class heads, then a 48-byte descriptor per page.
const (
	slabNPagesOff   = 8
	slabPagesOffOff = 12
	slabFreeRunsOff = 16
	slabClassHeads  = 56
	slabDescStart   = (slabClassHeads + 47*4 + 7) &^ 7
	slabDescSize    = 48
)

// A seed is a fuzz input under construction.
type seed []byte

func newSeed(flags byte) seed { return seed{flags} }

// put patches b at off.
func (s seed) put(off int, b ...byte) seed {
	s = append(s, byte(off), byte(off>>8), byte(off>>16), byte(len(b)))
	return append(s, b...)
}

func (s seed) u8(off int, v uint8) seed { return s.put(off, v) }

func (s seed) u16(off int, v uint16) seed {
	return s.put(off, binary.NativeEndian.AppendUint16(nil, v)...)
}

func (s seed) u32(off int, v uint32) seed {
	return s.put(off, binary.NativeEndian.AppendUint32(nil, v)...)
}

func (s seed) u64(off int, v uint64) seed {
	return s.put(off, binary.NativeEndian.AppendUint64(nil, v)...)
}

// Offsets of the fields of an entry and a shard header (layout.go).
const (
	eNext  = int(unsafe.Offsetof(entry{}.Next))
	eQPrev = int(unsafe.Offsetof(entry{}.QPrev))
	eQNext = int(unsafe.Offsetof(entry{}.QNext))
	eVer   = int(unsafe.Offsetof(entry{}.Ver))
	eVLen  = int(unsafe.Offsetof(entry{}.VLen))
	eKLen  = int(unsafe.Offsetof(entry{}.KLen))
	eTag   = int(unsafe.Offsetof(entry{}.Tag))
	eKind  = int(unsafe.Offsetof(entry{}.Bits)) // the Kind and refBit

	hLock      = int(unsafe.Offsetof(shardHdr{}.Lock))
	hDrop      = int(unsafe.Offsetof(shardHdr{}.Drop))
	hQueueHead = int(unsafe.Offsetof(shardHdr{}.QueueHead))
	hQueueTail = int(unsafe.Offsetof(shardHdr{}.QueueTail))
	hCount     = int(unsafe.Offsetof(shardHdr{}.Count))
)

// fuzzSeeds returns the seed corpus: every kind of damage the fuzz target
// must survive, aimed at the base zone's known offsets.
func fuzzSeeds(tb testing.TB, b *baseZone) [][]byte {
	tb.Helper()
	hdr := b.hdr
	shardAt := func(i int) int { return int(hdr.ShardOff) + i*int(hdr.ShardSize) }
	// rel turns an absolute offset into the arena offset stored in links.
	rel := func(key string, abs int) uint32 { return uint32(abs - b.arena[b.shard[key]]) }
	ent := func(key string) int { return b.entry[key] }
	off := func(key string) uint32 { return rel(key, ent(key)) }
	sh := func(key string) int { return shardAt(b.shard[key]) }
	le := func(off int) uint32 { return binary.NativeEndian.Uint32(b.bytes[off:]) }
	// desc returns the absolute offset of the descriptor of page p of a shard.
	desc := func(shard, p int) int { return b.arena[shard] + slabDescStart + p*slabDescSize }
	// pageOf returns the shard's page that holds a key's entry.
	pageOf := func(key string) int { return (ent(key) - b.pages[b.shard[key]]) / int(hdr.PageSize) }
	// list returns the absolute offset of a list entry's listHdr.
	list := func(key string) int { return ent(key) + valOff(len(key)) }
	arenaLen := int(hdr.ShardSize) - arenaOffset(hdr.IndexSize, int(hdr.ShardSize))
	big, n0, s0, l0, l1 := "big1", "n0", "s0", "L0", "L1"

	var seeds []seed
	add := func(s ...seed) { seeds = append(seeds, s...) }
	add(newSeed(0), newSeed(fuzzLater))

	// The header: its fields, with and without a fixed checksum.
	for _, f := range []struct {
		off int
		v   uint32
	}{
		{0, 0x4f4f4f4f}, {8, 2}, {12, 0x04030201}, {16, 0x12345678}, {20, 1024}, {20, 65536},
		{32, 1}, {32, 4}, {36, 512}, {36, 2048}, {36, 1 << 20}, {48, 2 * shm.MinShardSize},
		{56, 1}, {64, 2}, {hdrChecksumOff, 0},
	} {
		add(newSeed(0).u32(f.off, f.v), newSeed(fuzzResum).u32(f.off, f.v))
	}
	// One shard of twice the size: consistent geometry, other shard layout.
	add(newSeed(fuzzResum).u32(32, 1).u64(48, uint64(2*hdr.ShardSize)))
	// Another seed: every key hashes elsewhere.
	add(newSeed(fuzzResum).u64(hdrSeedOff, 42))

	// Shard headers: locks of dead owners, unfinished writes, LRU ends,
	// counts.
	for i := 0; i < hdr.Shards; i++ {
		add(
			newSeed(0).u64(shardAt(i)+hLock, 1<<22+1),
			newSeed(0).u32(shardAt(i)+hDrop, dropUnreachable),
			newSeed(0).u32(shardAt(i)+hDrop, 0x1238),
			newSeed(0).u32(shardAt(i)+hQueueHead, 0xfffffff8),
			newSeed(0).u32(shardAt(i)+hQueueTail, 0xfffffff8),
			newSeed(0).u32(shardAt(i)+hQueueTail, 13),
			newSeed(0).u32(shardAt(i)+hCount, 0xffffffff),
			newSeed(0).put(shardAt(i), make([]byte, 128)...),
		)
	}
	add(newSeed(0).u32(sh(n0)+hDrop, off(n0)), newSeed(0).u32(sh(l0)+hDrop, off(l0)))

	// Index slots: out of bounds, misaligned, at the arena's end, into the
	// slab header, into another entry, at themselves.
	for _, key := range []string{n0, s0, l0, big, "e0"} {
		slot := b.slot[key]
		add(
			newSeed(0).u32(slot, 0xfffffff8),
			newSeed(0).u32(slot, uint32(arenaLen)),
			newSeed(0).u32(slot, uint32(arenaLen-entryHdrSize)),
			newSeed(0).u32(slot, off(key)+4),
			newSeed(0).u32(slot, off(key)+1),
			newSeed(0).u32(slot, 8),
			newSeed(0).u32(slot, off(key)+uint32(valOff(len(key)))),
			newSeed(0).u32(slot, off("s1")),
			newSeed(0).u32(slot, off(big)),
			newSeed(0).put(slot, make([]byte, 64)...),
		)
	}
	// Every slot of shard 0's index pointing at one entry.
	{
		s := newSeed(0)
		for i := 0; i < 64; i++ {
			s = s.u32(shardAt(0)+indexOff+i*slotSize, 64)
		}
		add(s)
	}
	// An entry copied to the arena's end and indexed there: in-place writes
	// must not run past the arena.
	for _, key := range []string{"b1", "b2", n0, "t0"} {
		size := entrySize(len(key), len(fuzzSmallValue(key)))
		switch key {
		case n0:
			size = entrySize(len(key), 8)
		case "t0":
			size = entrySize(len(key), 1)
		}
		at := arenaLen - (size+7)&^7
		body := b.bytes[ent(key) : ent(key)+size]
		abs := b.arena[b.shard[key]] + at
		add(newSeed(0).put(abs, body...).u32(b.slot[key], uint32(at)).u32(abs+eNext, 0))
	}

	// Chains: an entry whose next is itself, two entries in a cycle.
	for _, key := range []string{n0, s0, l0, "e1"} {
		add(newSeed(0).u32(ent(key)+eNext, off(key)))
		add(newSeed(0).u32(ent(key)+eNext, 0xfffffff8))
		add(newSeed(0).u32(ent(key)+eNext, off(key)+2))
	}
	add(newSeed(0).u32(ent("n1")+eNext, off("n2")).u32(ent("n2")+eNext, off("n1")).u32(b.slot["n1"], off("n1")))

	// LRU: self links, cycles, out of bounds, the tail's prev at itself.
	for _, key := range []string{n0, s0, l1} {
		add(
			newSeed(0).u32(ent(key)+eQNext, off(key)),
			newSeed(0).u32(ent(key)+eQPrev, off(key)),
			newSeed(0).u32(ent(key)+eQPrev, off(key)).u32(ent(key)+eQNext, off(key)),
			newSeed(0).u32(ent(key)+eQPrev, 0xfffffff8),
			newSeed(0).u32(ent(key)+eQNext, 0x7),
			newSeed(0).u32(sh(key)+hQueueTail, off(key)).u32(ent(key)+eQPrev, off(key)),
			newSeed(0).u32(sh(key)+hQueueHead, off(key)).u32(ent(key)+eQNext, off(key)),
		)
	}
	// The entry being replaced (pinned) in a cycle at the tail, a count that
	// lies, and no free pages: the eviction walk must stay bounded.
	for _, key := range []string{"n1", s0} {
		a := b.arena[b.shard[key]]
		add(newSeed(0).u32(sh(key)+hCount, 0xffffffff).u32(sh(key)+hQueueTail, off(key)).
			u32(ent(key)+eQPrev, off(key)).u32(a+slabFreeRunsOff, 0))
	}
	add(newSeed(0).u32(ent("n3")+eQPrev, off("n4")).u32(ent("n4")+eQPrev, off("n3")).u32(sh("n3")+hQueueTail, off("n3")))

	// Entry headers: huge or wrong lengths, bad kinds, zero key, expiry.
	for _, key := range []string{n0, s0, "b1", l0, big, "t0", "f0"} {
		add(
			newSeed(0).u16(ent(key)+eKLen, 0xffff),
			newSeed(0).u16(ent(key)+eKLen, 0),
			newSeed(0).u32(ent(key)+eVLen, 0xffffffff),
			newSeed(0).u32(ent(key)+eVLen, 0x7fffffff),
			newSeed(0).u32(ent(key)+eVLen, 4),
			newSeed(0).u32(ent(key)+eVLen, 16),
			newSeed(0).u32(ent(key)+eVLen, 3000),
			newSeed(0).u8(ent(key)+eKind, 0),
			newSeed(0).u8(ent(key)+eKind, 9),
			newSeed(0).u8(ent(key)+eKind, uint8(KindList)),
			newSeed(0).u8(ent(key)+eKind, uint8(KindBytes)),
			newSeed(0).u8(ent(key)+eKind, uint8(KindInt)),
			newSeed(0).u8(ent(key)+eKind, uint8(KindBool)),
			newSeed(0).u8(ent(key)+eKind, refBit|uint8(KindInt)),
			newSeed(0).u8(ent(key)+eKind, 0xff),
			newSeed(0).u8(ent(key)+eKind, 0x40|uint8(KindBytes)),
			newSeed(0).u8(ent(key)+eTag, 0),
			newSeed(0).u64(ent(key)+eVer, 1),
			newSeed(0).u64(ent(key)+eVer, 1<<63),
			newSeed(0).u64(ent(key)+eVer, verOne),
			newSeed(0).put(ent(key), make([]byte, 48)...),
		)
	}

	// Lists: heads and tails out of bounds, misaligned, at the entry, at
	// themselves; node links in cycles; lengths that lie.
	for _, key := range []string{l0, l1, "L2"} {
		lh := list(key)
		head := le(lh + 4)
		tail := le(lh + 8)
		headAbs := b.arena[b.shard[key]] + int(head)
		add(
			newSeed(0).u32(lh+4, 0xfffffff8),
			newSeed(0).u32(lh+4, 0x7fff0000),
			newSeed(0).u32(lh+4, head+4),
			newSeed(0).u32(lh+4, off(key)),
			newSeed(0).u32(lh+4, uint32(arenaLen-8)),
			newSeed(0).u32(lh+8, 0xfffffff8),
			newSeed(0).u32(lh+8, off(key)),
			newSeed(0).u32(lh+8, 0),
			newSeed(0).u32(lh, 0),
			newSeed(0).u32(lh, 0xffffffff),
			newSeed(0).u32(lh, 1),
			newSeed(0).u32(headAbs, head),
			newSeed(0).u32(headAbs, tail).u32(b.arena[b.shard[key]]+int(tail), head),
			newSeed(0).u32(headAbs, 0xfffffff8),
			newSeed(0).u32(headAbs+4, head),
			newSeed(0).u32(headAbs+8, 0xffffffff),
			newSeed(0).u8(headAbs+12, 0),
			newSeed(0).u8(headAbs+12, 9),
			newSeed(0).u32(headAbs, off(key)),
			newSeed(0).u32(headAbs, off(s0)),
		)
	}

	// Slab: header words, class heads, descriptors of the pages that hold
	// entries, free runs, runs whose bodies lie.
	for i := 0; i < hdr.Shards; i++ {
		a := b.arena[i]
		add(
			newSeed(0).u32(a, 0),
			newSeed(0).u32(a+4, 512),
			newSeed(0).u32(a+slabNPagesOff, 1000),
			newSeed(0).u32(a+slabPagesOffOff, 64),
			newSeed(0).u32(a+slabFreeRunsOff, 0xffffffff),
			newSeed(0).u32(a+slabFreeRunsOff, 1),
			newSeed(0).u32(a+slabFreeRunsOff+4, 0xffffffff),
			newSeed(0).u64(a+slabFreeRunsOff+8, 0),
			newSeed(0).put(a+slabClassHeads, make([]byte, 47*4)...),
		)
		for c := 0; c < 47; c += 6 {
			add(newSeed(0).u32(a+slabClassHeads+4*c, 1), newSeed(0).u32(a+slabClassHeads+4*c, 0xffff))
		}
		np := int(binary.NativeEndian.Uint32(b.bytes[a+slabNPagesOff:]))
		for p := 0; p < np; p++ {
			dp := desc(i, p)
			add(
				newSeed(0).u8(dp+12, 0),
				newSeed(0).u8(dp+12, 9),
				newSeed(0).u8(dp+12, 4).u32(dp+8, 3),
				newSeed(0).u32(dp+8, 0xffffffff),
				newSeed(0).u32(dp+8, 0),
				newSeed(0).u8(dp+13, 200),
				newSeed(0).u8(dp+13, 0),
				newSeed(0).u16(dp+14, 0xffff),
				newSeed(0).u16(dp+14, 0),
				newSeed(0).put(dp+16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
				newSeed(0).put(dp+16, make([]byte, 32)...),
				newSeed(0).u32(dp, uint32(p+1)),
				newSeed(0).u32(dp+4, uint32(p+1)),
				newSeed(0).u32(dp, 0xffff),
			)
		}
		// A run of 3 pages from page 0, over pages of other kinds.
		add(newSeed(0).u8(desc(i, 0)+12, 4).u32(desc(i, 0)+8, 3))
		// A free run that covers allocated pages.
		add(newSeed(0).u8(desc(i, 0)+12, 1).u32(desc(i, 0)+8, uint32(np)).u32(a+slabFreeRunsOff, 1))
	}
	// The run that holds big1: body pages of another kind or head.
	bp := pageOf(big)
	bs := b.shard[big]
	add(
		newSeed(0).u8(desc(bs, bp+1)+12, 3),
		newSeed(0).u8(desc(bs, bp+1)+12, 3).u8(desc(bs, bp+1)+13, 6).put(desc(bs, bp+1)+16, 1),
		newSeed(0).u32(desc(bs, bp+1)+8, 0),
		newSeed(0).u32(desc(bs, bp)+8, 1),
		newSeed(0).u32(desc(bs, bp)+8, 40),
	)

	// Garbage over whole regions.
	for i := 0; i < hdr.Shards; i++ {
		junk := make([]byte, 255)
		for j := range junk {
			junk[j] = byte(j*131 + 7)
		}
		add(
			newSeed(0).put(b.arena[i], junk...),
			newSeed(0).put(b.pages[i], junk...),
			newSeed(0).put(shardAt(i)+indexOff, junk...),
			newSeed(0).put(b.arena[i]+slabDescStart, junk...),
		)
	}

	out := make([][]byte, len(seeds))
	for i, s := range seeds {
		out[i] = s
	}
	return out
}

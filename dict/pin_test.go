package dict

import (
	"testing"
	"unsafe"
)

// keyIs must answer as a byte-wise comparison does, for every length across
// its word and byte paths, for a difference at every position, and for keys
// at every alignment (a key's bytes in the zone are aligned; the caller's
// are not).
func TestKeyIsComparesEveryByte(t *testing.T) {
	zone := make([]uint64, 16) // aligned, as a key in an arena
	buf := make([]byte, 8+len(zone)*8)
	for n := 1; n <= 40; n++ {
		for align := 0; align < 8; align++ {
			b := buf[align : align+n]
			for i := range b {
				b[i] = byte(i*31 + n)
			}
			key := unsafe.String(&b[0], n) // unaligned: no copy
			z := unsafe.Slice((*byte)(unsafe.Pointer(&zone[0])), n)
			copy(z, b)
			if !keyIs(unsafe.Pointer(&zone[0]), key) {
				t.Fatalf("len %d align %d: equal keys differ", n, align)
			}
			for i := 0; i < n; i++ {
				for _, bit := range []byte{0x01, 0x80} {
					z[i] ^= bit
					if keyIs(unsafe.Pointer(&zone[0]), key) {
						t.Fatalf("len %d align %d: byte %d flipped by %#x, keys still equal", n, align, i, bit)
					}
					z[i] ^= bit
				}
			}
		}
	}
}

// An entry whose key is empty, which only a corrupt zone holds, may end the
// arena: a lookup of the empty key (copyLive's of such an entry) must
// compare no byte and not index one past the arena.
func TestFindOptimisticEmptyKeyAtArenaEnd(t *testing.T) {
	const h = uint64(0x0102030405060708)
	words := make([]uint64, 8) // a 64-byte arena, aligned
	arena := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 64)
	off := uint32(64 - entryHdrSize) // the entry's header ends the arena
	e := (*entry)(unsafe.Pointer(&arena[off]))
	e.KLen, e.Tag, e.Bits = 0, tagOf(h), uint8(KindInt)
	s := &shard{shardFields: shardFields{
		h:     new(shardHdr),
		index: []uint32{off},
		arena: arena,
		steps: 4,
	}}
	got, _, ok := s.findOptimistic("", h)
	if !ok || got != off {
		t.Fatalf("findOptimistic(\"\") = %#x, ok %v; want the entry at %#x", got, ok, off)
	}
}

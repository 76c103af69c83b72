package dict

import (
	"testing"
	"unsafe"
)

// keyWords and keyIsShort must answer as a byte-wise comparison does, for
// every length they take, for a difference at every position, for keys at
// every alignment (a key's bytes in the zone are aligned; the caller's are
// not), and whatever bytes follow the key in its last word. So must
// keyIsBytes, their path on a machine that loads only aligned words.
func TestKeyIsComparesEveryByte(t *testing.T) {
	zone := make([]uint64, 16) // aligned, as a key in an arena
	arena := unsafe.Slice((*byte)(unsafe.Pointer(&zone[0])), len(zone)*8)
	buf := make([]byte, 8+len(arena))
	for n := 1; n <= 40; n++ {
		for align := 0; align < 8; align++ {
			b := buf[align : align+n]
			for i := range b {
				b[i] = byte(i*31 + n)
			}
			key := unsafe.String(&b[0], n) // unaligned: no copy
			for i := range arena {
				arena[i] = byte(0xa5 ^ i) // what follows the key
			}
			z := arena[:n]
			copy(z, b)
			keyIs := func() bool {
				return (n < 8 || keyWords(arena, 0, key)) && keyIsShort(arena, 0, key) && keyIsBytes(arena, 0, key)
			}
			keyIsNot := func() bool {
				return (n >= 8 && keyWords(arena, 0, key)) || keyIsShort(arena, 0, key) || keyIsBytes(arena, 0, key)
			}
			if !keyIs() {
				t.Fatalf("len %d align %d: equal keys differ", n, align)
			}
			for i := 0; i < n; i++ {
				for _, bit := range []byte{0x01, 0x80} {
					z[i] ^= bit
					if keyIsNot() {
						t.Fatalf("len %d align %d: byte %d flipped by %#x, keys still equal", n, align, i, bit)
					}
					z[i] ^= bit
				}
			}
		}
	}
}

// loadBytes must copy what copy does, for every length and offset, and
// return a slice with no spare capacity.
func TestLoadBytesCopiesEveryByte(t *testing.T) {
	zone := make([]uint64, 8)
	arena := unsafe.Slice((*byte)(unsafe.Pointer(&zone[0])), len(zone)*8)
	for i := range arena {
		arena[i] = byte(i*7 + 1)
	}
	dst := make([]byte, len(arena)+8)
	for off := 0; off < len(arena); off += 8 {
		for n := 0; off+n <= len(arena); n++ {
			clear(dst)
			got := loadBytes(dst, arena, off, n)
			if string(got) != string(arena[off:off+n]) || cap(got) != n {
				t.Fatalf("loadBytes(off %d, n %d) = %x (cap %d), want %x (cap %d)", off, n, got, cap(got), arena[off:off+n], n)
			}
			if dst[n] != 0 {
				t.Fatalf("loadBytes(off %d, n %d) wrote dst[%d]", off, n, n)
			}
		}
		if got := loadByte(arena, off); got != arena[off] {
			t.Fatalf("loadByte(off %d) = %#x, want %#x", off, got, arena[off])
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

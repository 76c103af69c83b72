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

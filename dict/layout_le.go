//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package dict

// Where KLen, Tag and Bits sit in bitsWord on a little-endian machine:
// constants, so that the hot paths shift by an immediate (TestLayoutEntry
// checks them against the struct).
const (
	klenShift = 0
	tagShift  = 16
	bitsShift = 24
)

// The bytes of a word as the zone holds it, first byte lowest: byteOf
// returns byte j (0..7) of w, and byteAt places b as byte j.
func byteOf(w uint64, j int) byte { return byte(w >> (8 * j)) }
func byteAt(b byte, j int) uint64 { return uint64(b) << (8 * j) }

// tailIs reports whether the first 8-s/8 bytes of the word w are the last
// 8-s/8 bytes of the word k.
func tailIs(w, k uint64, s uint) bool { return (w^k>>s)<<s == 0 }

// leWord returns w, a word loaded from the zone, as the little-endian
// number its bytes spell, or such a number as the word to store.
func leWord(w uint64) uint64 { return w }

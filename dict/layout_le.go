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
// returns byte j (0..7) of w, byteAt places b as byte j, firstBytes keeps
// w's first r bytes (1..7), and lastBytes moves w's last r bytes to the
// front.
func byteOf(w uint64, j int) byte       { return byte(w >> (8 * j)) }
func byteAt(b byte, j int) uint64       { return uint64(b) << (8 * j) }
func firstBytes(w uint64, r int) uint64 { return w & (1<<(8*r) - 1) }
func lastBytes(w uint64, r int) uint64  { return w >> (64 - 8*r) }

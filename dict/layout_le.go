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

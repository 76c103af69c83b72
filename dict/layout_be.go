//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package dict

// Where KLen, Tag and Bits sit in bitsWord on a big-endian machine (mips,
// mips64, ppc64, s390x): see layout_le.go.
const (
	klenShift = 16
	tagShift  = 8
	bitsShift = 0
)

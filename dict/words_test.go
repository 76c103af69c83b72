package dict_test

import "unsafe"

// word64 returns a pointer to the 8-byte word at b[off:] of a shared mapping,
// for atomic access by every process that maps it. It panics when the word is
// out of range or misaligned.
func word64(b []byte, off int) *uint64 {
	_ = b[off+7]
	p := unsafe.Pointer(&b[off])
	if uintptr(p)&7 != 0 {
		panic("misaligned 64-bit word")
	}
	return (*uint64)(p)
}

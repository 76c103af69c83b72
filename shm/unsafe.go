package shm

import "unsafe"

// word64 returns a pointer to the 8-byte word at b[off:], for atomic access.
// It panics when the word is out of range or misaligned; callers pass offsets
// derived from layout constants, never offsets read from a file.
func word64(b []byte, off int) *uint64 {
	_ = b[off+7]
	p := unsafe.Pointer(&b[off])
	if uintptr(p)&7 != 0 {
		panic("shm: misaligned 64-bit word")
	}
	return (*uint64)(p)
}

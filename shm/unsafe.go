package shm

import "unsafe"

// Word32 returns a pointer to the 4-byte word at b[off:], for atomic access.
// It panics when the word is out of range or misaligned; callers pass offsets
// derived from layout constants, never offsets read from a file.
func Word32(b []byte, off int) *uint32 {
	_ = b[off+3]
	p := unsafe.Pointer(&b[off])
	if uintptr(p)&3 != 0 {
		panic("shm: misaligned 32-bit word")
	}
	return (*uint32)(p)
}

// Word64 returns a pointer to the 8-byte word at b[off:], for atomic access,
// with the same rules as Word32.
func Word64(b []byte, off int) *uint64 {
	_ = b[off+7]
	p := unsafe.Pointer(&b[off])
	if uintptr(p)&7 != 0 {
		panic("shm: misaligned 64-bit word")
	}
	return (*uint64)(p)
}

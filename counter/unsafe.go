package counter

import "unsafe"

// hintBits is how many top bits of its hash stripe keeps: a number below
// 1<<hintBits, which it scales down to [0, n). 1<<hintBits must be at least
// maxStripes.
const hintBits = 6

// stripe returns the calling goroutine's stripe among n, a power of two no
// larger than maxStripes: a number that stays the same for a goroutine
// from call to call and differs between goroutines. It is the address of a
// variable on the caller's stack, which lives in that goroutine's own
// stack, divided by the smallest stack size (2 KiB) and spread by
// Fibonacci hashing; the index is the hash's top log2(n) bits, so that
// goroutines whose stacks sit next to each other get stripes far apart
// (the low bits of the top six would not do: two adjacent 2 KiB stacks
// then share a stripe of 8). Go has no goroutine-local storage and no
// public per-P index; this is a shift and a multiply. The stripe changes
// when the goroutine's stack is moved or the call depth crosses 2 KiB,
// which only moves later increments to another cell.
//
// The variable is zero-sized so that the compiler stores nothing to take
// its address: a store before the atomic add that follows would make the
// locked add wait for the store buffer to drain. TestStripe checks
// that the address is still a stack address.
func stripe(n int) int {
	var b [0]byte
	sp := uint64(uintptr(unsafe.Pointer(&b)))
	h := (sp >> 11) * 0x9E3779B97F4A7C15 >> (64 - hintBits)
	return int(h * uint64(n) >> hintBits)
}

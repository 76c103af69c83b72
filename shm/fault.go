package shm

import (
	"fmt"
	"runtime/debug"
)

// GuardFaults makes a fault in memory (SIGBUS, SIGSEGV at a non-nil address)
// panic in the calling goroutine instead of crashing the process, and returns
// the previous setting for CatchFault. Use the two together, at the top of a
// function that reads or writes a zone's mapping:
//
//	func inspect(z *shm.Zone) (err error) {
//		defer shm.CatchFault(&err, shm.GuardFaults())
//		…
//	}
//
// A mapped page faults when the zone file was truncated while mapped, or
// when its filesystem cannot back a page of a sparse file.
func GuardFaults() (old bool) { return debug.SetPanicOnFault(true) }

// CatchFault, deferred, restores the setting GuardFaults returned and turns
// the panic of a memory fault at a non-nil address into an error wrapping
// ErrFault, stored in *err. Any other panic goes on. It must be deferred
// directly, as recover requires; guard only code whose non-nil faults can
// come only from zone mappings.
func CatchFault(err *error, old bool) {
	debug.SetPanicOnFault(old)
	r := recover()
	if r == nil {
		return
	}
	if ferr := FaultOf(r); ferr != nil {
		*err = ferr
		return
	}
	panic(r)
}

// FaultOf returns the error, wrapping ErrFault, for r, a value recover
// returned, when r is the panic of a memory fault at a non-nil address (under
// GuardFaults); otherwise nil. It is for callers that must recover in a
// deferred function of their own, as CatchFault does.
func FaultOf(r any) error {
	if f, ok := r.(interface{ Addr() uintptr }); ok && f.Addr() != 0 {
		return fmt.Errorf("%w at %#x: the zone file was truncated while mapped, or its filesystem cannot back it", ErrFault, f.Addr())
	}
	return nil
}

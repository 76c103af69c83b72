package shm

import (
	"fmt"
	"runtime/debug"
)

// GuardFaults makes a memory fault in the calling goroutine panic instead
// of crashing the process. It covers SIGBUS, and SIGSEGV at a non-nil
// address. It returns the previous setting, for CatchFault. Use the two
// together at the top of a function that reads or writes a zone's mapping:
//
//	func inspect(z *shm.Zone) (err error) {
//		defer shm.CatchFault(&err, shm.GuardFaults())
//		…
//	}
//
// A mapped page faults when the zone file was truncated while mapped. It
// also faults when its filesystem cannot back a page of a sparse file.
func GuardFaults() (old bool) { return debug.SetPanicOnFault(true) }

// CatchFault restores the setting that GuardFaults returned. It turns the
// panic of a memory fault at a non-nil address into an error wrapping
// ErrFault, and stores it in *err. Any other panic goes on.
//
// CatchFault must be deferred directly, as recover requires. Guard only
// code whose faults at non-nil addresses can come only from zone mappings.
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

// FaultOf returns an error wrapping ErrFault if r is the panic of a memory
// fault at a non-nil address. r is a value that recover returned. For any
// other r, FaultOf returns nil. Faults panic only under GuardFaults.
// FaultOf is for callers that must recover in a deferred function of their
// own, as CatchFault does.
func FaultOf(r any) error {
	if f, ok := r.(interface{ Addr() uintptr }); ok && f.Addr() != 0 {
		return fmt.Errorf("%w at %#x: the zone file was truncated while mapped, or its filesystem cannot back it", ErrFault, f.Addr())
	}
	return nil
}

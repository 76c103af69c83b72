package dict

import (
	"fmt"
	"runtime/debug"

	"github.com/shmzone/shmzone/shm"
)

// Dict states (Dict.state).
const (
	stateOpen    = iota
	stateClosed  // Close was called
	stateFaulted // a guarded operation faulted in the zone's mapping
)

// usable returns nil for an open Dict, ErrClosed after Close, and the fault
// error after a guarded operation faulted (Options.GuardFaults).
func (d *Dict) usable() error {
	switch d.state.Load() {
	case stateOpen:
		return nil
	case stateFaulted:
		if err := d.fault.Load(); err != nil {
			return *err
		}
	}
	return ErrClosed
}

// writable is usable for a write: it returns ErrReadOnly for a read-only
// view.
func (d *Dict) writable() error {
	if err := d.usable(); err != nil {
		return err
	}
	if d.readOnly {
		return ErrReadOnly
	}
	return nil
}

// catchFault, deferred by a guarded operation (Options.GuardFaults) with
// the setting shm.GuardFaults returned, restores that setting and turns the
// panic of a fault in the zone's mapping into an error in *err; the Dict is
// unusable from then on, as its mapping is. Any other panic goes on.
func (d *Dict) catchFault(err *error, old bool) {
	debug.SetPanicOnFault(old)
	r := recover()
	if r == nil {
		return
	}
	ferr := shm.FaultOf(r)
	if ferr == nil {
		panic(r)
	}
	e := fmt.Errorf("dict: %s: %w", d.z.Path(), ferr)
	d.fault.CompareAndSwap(nil, &e)
	d.state.CompareAndSwap(stateOpen, stateFaulted)
	*err = *d.fault.Load()
}

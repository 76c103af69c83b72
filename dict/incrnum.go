package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// IncrInitNum is IncrInit returning the sum as it is stored, a float64: an
// int's sum exactly (below 2^53), a float's with its fraction, where
// IncrInit truncates it (a float 2.5 less 1 is 1.5, which IncrInit returns
// as 1). The kind stays, as with IncrInit: an int stays an int, a float a
// float, and an absent or expired key becomes the int init+delta with
// initTTL (0 = never). out says what creating it did (Outcome).
// Errors as IncrInit, but for a float sum that no int64 holds (NaN, an
// infinity, beyond ±2^63), which IncrInit refuses: IncrInitNum stores and
// returns it.
func (d *Dict) IncrInitNum(key string, delta, init int64, initTTL time.Duration) (sum float64, out Outcome, err error) {
	if d.guard {
		return d.guardedIncrInitNum(key, delta, init, initTTL)
	}
	_, sum, out, err = d.incrInit(key, delta, init, initTTL, incrNum)
	return sum, out, err
}

// guardedIncrInitNum is IncrInitNum with Options.GuardFaults (as
// guardedIncr).
func (d *Dict) guardedIncrInitNum(key string, delta, init int64, initTTL time.Duration) (sum float64, out Outcome, err error) {
	defer d.catchFault(&err, shm.GuardFaults())
	_, sum, out, err = d.incrInit(key, delta, init, initTTL, incrNum)
	return sum, out, err
}

package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// IncrInitNumTTL is IncrInitNum that also returns the key's TTL after the
// increment. The TTL is what TTL would return then, in whole
// milliseconds. It is 0 for a key that never expires. A key created here
// has initTTL. One call costs what IncrInitNum costs: the TTL comes from
// the entry the increment wrote.
//
// IncrInitNumTTL returns the errors of IncrInitNum.
func (d *Dict) IncrInitNumTTL(key string, delta, init int64, initTTL time.Duration) (sum float64, ttl time.Duration, out Outcome, err error) {
	return d.incrInitNumTTL(key, hashKey(d.seed, key), delta, init, initTTL)
}

// incrInitNumTTL is IncrInitNumTTL of key, whose hash is h.
func (d *Dict) incrInitNumTTL(key string, h uint64, delta, init int64, initTTL time.Duration) (sum float64, ttl time.Duration, out Outcome, err error) {
	if d.guard {
		return d.guardedIncrInitNumTTL(key, h, delta, init, initTTL)
	}
	if initTTL < 0 {
		return 0, 0, out, ErrBadTTL
	}
	// incrInit's steps, here to save a call on a live key.
	var expiry int64
	op := incrOp{i: delta, f: float64(delta), mode: incrNum, exp: &expiry}
	_, sum, found, err := d.incr(key, h, op)
	if err == nil && !found {
		_, sum, out, err = d.createInit(key, h, init, initTTL, op)
	}
	if err != nil {
		return 0, 0, out, err
	}
	return sum, ttlOfExpiry(expiry, d.Now()), out, nil
}

// guardedIncrInitNumTTL is IncrInitNumTTL with Options.GuardFaults (as
// guardedIncr).
func (d *Dict) guardedIncrInitNumTTL(key string, h uint64, delta, init int64, initTTL time.Duration) (sum float64, ttl time.Duration, out Outcome, err error) {
	defer d.catchFault(&err, shm.GuardFaults())
	var expiry int64
	_, sum, out, err = d.incrInit(key, h, init, initTTL, incrOp{i: delta, f: float64(delta), mode: incrNum, exp: &expiry})
	if err != nil {
		return 0, 0, out, err
	}
	return sum, ttlOfExpiry(expiry, d.Now()), out, nil
}

// ttlOfExpiry is the TTL of an entry that ends at expiry and was live just
// now: 0 for none, and at least a millisecond for one whose expiry the
// clock has reached since.
func ttlOfExpiry(expiry, now int64) time.Duration {
	if expiry == 0 {
		return 0
	}
	return msDuration(max(expiry-now, 1))
}

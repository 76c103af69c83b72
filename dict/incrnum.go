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
// initTTL (0 = never). forcible reports evictions made to create it.
// Errors as IncrInit.
func (d *Dict) IncrInitNum(key string, delta, init int64, initTTL time.Duration) (sum float64, forcible bool, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if initTTL < 0 {
		return 0, false, ErrBadTTL
	}
	_, f, found, err := d.incr(key, delta, float64(delta), false)
	if err != nil || found {
		return f, false, err
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	if err := d.lock(s); err != nil {
		return 0, false, err
	}
	defer d.unlock(s)
	// Another process may have created it since: add to it then.
	_, f, found, err = d.incrLocked(s, key, h, delta, float64(delta), false)
	if err != nil || found {
		return f, false, err
	}
	expiry, err := d.expiryFor(initTTL)
	if err != nil {
		return 0, false, err
	}
	forcible, err = d.findStoreLocked(s, key, h, put{v: Int(init + delta), expiry: expiry, evict: true})
	if err != nil {
		return 0, forcible, err
	}
	return float64(init + delta), forcible, nil
}

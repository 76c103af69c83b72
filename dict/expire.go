package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// expireInPage is Expire's entry write. done false: the shard's lock
// decides.
func (d *Dict) expireInPage(s *shard, key string, h uint64, expiry int64) (done bool) {
	off, e, pw, ok := d.pinLive(s, key, h)
	if !ok {
		return false
	}
	e.endWrite(e.beginWrite(), expiry)
	d.unlockCounted(s, key, h, off, pw)
	return true
}

// Expire sets key's TTL from now. A TTL of 0 means never.
//
// Expire returns ErrNotFound if key is absent or expired. It does not bring
// an expired key back.
func (d *Dict) Expire(key string, ttl time.Duration) (err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	expiry, err := d.expiryFor(ttl)
	if err != nil {
		return err
	}
	if err := d.check(key, true); err != nil {
		return err
	}
	h := hashKey(d.seed, key)
	if d.expireInPage(d.shardFor(h), key, h, expiry) {
		return nil
	}
	return d.lockExpire(key, expiry)
}

// lockExpire is Expire under the shard's lock (a function of its own, as
// lockMutate).
func (d *Dict) lockExpire(key string, expiry int64) error {
	s, _, off, err := d.lookup(key, true)
	if err != nil {
		return err
	}
	defer d.unlock(s)
	if off == 0 {
		return ErrNotFound
	}
	e := s.entryAt(off)
	if expired(e, d.clock) {
		return ErrNotFound
	}
	if err := s.drainPage(off); err != nil {
		return d.failInShard(s, err, "page")
	}
	e.setExpiry(expiry)
	d.tally(s, tWrites)
	return nil
}

package dict

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/shmzone/shmzone/shm"
)

// lock takes a shard's lock, or returns ErrLockTimeout (wrapped) when a live
// holder kept it past the Dict's lock timeout; then nothing was changed and
// the caller must not unlock. A read-only view cannot write the zone's lock
// word: its shards lock a word of this process instead (lockw), which orders
// its own goroutines and nothing else.
func (d *Dict) lock(s *shard) error {
	if !d.z.TryLockCounted(s.lockw, s.holds) {
		if _, err := d.lockWait(s); err != nil {
			return err
		}
		return nil // lockWait made Seq odd
	}
	d.beginChange(s)
	return nil
}

// beginChange makes Seq odd for the holder of a shard's lock: readers that
// take no lock see it before any change the holder makes (markOdd). A dead
// holder may have left it odd already.
func (d *Dict) beginChange(s *shard) {
	if !d.readOnly && s.seq()&1 == 0 {
		markOdd(&s.h.Seq, 1)
	}
}

// unlock makes Seq even again and releases the shard's lock.
func (d *Dict) unlock(s *shard) {
	if !d.readOnly {
		atomic.StoreUint64(&s.h.Seq, s.seq()+1)
	}
	shm.UnlockCounted(s.lockw, s.holds)
}

// lockWait waits for a shard's lock, counts the wait, and repairs a shard
// taken over from a dead owner.
func (d *Dict) lockWait(s *shard) (shm.LockResult, error) {
	r, err := d.z.LockWithinCounted(s.lockw, s.holds, d.lockTimeout)
	if err != nil {
		return 0, fmt.Errorf("dict: shard %d: %w after %v", s.id, err, d.lockTimeout)
	}
	if d.readOnly {
		return r, nil
	}
	d.beginChange(s)
	h := s.hdr()
	h.LockWaits++
	if r&shm.LockRecovered != 0 {
		atomic.AddUint64(&h.Recoveries, 1)
		if err := s.repairInShard(); err != nil {
			d.unlock(s)
			return 0, err
		}
	}
	return r, nil
}

// corruptInShard reports corruption found in a shard while holding its lock:
// a writable shard is repaired at once so that the next call finds it sound.
func (d *Dict) corruptInShard(s *shard, what string) error {
	if !d.readOnly {
		atomic.AddUint64(&s.hdr().Recoveries, 1)
		if err := s.repairInShard(); err != nil {
			return fmt.Errorf("dict: shard %d: %w: %s; not repaired: %w", s.id, ErrCorrupt, what, err)
		}
	}
	return fmt.Errorf("dict: shard %d: %w: %s", s.id, ErrCorrupt, what)
}

// failInShard reports an error met while holding a shard's lock: a page
// lock's timeout as it is (nothing was changed), anything else as
// corruption (corruptInShard).
func (d *Dict) failInShard(s *shard, err error, what string) error {
	if errors.Is(err, ErrLockTimeout) {
		return err
	}
	return d.corruptInShard(s, what)
}

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
// taken over from a dead owner. The wait watches Seq: a holder that
// repairs the shard moves it as it goes (advance), and the lock timeout
// counts only the time since Seq last moved under one holder.
func (d *Dict) lockWait(s *shard) (shm.LockResult, error) {
	var progress *uint64
	if !d.readOnly {
		progress = &s.h.Seq
	}
	r, err := d.z.LockWithinWatching(s.lockw, s.holds, d.lockTimeout, progress)
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

// Holds of a shard's lock are bounded by counts of entries, not by the
// shard's size. A walk of a whole shard takes one hold per step
// (stepInShard). A repair cannot let the lock go midway: the shard is
// inconsistent until it ends. It shows its waiters progress instead
// (advance).
const (
	// walkStep is the most entries one step of a walk visits. A bucket's
	// chain is not split between steps, so a chain longer than walkStep
	// is one step of its own.
	walkStep = 256
	// walkBuckets is the most buckets of the index one step looks at.
	walkBuckets = 1024
)

// advance shows the shard's lock waiters that its holder's work goes on.
// It moves Seq by 2, so Seq stays odd (I7). A waiter counts its timeout
// from the last move it saw (shm.Zone.LockWithinWatching). A reader that
// takes no lock retries, as it does whenever Seq is odd. advance does
// nothing when Seq is even: the caller holds no lock of the zone.
func (s *shard) advance() {
	if atomic.LoadUint64(&s.h.Seq)&1 != 0 {
		atomic.AddUint64(&s.h.Seq, 2)
	}
}

// pacer calls advance once every walkStep ticks, for a long work under a
// shard's lock.
type pacer struct {
	s *shard
	n int
}

// tick counts one entry or bucket of work.
func (p *pacer) tick() {
	if p.n++; p.n == walkStep {
		p.n = 0
		p.s.advance()
	}
}

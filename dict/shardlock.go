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
// nothing when Seq is even: the caller holds no lock of the zone. It does
// nothing for a read-only view, whose lock is a word of its own process,
// nor for a copy of a shard.
func (s *shard) advance() {
	if s.lockw == &s.h.Lock && atomic.LoadUint64(&s.h.Seq)&1 != 0 {
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

// A walk of a whole shard of a writable Dict takes the shard's lock once
// per step (stepInShard). A step visits walkStep entries at most, and
// looks at walkBuckets buckets at most. Between steps the lock is free,
// and writers of any process take it. The walk goes from the queue's
// tail toward its head, oldest first, while nobody changes the shard's
// structure between its steps. Seq says whether somebody did. Then the
// entry the walk was to visit next may be gone or moved in the queue, and
// the walk goes on through the index instead, bucket by bucket, from the
// first. So a key present throughout the walk is visited. A key visited
// in the queue may be visited again in the index: callers that list keys
// skip those they listed (walkPos.index says when).

// walkPos is where a walk of a shard stands between two steps.
type walkPos struct {
	started bool
	index   bool   // the walk goes through the index
	next    uint32 // in the queue: the entry to visit next; 0 at the queue's head
	bucket  int    // in the index: the bucket to look at next
	steps   int    // entries visited in the queue, bounded by the shard
	seq     uint64 // Seq at the next step's start if nobody else holds the lock meanwhile
}

// stepInShard is one step of a walk of shard s, under the caller's hold of
// its lock. It calls visit with each entry it visits, which may remove
// that entry. visit returns false to end the walk. stepInShard reports
// whether the walk is done. It returns ErrCorrupt, wrapped, for a queue
// or a bucket that cannot be walked, and visit's errors.
func (d *Dict) stepInShard(s *shard, pos *walkPos, visit func(off uint32, e *entry) (bool, error)) (done bool, err error) {
	switch {
	case !pos.started:
		pos.started, pos.next = true, s.hdr().QueueTail
	case !pos.index && s.seq() != pos.seq:
		pos.index = true
	}
	var n int
	if pos.index {
		n, done, err = d.indexStepInShard(s, pos, visit)
	} else {
		n, done, err = d.queueStepInShard(s, pos, visit)
	}
	s.logWalk(n)
	// The caller's unlock moves Seq by 1, and its next lock by 1.
	pos.seq = s.seq() + 2
	return done, err
}

// queueStepInShard visits up to walkStep entries of the queue from
// pos.next toward its head. It returns how many it visited.
func (d *Dict) queueStepInShard(s *shard, pos *walkPos, visit func(off uint32, e *entry) (bool, error)) (n int, done bool, err error) {
	off := pos.next
	for ; off != 0 && n < walkStep; n++ {
		if !s.okEntry(off) || pos.steps > s.maxSteps() {
			return n, true, d.corruptInShard(s, "queue")
		}
		pos.steps++
		e := s.entryAt(off)
		prev := e.QPrev
		if more, err := visit(off, e); err != nil || !more {
			return n + 1, true, err
		}
		off = prev
	}
	pos.next = off
	return n, off == 0, nil
}

// indexStepInShard visits the entries of the buckets from pos.bucket on,
// whole buckets, up to walkStep entries and walkBuckets buckets. A first
// bucket of more entries is visited whole. It returns how many entries it
// visited.
func (d *Dict) indexStepInShard(s *shard, pos *walkPos, visit func(off uint32, e *entry) (bool, error)) (n int, done bool, err error) {
	for looked := 0; looked < walkBuckets && pos.bucket < len(s.index); looked++ {
		chain, ok := s.chainLen(pos.bucket)
		if !ok {
			return n, true, d.corruptInShard(s, "index")
		}
		if n > 0 && n+chain > walkStep {
			break
		}
		for off := s.index[pos.bucket]; off != 0; n++ {
			e := s.entryAt(off)
			next := e.Next
			if more, err := visit(off, e); err != nil || !more {
				return n + 1, true, err
			}
			off = next
		}
		pos.bucket++
	}
	return n, pos.bucket >= len(s.index), nil
}

// chainLen returns how many entries bucket b's chain holds, and false
// when the chain cannot be walked.
func (s *shard) chainLen(b int) (int, bool) {
	n := 0
	for off := s.index[b]; off != 0; n++ {
		if !s.okEntry(off) || n > s.maxSteps() {
			return n, false
		}
		off = s.entryAt(off).Next
	}
	return n, true
}

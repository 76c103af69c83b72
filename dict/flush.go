package dict

import (
	"github.com/shmzone/shmzone/shm"
	"github.com/shmzone/shmzone/slab"
)

// FlushAll removes every entry and frees its memory (nginx only marks entries
// expired): afterwards FreeSpace is the empty zone's. It locks one shard at a
// time, so entries written meanwhile to shards already flushed stay.
func (d *Dict) FlushAll() (err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.writable(); err != nil {
		return err
	}
	for i := range d.shards {
		s := &d.shards[i]
		if err := d.lock(s); err != nil {
			return err
		}
		err := s.flushInShard()
		d.unlock(s)
		if err != nil {
			return err
		}
		d.tally(s, tWrites)
	}
	return nil
}

func (s *shard) flushInShard() error {
	if err := s.drainPages(); err != nil {
		return err
	}
	hd := s.hdr()
	hd.Drop = dropUnreachable
	clear(s.index)
	hd.QueueHead, hd.QueueTail, hd.Count = 0, 0, 0
	hd.ProtTail, hd.ProtCount = 0, 0
	s.clearTracesInShard()
	// The region keeps its geometry, so this process's view of it stays
	// valid, and the other goroutines that read s.slab see no new one.
	if _, err := slab.Format(s.arena, s.slab.PageSize()); err != nil {
		return err
	}
	hd.Drop = dropNone
	return nil
}

// FlushExpired removes up to max expired entries (0 = all) and frees their
// memory; it returns how many it removed. It goes shard by shard, each
// shard's oldest entries first. It walks a shard in steps of a bounded
// number of entries, one hold of the shard's lock each. So a writer of
// any process waits for it one step at most. A shard whose structure
// another process changes between two steps is walked on through its
// index, in no order.
// An entry that expires during the walk may be removed or not.
func (d *Dict) FlushExpired(max int) (_ int, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.writable(); err != nil {
		return 0, err
	}
	if max < 0 {
		max = 0
	}
	total := 0
	for i := range d.shards {
		s := &d.shards[i]
		var pos walkPos
		visit := func(off uint32, e *entry) (bool, error) {
			if !expired(e, d.clock) {
				return true, nil
			}
			if err := s.removeInShard(off, exitExpired); err != nil {
				return false, d.failInShard(s, err, "remove")
			}
			total++
			return max == 0 || total < max, nil
		}
		for done := false; !done; {
			if err := d.lock(s); err != nil {
				return total, err
			}
			done, err = d.stepInShard(s, &pos, visit)
			d.unlock(s)
			if err != nil {
				return total, err
			}
		}
		if max > 0 && total >= max {
			break
		}
	}
	return total, nil
}

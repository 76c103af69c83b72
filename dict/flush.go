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
// memory; it returns how many it removed.
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
		if err := d.lock(s); err != nil {
			return total, err
		}
		n, err := d.flushExpiredInShard(s, max-total, max == 0)
		d.unlock(s)
		total += n
		if err != nil {
			return total, err
		}
		if max > 0 && total >= max {
			break
		}
	}
	return total, nil
}

func (d *Dict) flushExpiredInShard(s *shard, left int, all bool) (int, error) {
	hd := s.hdr()
	n := 0
	off := hd.QueueTail
	for steps := 0; off != 0 && (all || n < left); steps++ {
		if !s.okEntry(off) || steps > s.maxSteps() {
			return n, d.corruptInShard(s, "queue")
		}
		e := s.entryAt(off)
		prev := e.QPrev
		if expired(e, d.clock) {
			if err := s.removeInShard(off, exitExpired); err != nil {
				return n, d.failInShard(s, err, "remove")
			}
			n++
		}
		off = prev
	}
	return n, nil
}

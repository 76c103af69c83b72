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
	if err := d.usable(); err != nil {
		return err
	}
	if d.readOnly {
		return ErrReadOnly
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
	if err := d.usable(); err != nil {
		return 0, err
	}
	if d.readOnly {
		return 0, ErrReadOnly
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
			if err := s.removeInShard(off); err != nil {
				return n, d.failInShard(s, err, "remove")
			}
			hd.Expirations++
			n++
		}
		off = prev
	}
	return n, nil
}

// Keys returns up to max live keys (0 = all), shard by shard, each shard's
// from the tail of its eviction queue: the oldest entries first. It holds
// one shard's lock at a time, never for the whole scan, and copies keys out
// before it allocates their strings; a read-only view, which takes no lock,
// lists each shard from a consistent copy of it (snapshot.go). Errors:
// ErrClosed; ErrCorrupt for a shard whose queue cannot be walked;
// ErrLockTimeout (wrapped) for a shard whose lock a live process kept past
// the lock timeout, or, on a read-only view, that kept changing under every
// copy for that long. The keys listed before the error are returned with
// it.
func (d *Dict) Keys(max int) (_ []string, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	if max < 0 {
		max = 0
	}
	var keys []string
	var buf []byte
	var lens []int
	var sn snapshot
	for i := range d.shards {
		s := &d.shards[i]
		want := 0
		if max > 0 {
			want = max - len(keys)
		}
		for {
			var nbytes, nkeys int
			var fit bool
			var err error
			if d.readOnly {
				if err = d.take(s, &sn); err == nil {
					nbytes, nkeys, fit, err = d.keysInShard(&sn.view, buf[:0], lens[:0], want)
				}
			} else if err = d.lock(s); err == nil {
				nbytes, nkeys, fit, err = d.keysInShard(s, buf[:0], lens[:0], want)
				d.unlock(s)
			}
			if err != nil {
				return keys, err
			}
			if !fit {
				buf = make([]byte, 0, nbytes+nbytes/4)
				lens = make([]int, 0, nkeys+nkeys/4)
				continue
			}
			buf, lens = buf[:nbytes], lens[:nkeys]
			break
		}
		p := 0
		for _, n := range lens {
			keys = append(keys, string(buf[p:p+n]))
			p += n
		}
		if max > 0 && len(keys) >= max {
			break
		}
	}
	return keys, nil
}

// keysInShard appends live keys of one shard to buf and their lengths to lens,
// up to max (0 = all). When they do not fit the capacity, fit is false and
// nbytes, nkeys say what is needed.
func (d *Dict) keysInShard(s *shard, buf []byte, lens []int, max int) (nbytes, nkeys int, fit bool, err error) {
	fit = true
	off := s.hdr().QueueTail
	for steps := 0; off != 0 && (max == 0 || nkeys < max); steps++ {
		if !s.okEntry(off) || steps > s.maxSteps() {
			return 0, 0, false, d.corruptInShard(s, "queue")
		}
		e := s.entryAt(off)
		if !s.okBytes(off, e) {
			return 0, 0, false, d.corruptInShard(s, "entry")
		}
		if !expired(e, d.clock) {
			k := s.keyOf(off, e)
			if fit && len(buf)+len(k) <= cap(buf) && len(lens) < cap(lens) {
				buf = append(buf, k...)
				lens = append(lens, len(k))
			} else {
				fit = false
			}
			nbytes += len(k)
			nkeys++
		}
		off = e.QPrev
	}
	// buf and lens were filled in place: the caller reslices them.
	return nbytes, nkeys, fit, nil
}

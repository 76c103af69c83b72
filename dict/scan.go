package dict

import (
	"errors"
	"time"

	"github.com/shmzone/shmzone/shm"
)

// Keys returns up to max live keys; 0 means all. It goes shard by shard,
// each shard's oldest entries first. It holds one shard's lock at a time. A
// read-only view takes no lock: it lists a consistent copy of each shard.
// A shard that keeps changing while it is copied is read bucket by bucket
// instead, and its keys come in index order.
//
// Keys returns ErrClosed, ErrCorrupt for a shard whose queue cannot be
// walked, and ErrLockTimeout, wrapped, for a shard it could not lock or copy
// within the lock timeout. The keys listed before the error come with it.
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
				if err = d.take(s, &sn, true); err == nil {
					nbytes, nkeys, fit, err = d.keysInShard(&sn.view, buf[:0], lens[:0], want)
				} else if errors.Is(err, errChanging) {
					nbytes, nkeys, fit, err = d.keysLive(s, &sn, buf[:0], lens[:0], want)
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

// Item is one live key as Scan reports it.
type Item struct {
	Key string
	// Value is the key's value; for a list it has KindList and the
	// elements are in List. A bytes Value, and List with its elements,
	// are valid only until the callback returns: copy them to keep them.
	Value Value
	List  []Value       // a list's elements, head first; nil for a value
	Flags uint32        // the user flags
	TTL   time.Duration // time left when the key was read; 0 = never expires
}

// Scan calls fn with every live key until fn returns false. It goes shard
// by shard, each shard's oldest entries first.
//
// Scan copies one shard's entries under that shard's lock, then calls fn with
// no lock held, so fn may use the Dict. A key written meanwhile may be
// reported or not, but never twice. Scan is no use of the keys: it moves
// nothing in the eviction order and counts no hits. A read-only view walks a
// consistent copy of each shard and reads each value again from the zone, as
// Get does. A shard that keeps changing while it is copied is read bucket by
// bucket instead, each bucket as it stood at one moment, in index order.
//
// Scan returns ErrClosed, ErrCorrupt for a shard whose entries cannot be
// walked, and ErrLockTimeout, wrapped, for a shard it could not lock or copy
// within the lock timeout.
func (d *Dict) Scan(fn func(it Item) bool) (err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.usable(); err != nil {
		return err
	}
	var c copyBuf
	var list []Value
	var sn snapshot
	for i := range d.shards {
		s := &d.shards[i]
		for {
			now := d.Now()
			c.reset()
			var err error
			if d.readOnly {
				err = d.readShard(s, &sn, now, &c)
			} else if err = d.lock(s); err == nil {
				// Entry writers inside the shard's pages finish
				// first, so that no value is copied half written.
				if err = s.drainPages(); err == nil {
					err = d.scanInShard(s, now, &c)
				}
				d.unlock(s)
			}
			if err != nil {
				return err
			}
			if !c.full {
				break
			}
			c.grow()
		}
		for j := 0; j < len(c.recs); j++ {
			r := c.recs[j]
			it := Item{
				Key:   string(c.key(r)),
				Value: c.value(r),
				Flags: r.flags,
			}
			if r.expiry != 0 {
				it.TTL = msDuration(r.expiry - r.now)
			}
			if r.kind == KindList {
				list = list[:0]
				for _, er := range c.recs[j+1 : j+1+r.elems] {
					list = append(list, c.value(er))
				}
				it.List = list[:len(list):len(list)]
				j += r.elems
			}
			if !fn(it) {
				return nil
			}
		}
	}
	return nil
}

// scanInShard copies the live entries of a shard into c, oldest first.
func (d *Dict) scanInShard(s *shard, now int64, c *copyBuf) error {
	off := s.hdr().QueueTail
	for steps := 0; off != 0; steps++ {
		if !s.okEntry(off) || steps > s.maxSteps() {
			return d.corruptInShard(s, "queue")
		}
		e := s.entryAt(off)
		if e.expiry() == 0 || now < e.expiry() {
			if !s.copyEntryInShard(off, e, now, c) {
				return d.corruptInShard(s, "entry")
			}
		}
		off = e.QPrev
	}
	return nil
}

// scanCopy is scanInShard for a read-only view: it walks the copy of shard s
// in sn, copies lists from it, and reads every other value from the zone
// (copyLive), where an entry writer may have changed it while the copy was
// taken.
func (d *Dict) scanCopy(s *shard, sn *snapshot, now int64, c *copyBuf) error {
	v := &sn.view
	off := v.hdr().QueueTail
	for steps := 0; off != 0; steps++ {
		if !v.okEntry(off) || steps > v.maxSteps() {
			return d.corruptInShard(v, "queue")
		}
		e := v.entryAt(off)
		if !v.okBytes(off, e) {
			return d.corruptInShard(v, "entry")
		}
		switch {
		case e.expiry() != 0 && now >= e.expiry():
		case e.kind() == KindList:
			if !v.copyEntryInShard(off, e, now, c) {
				return d.corruptInShard(v, "entry")
			}
		default:
			if err := d.copyLive(s, sn, off, now, c); err != nil {
				return err
			}
		}
		off = e.QPrev
	}
	return nil
}

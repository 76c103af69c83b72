package dict

import (
	"errors"
	"time"

	"github.com/shmzone/shmzone/shm"
)

// Keys returns up to max live keys; 0 means all. It goes shard by shard,
// each shard's oldest entries first. It walks a shard in steps of a
// bounded number of entries, one hold of the shard's lock each. So a
// writer of any process waits for it one step at most. A shard whose
// structure another process changes between two steps is listed on
// through its index, in no order.
// A key written meanwhile may be listed or not, but never twice. A key
// present throughout is listed. A read-only view takes no lock: it lists a
// consistent copy of each shard. A shard that keeps changing while it is
// copied is read bucket by bucket instead, and its keys come in index
// order.
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
	if d.readOnly {
		return d.keysCopied(max)
	}
	var keys []string
	for i := range d.shards {
		if keys, err = d.keysStepped(&d.shards[i], keys, max); err != nil {
			return keys, err
		}
		if max > 0 && len(keys) >= max {
			break
		}
	}
	return keys, nil
}

// keysStepped appends the live keys of shard s of a writable Dict to keys,
// up to max in all (0 = all), in steps (stepInShard).
func (d *Dict) keysStepped(s *shard, keys []string, max int) ([]string, error) {
	first := len(keys)
	var seen map[string]bool // the keys listed from the queue, once the walk goes through the index
	var pos walkPos
	visit := func(off uint32, e *entry) (bool, error) {
		if !s.okBytes(off, e) {
			return false, d.corruptInShard(s, "entry")
		}
		if expired(e, d.clock) {
			return true, nil
		}
		k := s.keyOf(off, e)
		if pos.index && seen == nil {
			seen = make(map[string]bool, len(keys)-first)
			for _, k := range keys[first:] {
				seen[k] = true
			}
		}
		if !seen[string(k)] {
			keys = append(keys, string(k))
		}
		return max == 0 || len(keys) < max, nil
	}
	for done := false; !done; {
		if err := d.lock(s); err != nil {
			return keys, err
		}
		var err error
		done, err = d.stepInShard(s, &pos, visit)
		d.unlock(s)
		if err != nil {
			return keys, err
		}
	}
	return keys, nil
}

// keysCopied is Keys for a read-only Dict.
func (d *Dict) keysCopied(max int) (_ []string, err error) {
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
			if err = d.take(s, &sn, true); err == nil {
				nbytes, nkeys, fit, err = d.keysInShard(&sn.view, buf[:0], lens[:0], want)
			} else if errors.Is(err, errChanging) {
				nbytes, nkeys, fit, err = d.keysLive(s, &sn, buf[:0], lens[:0], want)
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
// Scan walks a shard in steps of a bounded number of entries, one hold of
// the shard's lock each. It copies a step's entries under the lock, then
// calls fn with no lock held, so fn may use the Dict. A writer of any
// process waits for Scan one step at most. A shard whose structure another process changes
// between two steps is walked on through its index, in no order. A key
// written meanwhile may be reported or not, but never twice. A key present
// throughout is reported. Scan is no use of the keys: it moves nothing in
// the eviction order and counts no hits. A read-only view walks a
// consistent copy of each shard and reads each value again from the zone,
// as Get does. A shard that keeps changing while it is copied is read
// bucket by bucket instead, each bucket as it stood at one moment, in
// index order.
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
	var sn snapshot
	for i := range d.shards {
		s := &d.shards[i]
		if !d.readOnly {
			if more, err := d.scanStepped(s, &c, fn); err != nil || !more {
				return err
			}
			continue
		}
		for {
			c.reset()
			if err := d.readShard(s, &sn, d.Now(), &c); err != nil {
				return err
			}
			if !c.full {
				break
			}
			c.grow()
		}
		if !c.deliver(fn) {
			return nil
		}
	}
	return nil
}

// scanStepped calls fn with the live keys of shard s of a writable Dict,
// copied into c in steps (stepInShard). more is false once fn returned
// false.
func (d *Dict) scanStepped(s *shard, c *copyBuf, fn func(it Item) bool) (more bool, err error) {
	var seen map[string]bool // the keys reported from the queue, for a walk that goes on through the index
	var pos walkPos
	var now int64
	visit := func(off uint32, e *entry) (bool, error) {
		if !s.okBytes(off, e) {
			return false, d.corruptInShard(s, "entry")
		}
		// Entry writers inside its page finish first, so that no value
		// is copied half written.
		if err := s.drainPage(off); err != nil {
			return false, err
		}
		if x := e.expiry(); x != 0 && now >= x || seen[string(s.keyOf(off, e))] {
			return true, nil
		}
		if !s.copyEntryInShard(off, e, now, c) {
			return false, d.corruptInShard(s, "entry")
		}
		return true, nil
	}
	for done := false; !done; {
		saved := pos
		now = d.Now()
		c.reset()
		if err := d.lock(s); err != nil {
			return false, err
		}
		done, err = d.stepInShard(s, &pos, visit)
		d.unlock(s)
		switch {
		case err != nil:
			return false, err
		case c.full:
			// Copy the step again into a larger buffer. The walk keeps
			// to the index if it turned to it.
			saved.seq, saved.index = pos.seq, saved.index || pos.index
			pos, done = saved, false
			c.grow()
			continue
		}
		if !done && !pos.index {
			if seen == nil {
				seen = map[string]bool{}
			}
			for _, r := range c.recs {
				if r.klen > 0 {
					seen[string(c.key(r))] = true
				}
			}
		}
		if !c.deliver(fn) {
			return false, nil
		}
	}
	return true, nil
}

// deliver calls fn with each entry that c holds, until fn returns false.
// It reports whether fn never did.
func (c *copyBuf) deliver(fn func(it Item) bool) bool {
	var list []Value
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
			return false
		}
	}
	return true
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

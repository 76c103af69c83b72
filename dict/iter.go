package dict

import (
	"encoding/binary"
	"time"

	"github.com/shmzone/shmzone/shm"
)

// Reads that copy whole entries out: Scan for every key with its flags and
// TTL, LRange for a list's elements. Both fill a copyBuf under the shard lock
// without allocating, as Keys and Get do: when the entries do not fit its
// capacity, they release the lock, grow it, and copy again. A read-only
// view's Scan fills it from a copy of the shard instead (snapshot.go).

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

// Scan calls fn with every live key, shard by shard, each shard's oldest
// entries first, until fn returns false. It copies one shard's entries out
// under that shard's lock and calls fn with no lock held, so fn may use the
// Dict; a key written meanwhile may be reported or not, but never twice.
// Scan is no use of the keys: it moves nothing in the eviction order and
// counts no hits. On a read-only view it walks a consistent copy of each
// shard (snapshot.go) and reads each value, but a list's, again from the
// zone as Get does, so that a zone other processes write is scanned as
// soundly. Errors: ErrClosed; ErrCorrupt for a shard whose entries cannot
// be walked; ErrLockTimeout (wrapped) for a shard whose lock a live process
// kept past the lock timeout, or, on a read-only view, that kept changing
// under every copy for that long.
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
				if err = d.take(s, &sn); err == nil {
					err = d.scanCopy(s, &sn, now, &c)
				}
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

// LRange returns the elements of the list under key, head first, without
// removing them; nil when the key is absent or expired. Bytes elements are
// the caller's own. Like LLen it is no use of the key: it moves nothing in
// the eviction order and counts no hit. Errors: ErrNotList for a value.
func (d *Dict) LRange(key string) (_ []Value, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	c := copyBuf{b: make([]byte, 0, 256), recs: make([]copyRec, 0, 16)}
	for {
		s, _, off, err := d.lookup(key, false)
		if err != nil {
			return nil, err
		}
		c.reset()
		err = d.lrangeInShard(s, off, &c)
		d.unlock(s)
		if err != nil || len(c.recs) == 0 {
			return nil, err
		}
		if !c.full {
			break
		}
		c.grow()
	}
	vs := make([]Value, 0, len(c.recs)-1)
	for _, r := range c.recs[1:] { // recs[0] is the list's entry
		vs = append(vs, c.value(r))
	}
	return vs, nil
}

// lrangeInShard copies the list entry at off (0 when absent) into c.
func (d *Dict) lrangeInShard(s *shard, off uint32, c *copyBuf) error {
	if off == 0 {
		return nil
	}
	e := s.entryAt(off)
	now := int64(0)
	if e.expiry() != 0 {
		now = d.Now()
		if now >= e.expiry() {
			return nil
		}
	}
	if e.kind() != KindList {
		return ErrNotList
	}
	if !s.copyEntryInShard(off, e, now, c) {
		return d.corruptInShard(s, "list")
	}
	return nil
}

// copyBuf receives copies of entries: their keys' and bytes values' bytes in
// b, and one record per entry and per list element in recs. Under a shard
// lock it only appends within the capacity allocated before: what does not
// fit sets full, and needB and needR count what a second try needs.
type copyBuf struct {
	b     []byte
	recs  []copyRec
	needB int
	needR int
	full  bool
}

// copyRec is one copied entry or list element (which has no key).
type copyRec struct {
	start  int // the key at b[start:start+klen], then a bytes value's vlen bytes
	klen   int
	vlen   int
	num    uint64 // an int, a float's bits, or a bool's 0/1
	expiry int64  // Unix ms; 0 = never
	now    int64  // the time the entry was copied at
	flags  uint32
	elems  int // a list's elements, the records that follow it
	kind   Kind
}

// copyMark is where a copyBuf stood, for undo.
type copyMark struct {
	b, recs, needB, needR int
	full                  bool
}

func (c *copyBuf) mark() copyMark {
	return copyMark{len(c.b), len(c.recs), c.needB, c.needR, c.full}
}

// undo drops what was added since m.
func (c *copyBuf) undo(m copyMark) {
	c.b, c.recs = c.b[:m.b], c.recs[:m.recs]
	c.needB, c.needR, c.full = m.needB, m.needR, m.full
}

func (c *copyBuf) reset() {
	c.b, c.recs = c.b[:0], c.recs[:0]
	c.needB, c.needR, c.full = 0, 0, false
}

// grow makes room for what the last try needed, and a quarter more for
// what may be written before the next.
func (c *copyBuf) grow() {
	c.b = make([]byte, 0, c.needB+c.needB/4)
	c.recs = make([]copyRec, 0, c.needR+c.needR/4+1)
}

// add appends a record with its key and value bytes if they fit, and reports
// whether they did.
func (c *copyBuf) add(key, val []byte, r copyRec) bool {
	if !c.room(&r, len(key), len(val)) {
		return false
	}
	c.b = append(c.b, key...)
	c.b = append(c.b, val...)
	c.recs = append(c.recs, r)
	return true
}

// addLoaded is add for a value in the zone that writers may be changing:
// the n bytes at off of arena, copied with loadBytes.
func (c *copyBuf) addLoaded(key, arena []byte, off, n int, r copyRec) bool {
	if !c.room(&r, len(key), n) {
		return false
	}
	c.b = append(c.b, key...)
	loadBytes(c.b[len(c.b):], arena, off, n)
	c.b = c.b[:len(c.b)+n]
	c.recs = append(c.recs, r)
	return true
}

// room counts a record of a klen-byte key and a vlen-byte value, and
// reports whether it fits; then it sets r's place in b.
func (c *copyBuf) room(r *copyRec, klen, vlen int) bool {
	c.needB += klen + vlen
	c.needR++
	if c.full || len(c.b)+klen+vlen > cap(c.b) || len(c.recs) == cap(c.recs) {
		c.full = true
		return false
	}
	r.start, r.klen, r.vlen = len(c.b), klen, vlen
	return true
}

func (c *copyBuf) key(r copyRec) []byte { return c.b[r.start : r.start+r.klen] }

// value returns a record's value; bytes alias c.b, capped so that an append
// to them cannot reach the next record.
func (c *copyBuf) value(r copyRec) Value {
	switch r.kind {
	case KindBytes:
		v := r.start + r.klen
		return Value{kind: KindBytes, b: capped(c.b[v : v+r.vlen])}
	case KindList:
		return Value{kind: KindList}
	}
	return Value{kind: r.kind, num: r.num}
}

// copyEntryInShard appends the entry at off, which passed okEntry, to c: its
// key with its value, or for a list a record with the list's elements after
// it. It reports false for an entry or a list that is not well formed.
func (s *shard) copyEntryInShard(off uint32, e *entry, now int64, c *copyBuf) bool {
	if !s.okBytes(off, e) {
		return false
	}
	r := copyRec{kind: e.kind(), flags: e.Flags, expiry: e.expiry(), now: now}
	var val []byte
	switch e.kind() {
	case KindBytes:
		val = s.valueOf(off, e)
	case KindInt, KindFloat:
		if e.VLen != 8 {
			return false
		}
		r.num = *s.num(off, e)
	case KindBool:
		if e.VLen != 1 {
			return false
		}
		r.num = uint64(s.valueOf(off, e)[0] & 1)
	case KindList:
		if e.VLen != uint32(listHdrSize) {
			return false
		}
		return s.copyListInShard(off, e, r, c)
	default:
		return false
	}
	c.add(s.keyOf(off, e), val, r)
	return true
}

// copyListInShard appends a list entry's record r and then its elements.
func (s *shard) copyListInShard(off uint32, e *entry, r copyRec, c *copyBuf) bool {
	l := s.listOf(off, e)
	at := len(c.recs)
	stored := c.add(s.keyOf(off, e), nil, r)
	n := 0
	for no := l.Head; no != 0; no = s.nodeAt(no).Next {
		if !s.okNode(no) || n >= s.maxSteps() {
			return false
		}
		nd := s.nodeAt(no)
		data, ok := s.nodeData(no, nd)
		if !ok {
			return false
		}
		er := copyRec{kind: Kind(nd.Kind)}
		var val []byte
		switch er.kind {
		case KindBytes:
			val = data
		case KindInt, KindFloat:
			if len(data) != 8 {
				return false
			}
			er.num = binary.LittleEndian.Uint64(data)
		case KindBool:
			if len(data) != 1 {
				return false
			}
			if data[0] != 0 {
				er.num = 1
			}
		default:
			return false
		}
		c.add(nil, val, er)
		n++
	}
	if n != int(l.Len) {
		return false
	}
	if stored && !c.full {
		c.recs[at].elems = n
	}
	return true
}

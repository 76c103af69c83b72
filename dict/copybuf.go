package dict

// Reads that copy whole entries out: Scan for every key with its flags and
// TTL, LRange for a list's elements. Both fill a copyBuf under the shard lock
// without allocating, as Keys and Get do: when the entries do not fit its
// capacity, they release the lock, grow it, and copy again. A read-only
// view's Scan fills it from a copy of the shard instead (snapshot.go).

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
		return Value{kind: KindBytes, b: c.b[v : v+r.vlen : v+r.vlen]}
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
	v, ok := s.entryValue(off, e)
	if !ok {
		return false
	}
	if v.kind == KindList {
		return s.copyListInShard(off, e, r, c)
	}
	r.num = v.num
	c.add(s.keyOf(off, e), v.b, r)
	return true
}

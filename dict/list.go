package dict

import (
	"time"

	"github.com/shmzone/shmzone/shm"
)

// Lists: a list entry's value is a listHdr; its elements are nodes, each a
// chunk of its own, doubly linked. Pushing never evicts (nginx neither): it
// reclaims expired entries only, and fails with ErrNoMemory.

// LPush inserts v at the head of the list under key, creating the list when
// the key is absent or expired, and returns the new length. A list it
// creates joins the eviction queue unused, as every new key; a push onto
// a live list uses it. Errors: ErrNotList for a key holding a value,
// ErrNoMemory.
func (d *Dict) LPush(key string, v Value) (int, error) { return d.push(key, v, true) }

// RPush inserts v at the tail of the list under key; as LPush.
func (d *Dict) RPush(key string, v Value) (int, error) { return d.push(key, v, false) }

// LPop removes and returns the head of the list under key; the list is
// deleted with its last element. Errors: ErrNotFound for an absent or expired
// key, ErrNotList for a value.
func (d *Dict) LPop(key string) (Value, error) { return d.pop(key, true) }

// RPop removes and returns the tail of the list under key; as LPop.
func (d *Dict) RPop(key string) (Value, error) { return d.pop(key, false) }

// LLen returns the length of the list under key, 0 when it is absent or
// expired. Errors: ErrNotList for a value.
func (d *Dict) LLen(key string) (_ int, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	s, _, off, err := d.lookup(key, false)
	if err != nil {
		return 0, err
	}
	defer d.unlock(s)
	if off == 0 {
		return 0, nil
	}
	e := s.entryAt(off)
	if expired(e, d.clock) {
		return 0, nil
	}
	if e.kind() != KindList {
		return 0, ErrNotList
	}
	if e.VLen != uint32(listHdrSize) || !s.okBytes(off, e) {
		return 0, d.corruptInShard(s, "list")
	}
	return int(s.listOf(off, e).Len), nil
}

// SetList stores elems, head first, as the list under key. The list has TTL
// ttl, where 0 means none, and flags 0. It replaces what key holds. With no
// elems, SetList deletes key.
//
// SetList is all or nothing. It fills every element before it replaces the
// old value, so on an error key keeps its old value. No other process sees a
// partial list. Like LPush it never evicts; it reclaims expired entries only.
// It holds the shard's lock while it copies the list, so it is for loading
// lists, not for a hot path.
//
// SetList returns ErrBadValue for an element that is the zero Value or a
// list, ErrValueTooLarge, ErrBadTTL and ErrNoMemory.
func (d *Dict) SetList(key string, elems []Value, ttl time.Duration) (err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, true); err != nil {
		return err
	}
	for _, v := range elems {
		if v.kind == KindNone || v.kind == KindList {
			return ErrBadValue
		}
		if nodeHdrSize+v.Len() > d.maxEntry {
			return ErrValueTooLarge
		}
	}
	if entrySize(len(key), listHdrSize) > d.maxEntry {
		return ErrValueTooLarge
	}
	expiry, err := d.expiryFor(ttl)
	if err != nil {
		return err
	}
	s, h, off, err := d.lookup(key, true)
	if err != nil {
		return err
	}
	defer d.unlock(s)
	hd := s.hdr()
	if off != 0 && expired(s.entryAt(off), d.clock) {
		// The key's own expired entry holds nothing to keep: free its
		// memory for the elements, as lockPush does.
		if err := s.removeInShard(off, exitExpired); err != nil {
			return d.failInShard(s, err, "remove")
		}
		off = 0
	}
	if len(elems) == 0 {
		if off != 0 {
			if err := s.removeInShard(off, exitDeleted); err != nil {
				return d.failInShard(s, err, "remove")
			}
			d.tally(s, tWrites)
		}
		return nil
	}
	// Build the elements aside, linked to each other and reachable from no
	// list: while Drop is dropUnreachable a repair frees them, and the
	// key's entry (off, pinned) is not touched yet.
	var first, last uint32
	for _, v := range elems {
		noff, _, err := s.allocInShard(nodeHdrSize+v.Len(), false, off, d.clock)
		if err != nil {
			return d.abandonChainInShard(s, first, err)
		}
		n := s.putNodeInShard(noff, v)
		n.Prev = last
		if last != 0 {
			s.nodeAt(last).Next = noff
		} else {
			first = noff
		}
		last = noff
	}
	// Every element fits: replace the old value with an empty list entry
	// (an old list's nodes are freed), then hang the elements on it.
	if off, _, err = d.storeInShard(s, key, h, off, put{v: Value{kind: KindList}, expiry: expiry}); err != nil {
		hd.Drop = dropUnreachable
		return d.abandonChainInShard(s, first, err)
	}
	e := s.entryAt(off)
	if e.VLen != uint32(listHdrSize) || !s.okBytes(off, e) {
		return d.corruptInShard(s, "list")
	}
	hd.Drop = off // three words: a repair drops the entry and frees the nodes
	*s.listOf(off, e) = listHdr{Len: uint32(len(elems)), Head: first, Tail: last}
	hd.Drop = dropNone
	return nil
}

func (d *Dict) push(key string, v Value, head bool) (_ int, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, true); err != nil {
		return 0, err
	}
	if v.kind == KindNone || v.kind == KindList {
		return 0, ErrBadValue
	}
	need := nodeHdrSize + v.Len()
	if need > d.maxEntry {
		return 0, ErrValueTooLarge
	}
	return d.lockPush(key, v, head, need)
}

// lockPush is push under the shard's lock, of an element of need bytes (a
// function of its own, as lockMutate).
func (d *Dict) lockPush(key string, v Value, head bool, need int) (int, error) {
	s, h, off, err := d.lookup(key, true)
	if err != nil {
		return 0, err
	}
	defer d.unlock(s)
	if off != 0 {
		e := s.entryAt(off)
		if expired(e, d.clock) {
			if err := s.removeInShard(off, exitExpired); err != nil {
				return 0, d.failInShard(s, err, "remove")
			}
			off = 0
		} else if e.kind() != KindList {
			return 0, ErrNotList
		}
	}
	created := false
	if off == 0 {
		if off, _, err = d.storeInShard(s, key, h, 0, put{v: Value{kind: KindList}}); err != nil {
			return 0, err
		}
		created = true
	}
	e := s.entryAt(off)
	if e.VLen != uint32(listHdrSize) || !s.okBytes(off, e) {
		return 0, d.corruptInShard(s, "list")
	}
	hd := s.hdr()
	noff, _, err := s.allocInShard(need, false, off, d.clock)
	if err != nil {
		hd.Drop = dropNone
		if created {
			// Do not leave an empty list behind.
			if rerr := s.removeInShard(off, exitDeleted); rerr != nil {
				return 0, d.corruptInShard(s, "remove")
			}
		}
		if err == errCorruptArena {
			return 0, d.corruptInShard(s, "alloc")
		}
		return 0, err
	}
	n := s.putNodeInShard(noff, v)
	l := s.listOf(off, e)
	if !s.linkNodeInShard(l, noff, n, head) {
		return 0, d.corruptInShard(s, "list")
	}
	hd.Drop = dropNone
	if !created {
		e.use() // a push onto a list is a use; creating the list is not
	}
	d.tally(s, tWrites)
	return int(l.Len), nil
}

// linkNodeInShard links the node n at noff into l, at its head when head,
// and counts it. The store that makes it reachable from the head is the
// commit point. Until then Drop, dropUnreachable, frees it on repair. It
// reports false for a corrupt list.
func (s *shard) linkNodeInShard(l *listHdr, noff uint32, n *node, head bool) bool {
	if head {
		n.Next = l.Head
		if l.Head != 0 {
			if !s.okNode(l.Head) {
				return false
			}
			s.nodeAt(l.Head).Prev = noff
		} else {
			l.Tail = noff
		}
		l.Head = noff
	} else {
		n.Prev = l.Tail
		if l.Tail != 0 {
			if !s.okNode(l.Tail) {
				return false
			}
			s.nodeAt(l.Tail).Next = noff
		} else {
			l.Head = noff
		}
		l.Tail = noff
	}
	l.Len++
	return true
}

func (d *Dict) pop(key string, head bool) (_ Value, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, true); err != nil {
		return Value{}, err
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	var dst []byte
	for {
		if err := d.lock(s); err != nil {
			return Value{}, err
		}
		v, need, err := d.popInShard(s, key, h, head, dst)
		d.unlock(s)
		if need < 0 {
			return v, err
		}
		dst = make([]byte, need) // grow outside the lock, then pop again
	}
}

func (d *Dict) popInShard(s *shard, key string, h uint64, head bool, dst []byte) (Value, int, error) {
	off, err := s.findInShard(key, h)
	if err != nil {
		return Value{}, -1, d.corruptInShard(s, "index")
	}
	if off == 0 {
		return Value{}, -1, ErrNotFound
	}
	e := s.entryAt(off)
	if expired(e, d.clock) {
		return Value{}, -1, ErrNotFound
	}
	if e.kind() != KindList {
		return Value{}, -1, ErrNotList
	}
	if e.VLen != uint32(listHdrSize) || !s.okBytes(off, e) {
		return Value{}, -1, d.corruptInShard(s, "list")
	}
	l := s.listOf(off, e)
	noff := l.Tail
	if head {
		noff = l.Head
	}
	if !s.okNode(noff) {
		return Value{}, -1, d.corruptInShard(s, "list")
	}
	n := s.nodeAt(noff)
	data, ok := s.nodeData(noff, n)
	if !ok {
		return Value{}, -1, d.corruptInShard(s, "list node")
	}
	v, ok := nodeValue(Kind(n.Kind), data)
	if !ok {
		return Value{}, -1, d.corruptInShard(s, "list node")
	}
	if v.kind == KindBytes {
		if len(data) > cap(dst) || dst == nil {
			return Value{}, len(data), nil
		}
		dst = dst[:len(data)]
		copy(dst, data)
		v.b = dst
	}
	hd := s.hdr()
	if l.Len <= 1 {
		if err := s.removeInShard(off, exitDeleted); err != nil {
			return Value{}, -1, d.failInShard(s, err, "remove")
		}
		d.tally(s, tWrites)
		return v, -1, nil
	}
	// Unlink the node; the store that makes it unreachable from the head is
	// the commit point.
	hd.Drop = dropUnreachable
	if head {
		l.Head = n.Next
		if !s.okNode(l.Head) {
			return Value{}, -1, d.corruptInShard(s, "list")
		}
		s.nodeAt(l.Head).Prev = 0
	} else {
		if !s.okNode(n.Prev) {
			return Value{}, -1, d.corruptInShard(s, "list")
		}
		s.nodeAt(n.Prev).Next = 0
		l.Tail = n.Prev
	}
	l.Len--
	if err := s.slab.Free(noff); err != nil {
		return Value{}, -1, d.corruptInShard(s, "list free")
	}
	hd.Drop = dropNone
	e.use()
	d.tally(s, tWrites)
	return v, -1, nil
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

//go:build dicthooks

package dict

import (
	"container/list"
	"time"

	"github.com/shmzone/shmzone/slab"
)

// The reference model of the model test (model_test.go): entries in a map
// and a CLOCK queue per shard, and its mirrors of the dict's allocInShard,
// storeInShard, incrInShard and Keys.

// mdlEntry is the model of one entry.
type mdlEntry struct {
	key    string
	val    Value   // a value's
	elems  []Value // a list's
	isList bool
	flags  uint32
	expiry int64 // Unix ms, 0 = never
	ref    bool  // the CLOCK bit
	prot   bool  // in the protected segment
	el     *list.Element
	sh     int
}

func (e *mdlEntry) vlen() int {
	if e.isList {
		return listHdrSize
	}
	return e.val.Len()
}

// mdlModel is the reference: entries by key, and per shard a queue (Front
// the head, Back the tail), the chunks in use (exact run) and the counters.
type mdlModel struct {
	now         func() int64
	entries     map[string]*mdlEntry
	queues      []*list.List
	protTail    []*mdlEntry // the last protected entry of each queue
	protCount   []int
	used        []int
	evictions   []uint64
	expirations []uint64
	seed, mask  uint64
	pageSize    int
	// recalled reports whether the dict found key's trace as it created
	// key's entry in the current operation (shard.recalls): the model
	// follows the dict's traces, and checks only that the key was
	// evicted while live since it was last created (evicted).
	recalled    func(key string) (count int, ok bool)
	evicted     map[string]bool
	implausible int // keys recalled that were not evicted: fingerprints that met
}

func (m *mdlModel) shardOf(key string) int { return int(hashKey(m.seed, key) & m.mask) }

func (m *mdlModel) expired(e *mdlEntry) bool { return e.expiry != 0 && m.now() >= e.expiry }

// live returns key's entry when it is live.
func (m *mdlModel) live(key string) *mdlEntry {
	if e := m.entries[key]; e != nil && !m.expired(e) {
		return e
	}
	return nil
}

func (m *mdlModel) entryChunk(klen, vlen int) int {
	return slab.ChunkSize(entrySize(klen, vlen), m.pageSize)
}

func (m *mdlModel) nodeChunk(v Value) int { return slab.ChunkSize(nodeHdrSize+v.Len(), m.pageSize) }

// insert adds a new entry to its queue, unreferenced, in probation unless
// prot.
// A key found among the dict's traces joins the protected segment at its
// tail, and the segment's cap is applied (enqueueRecalledInShard).
func (m *mdlModel) insert(key string, val Value, isList bool, flags uint32, expiry int64, prot bool) *mdlEntry {
	sh := m.shardOf(key)
	e := &mdlEntry{key: key, val: val, isList: isList, flags: flags, expiry: expiry, sh: sh, prot: prot}
	count, recalled := m.recalled(key)
	if recalled && !m.evicted[key] {
		m.implausible++
	}
	delete(m.evicted, key)
	m.entries[key] = e
	if !recalled {
		m.link(e)
		return e
	}
	q := m.queues[sh]
	if t := m.protTail[sh]; t != nil {
		e.el = q.InsertAfter(e, t.el)
	} else {
		e.el = q.PushFront(e)
	}
	e.prot = true
	m.protTail[sh] = e
	m.protCount[sh]++
	m.balanceAt(sh, nil, count)
	return e
}

// link mirrors enqueueInShard: a protected entry at the head, a
// probation one after the last protected.
func (m *mdlModel) link(e *mdlEntry) {
	q := m.queues[e.sh]
	switch {
	case e.prot:
		e.el = q.PushFront(e)
		m.protCount[e.sh]++
		if m.protTail[e.sh] == nil {
			m.protTail[e.sh] = e
		}
	case m.protTail[e.sh] != nil:
		e.el = q.InsertAfter(e, m.protTail[e.sh].el)
	default:
		e.el = q.PushFront(e)
	}
}

// unlink mirrors unqueueInShard.
func (m *mdlModel) unlink(e *mdlEntry) {
	if m.protTail[e.sh] == e {
		m.protTail[e.sh] = nil
		if p := e.el.Prev(); p != nil {
			m.protTail[e.sh] = p.Value.(*mdlEntry)
		}
	}
	if e.prot {
		m.protCount[e.sh]--
	}
	m.queues[e.sh].Remove(e.el)
}

// drop removes an entry and frees its chunks.
func (m *mdlModel) drop(e *mdlEntry) {
	m.unlink(e)
	delete(m.entries, e.key)
	m.used[e.sh] -= 1 + len(e.elems)
}

// expiredProtected mirrors freeExpiredInShard: the expired protected entry
// nearest the segment's tail, the pinned one aside.
func (m *mdlModel) expiredProtected(sh int, pin *mdlEntry) *mdlEntry {
	t := m.protTail[sh]
	if t == nil {
		return nil
	}
	for el := t.el; el != nil; el = el.Prev() {
		if e := el.Value.(*mdlEntry); e != pin && m.expired(e) {
			return e
		}
	}
	return nil
}

// balance mirrors balanceInShard.
func (m *mdlModel) balance(sh int, pin *mdlEntry) { m.balanceAt(sh, pin, m.queues[sh].Len()) }

// balanceAt is balance with the shard's Count as the dict had it, which
// a new list's allocation may have lowered before the model's.
func (m *mdlModel) balanceAt(sh int, pin *mdlEntry, count int) {
	for i := 0; i < balanceSteps && m.protCount[sh] > count-count/probationShare && m.protTail[sh] != nil; i++ {
		t := m.protTail[sh]
		if t.ref && t != pin && m.protCount[sh] > 1 {
			t.ref = false
			m.unlink(t)
			m.link(t)
			continue
		}
		m.protTail[sh] = nil
		if p := t.el.Prev(); p != nil {
			m.protTail[sh] = p.Value.(*mdlEntry)
		}
		m.protCount[sh]--
		t.prot = false
	}
}

func (m *mdlModel) expiryFor(ttl time.Duration) int64 {
	if ttl == 0 {
		return 0
	}
	return m.now() + int64((ttl+time.Millisecond-1)/time.Millisecond)
}

// round is one reclaimInShard: up to roundFrees entries from the tail of
// shard sh.
func (m *mdlModel) round(sh int, evict bool, pin *mdlEntry) (freed int, live bool) {
	q := m.queues[sh]
	for el := q.Back(); el != nil && freed < roundFrees; {
		e := el.Value.(*mdlEntry)
		// The entry's element now: a relink (balance's second chance)
		// gives it a new one, where the dict's walk follows the entry.
		el = e.el
		prev := el.Prev()
		if e == pin {
			el = prev
			continue
		}
		exp := m.expired(e)
		if !exp && (!evict || live) {
			break
		}
		if evict && e.ref {
			e.ref = false
			promote := !e.prot
			m.unlink(e)
			e.prot = true
			m.link(e)
			if promote {
				m.balance(sh, pin)
			}
			el = prev
			if el == nil {
				el = q.Back()
			}
			continue
		}
		if !exp && e.prot {
			if x := m.expiredProtected(sh, pin); x != nil {
				m.drop(x)
				m.expirations[sh]++
				freed++
				el = q.Back()
				continue
			}
		}
		m.drop(e)
		if exp {
			m.expirations[sh]++
		} else {
			m.evictions[sh]++
			m.evicted[e.key] = true
			live = true
		}
		freed++
		el = prev
	}
	return freed, live
}

// nextExpired returns the entry a reclaim without eviction frees next: the
// first from the tail, the pinned one aside, when it has expired.
func (m *mdlModel) nextExpired(sh int, pin *mdlEntry) *mdlEntry {
	for el := m.queues[sh].Back(); el != nil; el = el.Prev() {
		e := el.Value.(*mdlEntry)
		if e == pin {
			continue
		}
		if m.expired(e) {
			return e
		}
		return nil
	}
	return nil
}

// alloc mirrors allocInShard for one chunk of size bytes in shard sh.
func (h *mdlRun) alloc(sh, size int, evict bool, pin *mdlEntry) (forcible bool, err error) {
	h.t.Helper()
	m := h.m
	if h.cfg.mode == mdlExact {
		if size != mdlChunk {
			h.failf("the exact run allocates %d bytes, not %d", size, mdlChunk)
		}
		for rounds := 0; ; rounds++ {
			if m.used[sh] < h.cap {
				m.used[sh]++
				return forcible, nil
			}
			if rounds == maxRounds {
				return forcible, ErrNoMemory
			}
			if evict && clearsAt(rounds) {
				cleared, live := h.replayClear()
				forcible = forcible || live
				if cleared {
					continue
				}
			}
			freed, live := m.round(sh, evict, pin)
			forcible = forcible || live
			if freed == 0 {
				return forcible, ErrNoMemory
			}
		}
	}
	if !evict {
		// Without eviction a reclaim frees expired entries from the tail,
		// and the round boundaries change nothing.
		for ; h.budget > 0; h.budget-- {
			e := m.nextExpired(sh, pin)
			if e == nil {
				h.failf("the dict reclaimed %d more entries than have expired at the tail", h.budget)
			}
			m.drop(e)
			m.expirations[sh]++
		}
		if h.noMemory {
			// The last round freed nothing, or every round freed roundFrees.
			if e := m.nextExpired(sh, pin); e != nil && h.budget < maxRounds*roundFrees {
				h.failf("ErrNoMemory though %q has expired at the tail", short(e.key))
			}
			return false, ErrNoMemory
		}
		return false, nil
	}
	rounds := 0
	for h.budget > 0 {
		if rounds == maxRounds {
			h.failf("the dict reclaimed %d entries after %d rounds", h.budget, maxRounds)
		}
		if evict && clearsAt(rounds) {
			cleared, live := h.replayClear()
			forcible = forcible || live
			if cleared {
				rounds++
				continue
			}
			if h.budget == 0 {
				break
			}
		}
		freed, live := m.round(sh, evict, pin)
		if freed == 0 || freed > h.budget {
			h.failf("round %d frees %d entries in the model, the dict %d in all", rounds, freed, h.budget)
		}
		h.budget -= freed
		forcible = forcible || live
		rounds++
	}
	if h.noMemory {
		if rounds < 30 {
			if freed, _ := m.round(sh, evict, pin); freed != 0 {
				h.failf("ErrNoMemory after %d rounds, but round %d frees %d entries in the model", rounds, rounds+1, freed)
			}
		}
		return forcible, ErrNoMemory
	}
	return forcible, nil
}

// replayClear applies to the model what the dict's next try of
// clearPageInShard did in the current operation (h.clears, from its stepTry
// to the next): the entries it reclaimed go, those it moved stay where
// they are in the queue. cleared reports a page freed.
func (h *mdlRun) replayClear() (cleared, live bool) {
	h.t.Helper()
	m := h.m
	steps := *h.clears
	if len(steps) == 0 || steps[0].what != stepTry {
		h.failf("the model clears a page where the dict did not try to (steps %q)", steps)
	}
	n := 1
	for n < len(steps) && steps[n].what != stepTry {
		n++
	}
	defer func() { *h.clears = append((*h.clears)[:0], steps[n:]...) }()
	for _, st := range steps[1:n] {
		if st.what == stepCleared {
			cleared = true
			h.outcomes["page cleared"]++
			continue
		}
		e := m.entries[st.key]
		if e == nil {
			h.failf("the dict's page clearing %c %q, which the model does not hold", st.what, short(st.key))
		}
		switch st.what {
		case stepExpired:
			if !m.expired(e) {
				h.failf("the dict's page clearing expired %q, live in the model", short(st.key))
			}
			m.drop(e)
			m.expirations[e.sh]++
		case stepEvicted:
			m.drop(e)
			m.evictions[e.sh]++
			m.evicted[e.key] = true
			live = true
		default:
			continue
		}
		if h.cfg.mode != mdlExact {
			h.budget--
		}
	}
	return cleared, live
}

// store mirrors storeInShard.
func (h *mdlRun) store(key string, v Value, expiry int64, flags uint32, m mode, evict, keepFlags bool) (bool, error) {
	h.t.Helper()
	md := h.m
	e := md.entries[key]
	live := e != nil && !md.expired(e)
	if keepFlags && live {
		flags = e.flags
	}
	switch {
	case m == modeAdd && live:
		return false, ErrExists
	case m == modeReplace && !live:
		return false, ErrNotFound
	}
	if keepFlags && !live {
		flags = 0
	}
	need := md.entryChunk(len(key), storedLen(v))
	if e != nil && need == md.entryChunk(len(key), e.vlen()) {
		md.used[e.sh] -= len(e.elems)
		e.elems, e.isList = nil, false
		e.val, e.flags, e.expiry, e.ref = v, flags, expiry, true
		return false, nil
	}
	wasProt := false
	if e != nil && !live {
		wasProt = e.prot
		md.drop(e)
		e = nil
	}
	sh := md.shardOf(key)
	forcible, err := h.alloc(sh, need, evict, e)
	if err != nil {
		return forcible, err
	}
	prot := wasProt || (e != nil && e.prot) // a rewritten entry keeps its segment
	if e != nil {
		md.drop(e) // the old chunk goes; alloc counted the new one
	}
	ne := md.insert(key, v, false, flags, expiry, prot)
	ne.ref = live // a rewritten live key was just used; a new one starts unreferenced
	return forcible, nil
}

// incrModel mirrors incrInShard on a live number: the sum as an int and as
// a float; ok is false for a non-number, and, in incrToInt mode, for a
// float whose sum no int64 holds, which stays as it was.
func (h *mdlRun) incrModel(e *mdlEntry, delta int64, fdelta float64, mode incrMode) (int64, float64, bool) {
	if e.isList || (e.val.Kind() != KindInt && e.val.Kind() != KindFloat) {
		return 0, 0, false
	}
	var n int64
	var f float64
	switch {
	case e.val.Kind() == KindInt && mode != incrToFloat:
		n = e.val.Int() + delta
		f = float64(n)
		e.val = Int(n)
	case e.val.Kind() == KindInt:
		f = float64(e.val.Int()) + fdelta
		n = int64(f)
		e.val = Float(f)
	default:
		f = e.val.Float() + fdelta
		if mode == incrToInt && !(f >= -(1<<63) && f < 1<<63) { // no int64 holds it
			return 0, 0, false
		}
		n = int64(f)
		e.val = Float(f)
	}
	e.ref = true
	return n, f, true
}

// modelKeys lists the live keys as Keys(max) does: each shard's queue from
// the tail.
func (h *mdlRun) modelKeys(max int) []string {
	var keys []string
	for _, q := range h.m.queues {
		for el := q.Back(); el != nil && (max == 0 || len(keys) < max); el = el.Prev() {
			if e := el.Value.(*mdlEntry); !h.m.expired(e) {
				keys = append(keys, e.key)
			}
		}
	}
	return keys
}

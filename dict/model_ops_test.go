//go:build dicthooks

package dict

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// The model test's keyed operations: each runs one call on the Dict and on
// the reference model and compares the results.

func (h *mdlRun) set(key, name string) {
	v, ttl, flags := h.cfg.value(h.r), h.ttl(), h.flags()
	sh := h.begin(key)
	var forcible bool
	var err error
	m, evict := modeSet, true
	switch name {
	case "Set":
		forcible, err = h.d.Set(key, v, ttl, flags)
	case "SafeSet":
		err, evict = h.d.SafeSet(key, v, ttl, flags), false
	case "Add":
		forcible, err = h.d.Add(key, v, ttl, flags)
		m = modeAdd
	case "SafeAdd":
		err, evict, m = h.d.SafeAdd(key, v, ttl, flags), false, modeAdd
	case "Replace":
		forcible, err = h.d.Replace(key, v, ttl, flags)
		m = modeReplace
	}
	h.observe(sh, err, 0)
	wantF, wantErr := h.store(key, v, h.m.expiryFor(ttl), flags, m, evict, false)
	if forcible != wantF || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("%s(%q, %s %q, %v, %d) = %v, %v; want %v, %v", name, short(key), v.Kind(), short(v.String()), ttl, flags, forcible, err, wantF, wantErr)
	}
	if forcible {
		h.note(name, err, "forcible")
	} else {
		h.note(name, err)
	}
	h.end(sh)
}

func (h *mdlRun) delete(key string) {
	sh := h.begin(key)
	err := h.d.Delete(key)
	h.observe(sh, err, 0)
	if err != nil {
		h.failf("Delete(%q) = %v", short(key), err)
	}
	h.note("Delete", err)
	if e := h.m.entries[key]; e != nil {
		h.m.drop(e)
	}
	h.end(sh)
}

// get runs Get (how 0), GetInto (1) or GetStale (2).
func (h *mdlRun) get(key string, how int) {
	sh := h.begin(key)
	var v Value
	var flags uint32
	var stale bool
	var err error
	name := [...]string{"Get", "GetInto", "GetStale"}[how]
	switch how {
	case 0:
		v, flags, err = h.d.Get(key)
	case 1:
		v, flags, err = h.d.GetInto(key, make([]byte, h.r.IntN(64), h.r.IntN(64)+64))
	case 2:
		v, flags, stale, err = h.d.GetStale(key)
	}
	h.observe(sh, err, 0)
	e := h.m.entries[key]
	var want Value
	var wantFlags uint32
	var wantStale bool
	var wantErr error
	switch {
	case e == nil || (h.m.expired(e) && how != 2):
		wantErr = ErrNotFound
	case e.isList:
		wantErr = ErrIsList
	default:
		want, wantFlags, wantStale = e.val, e.flags, h.m.expired(e)
		e.ref = true
	}
	if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) || !v.Equal(want) || flags != wantFlags || stale != wantStale {
		h.failf("%s(%q) = %s %q, %d, stale %v, %v; want %s %q, %d, stale %v, %v", name, short(key), v.Kind(), short(v.String()), flags, stale, err, want.Kind(), short(want.String()), wantFlags, wantStale, wantErr)
	}
	if stale {
		h.note(name, err, "stale")
	} else {
		h.note(name, err)
	}
	h.end(sh)
}

func (h *mdlRun) ttlOp(key string) {
	sh := h.begin(key)
	ttl, err := h.d.TTL(key)
	h.observe(sh, err, 0)
	var want time.Duration
	var wantErr error
	switch e := h.m.live(key); {
	case e == nil:
		wantErr = ErrNotFound
	case e.expiry != 0:
		want = time.Duration(e.expiry-h.m.now()) * time.Millisecond
	}
	if ttl != want || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("TTL(%q) = %v, %v; want %v, %v", short(key), ttl, err, want, wantErr)
	}
	h.note("TTL", err)
	h.end(sh)
}

func (h *mdlRun) expire(key string) {
	ttl := h.ttl()
	sh := h.begin(key)
	err := h.d.Expire(key, ttl)
	h.observe(sh, err, 0)
	var wantErr error
	if e := h.m.live(key); e == nil {
		wantErr = ErrNotFound
	} else {
		e.expiry = h.m.expiryFor(ttl)
	}
	if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("Expire(%q, %v) = %v; want %v", short(key), ttl, err, wantErr)
	}
	h.note("Expire", err)
	h.end(sh)
}

func (h *mdlRun) incr(key string) {
	delta := mdlInt(h.r)
	sh := h.begin(key)
	n, err := h.d.Incr(key, delta)
	h.observe(sh, err, 0)
	var want int64
	var wantErr error
	if e := h.m.live(key); e == nil {
		wantErr = ErrNotFound
	} else if w, _, ok := h.incrModel(e, delta, float64(delta), incrToInt); !ok {
		wantErr = ErrNotNumber
	} else {
		want = w
	}
	if (err == nil && n != want) || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("Incr(%q, %d) = %d, %v; want %d, %v", short(key), delta, n, err, want, wantErr)
	}
	h.note("Incr", err)
	h.end(sh)
}

func (h *mdlRun) incrFloat(key string) {
	delta := float64(h.r.IntN(800)-400) / 16
	sh := h.begin(key)
	f, err := h.d.IncrFloat(key, delta)
	h.observe(sh, err, 0)
	var want float64
	var wantErr error
	if e := h.m.live(key); e == nil {
		wantErr = ErrNotFound
	} else if _, w, ok := h.incrModel(e, 0, delta, incrToFloat); !ok {
		wantErr = ErrNotNumber
	} else {
		want = w
	}
	if (err == nil && f != want) || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("IncrFloat(%q, %v) = %v, %v; want %v, %v", short(key), delta, f, err, want, wantErr)
	}
	h.note("IncrFloat", err)
	h.end(sh)
}

func (h *mdlRun) incrInit(key string) {
	delta, init, ttl := mdlInt(h.r), mdlInt(h.r), h.ttl()
	sh := h.begin(key)
	n, forcible, err := h.d.IncrInit(key, delta, init, ttl)
	h.observe(sh, err, 0)
	var want int64
	var wantF bool
	var wantErr error
	if e := h.m.live(key); e != nil {
		if w, _, ok := h.incrModel(e, delta, float64(delta), incrToInt); ok {
			want = w
		} else {
			wantErr = ErrNotNumber
		}
	} else {
		want = init + delta
		wantF, wantErr = h.store(key, Int(want), h.m.expiryFor(ttl), 0, modeSet, true, false)
	}
	if (err == nil && n != want) || forcible != wantF || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("IncrInit(%q, %d, %d, %v) = %d, %v, %v; want %d, %v, %v", short(key), delta, init, ttl, n, forcible, err, want, wantF, wantErr)
	}
	h.note("IncrInit", err)
	h.end(sh)
}

func (h *mdlRun) cas(key string) {
	old := h.cfg.value(h.r)
	if e := h.m.live(key); e != nil && !e.isList && h.r.IntN(2) == 0 {
		old = e.val
	}
	v, ttl := h.cfg.value(h.r), h.ttl()
	sh := h.begin(key)
	ok, err := h.d.CompareAndSwap(key, old, v, ttl)
	h.observe(sh, err, 0)
	var wantOK bool
	var wantErr error
	switch e := h.m.live(key); {
	case e == nil:
		wantErr = ErrNotFound
	case e.isList:
		wantErr = ErrIsList
	case !e.val.Equal(old):
	default:
		_, wantErr = h.store(key, v, h.m.expiryFor(ttl), 0, modeSet, true, true)
		wantOK = wantErr == nil
	}
	if ok != wantOK || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("CompareAndSwap(%q, %s %q, %s %q, %v) = %v, %v; want %v, %v", short(key), old.Kind(), short(old.String()), v.Kind(), short(v.String()), ttl, ok, err, wantOK, wantErr)
	}
	if ok {
		h.note("CompareAndSwap", err, "swapped")
	} else {
		h.note("CompareAndSwap", err)
	}
	h.end(sh)
}

func (h *mdlRun) update(key string) {
	keep := h.r.IntN(5) != 0
	next, ttl := h.cfg.value(h.r), h.ttl()
	e := h.m.live(key)
	var wantCur Value
	wantOK, wantCall := e != nil, e == nil || !e.isList
	if e != nil && !e.isList {
		wantCur = e.val
	}
	called := false
	var mismatch string
	sh := h.begin(key)
	err := h.d.Update(key, func(cur Value, ok bool) (Value, time.Duration, bool) {
		called = true
		if ok != wantOK || !cur.Equal(wantCur) {
			mismatch = fmt.Sprintf("fn got %s %q, %v; want %s %q, %v", cur.Kind(), short(cur.String()), ok, wantCur.Kind(), short(wantCur.String()), wantOK)
		}
		return next, ttl, keep
	})
	h.observe(sh, err, 0)
	if mismatch != "" {
		h.failf("Update(%q): %s", short(key), mismatch)
	}
	if called != wantCall {
		h.failf("Update(%q) called fn: %v, want %v", short(key), called, wantCall)
	}
	var wantErr error
	switch {
	case !wantCall:
		wantErr = ErrIsList
	case !keep:
		if e := h.m.entries[key]; e != nil {
			h.m.drop(e)
		}
	default:
		_, wantErr = h.store(key, next, h.m.expiryFor(ttl), 0, modeSet, true, true)
	}
	if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("Update(%q) to %s %q, %v, keep %v = %v; want %v", short(key), next.Kind(), short(next.String()), ttl, keep, err, wantErr)
	}
	h.note("Update", err)
	h.end(sh)
}

func (h *mdlRun) push(key string, head bool) {
	v := h.cfg.elem(h.r)
	name := "RPush"
	sh := h.begin(key)
	var n int
	var err error
	if head {
		name = "LPush"
		n, err = h.d.LPush(key, v)
	} else {
		n, err = h.d.RPush(key, v)
	}
	m := h.m
	e := m.entries[key]
	own := 0
	if e != nil && m.expired(e) {
		m.drop(e)
		m.expirations[sh]++
		e, own = nil, 1
	}
	h.observe(sh, err, own)
	var want int
	var wantErr error
	created := false
	switch {
	case e != nil && !e.isList:
		wantErr = ErrNotList
	case h.cfg.mode == mdlExact:
		if e == nil {
			if _, wantErr = h.alloc(sh, m.entryChunk(len(key), listHdrSize), false, nil); wantErr != nil {
				break
			}
			e, created = m.insert(key, Value{}, true, 0, 0, false), true
		}
		if _, wantErr = h.alloc(sh, m.nodeChunk(v), false, e); wantErr != nil {
			if created {
				m.drop(e)
			}
			break
		}
	default:
		if e == nil && slices.ContainsFunc(*h.recalls, func(r recall) bool { return r.key == key }) {
			// The new list's entry found its trace: it joined the
			// protected segment before the node's allocation, which
			// evicts nothing, and goes if that fails.
			e, created = m.insert(key, Value{}, true, 0, 0, false), true
		}
		if _, wantErr = h.alloc(sh, 0, false, e); wantErr != nil {
			if created {
				m.drop(e)
				e = nil
			}
			break
		}
		if e == nil {
			e, created = m.insert(key, Value{}, true, 0, 0, false), true
		}
	}
	if wantErr == nil && e != nil && e.isList {
		if head {
			e.elems = append([]Value{v}, e.elems...)
		} else {
			e.elems = append(e.elems, v)
		}
		e.ref = e.ref || !created // a push uses a list; creating one does not
		want = len(e.elems)
	}
	if n != want || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("%s(%q, %s %q) = %d, %v; want %d, %v", name, short(key), v.Kind(), short(v.String()), n, err, want, wantErr)
	}
	h.note(name, err)
	h.end(sh)
}

func (h *mdlRun) pop(key string, head bool) {
	name := "RPop"
	sh := h.begin(key)
	var v Value
	var err error
	if head {
		name = "LPop"
		v, err = h.d.LPop(key)
	} else {
		v, err = h.d.RPop(key)
	}
	h.observe(sh, err, 0)
	var want Value
	var wantErr error
	switch e := h.m.live(key); {
	case e == nil:
		wantErr = ErrNotFound
	case !e.isList:
		wantErr = ErrNotList
	default:
		if head {
			want, e.elems = e.elems[0], e.elems[1:]
		} else {
			want, e.elems = e.elems[len(e.elems)-1], e.elems[:len(e.elems)-1]
		}
		h.m.used[sh]--
		if len(e.elems) == 0 {
			h.m.drop(e)
		} else {
			e.ref = true
		}
	}
	if !v.Equal(want) || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("%s(%q) = %s %q, %v; want %s %q, %v", name, short(key), v.Kind(), short(v.String()), err, want.Kind(), short(want.String()), wantErr)
	}
	h.note(name, err)
	h.end(sh)
}

func (h *mdlRun) llen(key string) {
	sh := h.begin(key)
	n, err := h.d.LLen(key)
	h.observe(sh, err, 0)
	var want int
	var wantErr error
	switch e := h.m.live(key); {
	case e == nil:
	case !e.isList:
		wantErr = ErrNotList
	default:
		want = len(e.elems)
	}
	if n != want || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("LLen(%q) = %d, %v; want %d, %v", short(key), n, err, want, wantErr)
	}
	h.note("LLen", err)
	h.end(sh)
}

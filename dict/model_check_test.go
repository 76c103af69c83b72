//go:build dicthooks

package dict

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The model test's periodic check: the whole zone against the reference
// model, queue by queue and entry by entry.

// verifyAll compares the whole zone with the model: Check, the counters,
// each shard's queue with its reference bits, every entry through the
// read-only view (which marks nothing), and in the exact run the chunks in
// use.
func (h *mdlRun) verifyAll() {
	h.t.Helper()
	if err := h.d.Check(); err != nil {
		h.failf("Check() = %v", err)
	}
	st := h.d.Stats()
	if st.Entries != int64(len(h.m.entries)) {
		h.failf("Stats().Entries = %d, model %d", st.Entries, len(h.m.entries))
	}
	for sh := range h.m.queues {
		ss := h.d.ShardStats(sh)
		if ss.Evictions != h.m.evictions[sh] || ss.Expirations != h.m.expirations[sh] {
			h.failf("shard %d: %d evictions, %d expirations; model %d, %d", sh, ss.Evictions, ss.Expirations, h.m.evictions[sh], h.m.expirations[sh])
		}
		keys, refs := mdlQueue(h.d, sh)
		i := 0
		for el := h.m.queues[sh].Back(); el != nil; el = el.Prev() {
			e := el.Value.(*mdlEntry)
			if i >= len(keys) || keys[i] != e.key || refs[i] != e.ref {
				got := "the end"
				if i < len(keys) {
					got = fmt.Sprintf("%q ref %v", short(keys[i]), refs[i])
				}
				h.failf("shard %d queue [%d] from the tail: %s, model %q ref %v", sh, i, got, short(e.key), e.ref)
			}
			i++
		}
		if i != len(keys) {
			h.failf("shard %d queue holds %d entries, model %d", sh, len(keys), i)
		}
	}
	if keys, err := h.d.Keys(0); err != nil || strings.Join(keys, "\n") != strings.Join(h.modelKeys(0), "\n") {
		h.failf("Keys(0) = %d keys, %v; model %d", len(keys), err, len(h.modelKeys(0)))
	}
	for _, e := range h.m.entries {
		exp := h.m.expired(e)
		v, flags, stale, err := h.ro.GetStale(e.key)
		switch {
		case e.isList:
			n, lerr := h.ro.LLen(e.key)
			want := len(e.elems)
			if exp {
				want = 0
			}
			if !errors.Is(err, ErrIsList) || n != want || lerr != nil {
				h.failf("read-only GetStale(%q), LLen = %v, %d, %v; want %v, %d, <nil>", short(e.key), err, n, lerr, ErrIsList, want)
			}
		case err != nil || !v.Equal(e.val) || flags != e.flags || stale != exp:
			h.failf("read-only GetStale(%q) = %s %q, %d, stale %v, %v; want %s %q, %d, stale %v", short(e.key), v.Kind(), short(v.String()), flags, stale, err, e.val.Kind(), short(e.val.String()), e.flags, exp)
		}
		ttl, err := h.ro.TTL(e.key)
		var want time.Duration
		var wantErr error
		switch {
		case exp:
			wantErr = ErrNotFound
		case e.expiry != 0:
			want = time.Duration(e.expiry-h.m.now()) * time.Millisecond
		}
		if ttl != want || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
			h.failf("read-only TTL(%q) = %v, %v; want %v, %v", short(e.key), ttl, err, want, wantErr)
		}
	}
	for _, k := range h.keys {
		if h.m.entries[k] == nil {
			if _, _, _, err := h.ro.GetStale(k); !errors.Is(err, ErrNotFound) {
				h.failf("read-only GetStale(%q) of an absent key = %v, want %v", short(k), err, ErrNotFound)
			}
		}
	}
	if h.cfg.mode == mdlExact {
		used := 0
		for _, r := range h.d.SlabStats() {
			if r.Size != mdlChunk && r.Used != 0 {
				h.failf("slab class %d holds %d chunks in the exact run", r.Size, r.Used)
			}
			if r.Size == mdlChunk {
				used = r.Used
			}
		}
		if used != h.m.used[0] {
			h.failf("%d chunks in use, model %d", used, h.m.used[0])
		}
	}
}

// mdlQueue returns a shard's eviction queue from the tail: each entry's key
// and reference bit. The shard must have passed Check.
func mdlQueue(d *Dict, sh int) (keys []string, refs []bool) {
	s := &d.shards[sh]
	d.lock(s)
	defer d.unlock(s)
	for off := s.hdr().QueueTail; off != 0; off = s.entryAt(off).QPrev {
		e := s.entryAt(off)
		keys = append(keys, string(s.keyOf(off, e)))
		refs = append(refs, e.Bits&refBit != 0)
	}
	return keys, refs
}

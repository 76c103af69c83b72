//go:build dicthooks

package dict

import (
	"strings"
)

// The model test's whole-zone operations: Keys, FlushExpired and FlushAll,
// on the Dict and on the reference model.

func (h *mdlRun) keysOp() {
	max := [...]int{0, 0, 1, 5, 50}[h.r.IntN(5)]
	keys, err := h.d.Keys(max)
	want := h.modelKeys(max)
	if err != nil || strings.Join(keys, "\n") != strings.Join(want, "\n") {
		h.failf("Keys(%d) = %d keys %q, %v;\nwant %d keys %q", max, len(keys), mdlShortKeys(keys), err, len(want), mdlShortKeys(want))
	}
	h.note("Keys", err)
}

func mdlShortKeys(keys []string) []string {
	out := make([]string, 0, min(len(keys), 20))
	for i, k := range keys {
		if i == 20 {
			out = append(out, "…")
			break
		}
		out = append(out, short(k))
	}
	return out
}

func (h *mdlRun) flushExpired() {
	max := [...]int{0, 1, 3, 10}[h.r.IntN(4)]
	n, err := h.d.FlushExpired(max)
	want := 0
	for sh, q := range h.m.queues {
		if max > 0 && want >= max {
			break
		}
		for el := q.Back(); el != nil && (max == 0 || want < max); {
			e, prev := el.Value.(*mdlEntry), el.Prev()
			if h.m.expired(e) {
				h.m.drop(e)
				h.m.expirations[sh]++
				want++
			}
			el = prev
		}
	}
	if n != want || err != nil {
		h.failf("FlushExpired(%d) = %d, %v; want %d, <nil>", max, n, err, want)
	}
	h.note("FlushExpired", err)
}

func (h *mdlRun) flushAll() {
	if err := h.d.FlushAll(); err != nil {
		h.failf("FlushAll() = %v", err)
	}
	h.note("FlushAll", nil)
	for _, e := range h.m.entries {
		h.m.drop(e)
	}
	for sh := range h.m.used {
		if h.m.used[sh] != 0 && h.cfg.mode == mdlExact {
			h.failf("model: %d chunks in use in shard %d after FlushAll", h.m.used[sh], sh)
		}
	}
}

package redistier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/shmzone/shmzone/dict"
)

// A window's list of keys ("tier|prefix|win|keys") is an entry of the zone
// like any other, and a zone that must make room for other keys can evict
// it while the keys' counts and marks stay: no decision lists those keys
// again in the window (a decision lists a key when it creates its count
// and adds its mark), so no flush would carry them. The flusher finds such
// a loss. Within a window a list only grows (decisions and flushes push at
// its end) until the next window's first flush pops it, so each flush
// remembers the current window's list as it read it (its length and a hash
// of its elements, in order), and the instance's next flush must find those
// elements first in the list: in the same window when it reads the list,
// in the next when it pops it. A list shorter than seen, or with other
// elements first, was evicted (and perhaps created again by newer keys):
// the flush scans the zone for the window's counts, sends the keys not in
// the list with the others, and pushes the current window's back onto its
// list, so that later flushes find them there without a scan.

// listSeen is what a flush saw of its window's list. Owned by the flusher,
// under Tiered.fmu.
type listSeen struct {
	win   int64  // the window; 0 when no flush of this instance saw one
	n     int    // the list's length
	sum   uint64 // listSum of its n elements
	short bool   // keys the zone counts were left out of the list (a push failed): scan again
}

// listSeed seeds listSum, within this process.
var listSeed = maphash.MakeSeed()

// listSum returns a hash of keys in order.
func listSum(keys []string) uint64 {
	var h maphash.Hash
	h.SetSeed(listSeed)
	var b [8]byte
	for _, k := range keys {
		binary.LittleEndian.PutUint64(b[:], uint64(len(k)))
		h.Write(b[:])
		h.WriteString(k)
	}
	return h.Sum64()
}

// lost reports whether keys, a window's list read or popped by the flush
// after the one that saw s of the same window, shows that the list was
// evicted meanwhile: it lacks the elements seen first.
func (s listSeen) lost(keys []string) bool {
	return s.short || len(keys) < s.n || s.n > 0 && listSum(keys[:s.n]) != s.sum
}

// lostKeys scans the zone for the keys of window win that it counts, or
// marks as listed, but that are not in listed, the window's list as the
// flush read it, and returns those it counts. A marked key without a
// count (evicted) loses its mark, so that the decision that creates its
// count again lists it; lostKeys returns it when that decision came first.
// Errors: the dictionary's, with the keys found before.
func (l *Tiered) lostKeys(win int64, listed []string) (keys []string, err error) {
	p := l.zkey(win, "", "") // "tier|prefix|win|"
	in := make(map[string]bool, len(listed))
	for _, k := range listed {
		in[k] = true
	}
	var marked []string
	// A key's zone keys end in "|c" (its count), "|c|o" (the others'
	// count) or "|m" (its mark); the key itself may hold '|'.
	err = l.d.Scan(func(it dict.Item) bool {
		rest, ok := strings.CutPrefix(it.Key, p)
		if !ok {
			return true
		}
		if k, ok := strings.CutSuffix(rest, "|c"); ok && k != "" && !in[k] {
			in[k] = true
			keys = append(keys, k)
		} else if k, ok := strings.CutSuffix(rest, "|m"); ok && k != "" {
			marked = append(marked, k)
		}
		return true
	})
	if err != nil {
		return keys, fmt.Errorf("redistier: tiered scan: %w", err)
	}
	for _, k := range marked {
		if in[k] {
			continue
		}
		if err := l.d.Delete(l.zkey(win, k, "|m")); err != nil {
			return keys, fmt.Errorf("redistier: tiered %s: %w", k, err)
		}
		switch _, _, err := l.d.Get(l.zkey(win, k, "|c")); {
		case err == nil:
			keys = append(keys, k)
		case !errors.Is(err, dict.ErrNotFound):
			return keys, fmt.Errorf("redistier: tiered %s: %w", k, err)
		}
	}
	return keys, nil
}

// strs returns the strings of vs, a list's elements.
func strs(vs []dict.Value) []string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return s
}

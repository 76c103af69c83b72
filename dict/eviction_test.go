package dict

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// Tests of the eviction queue: the order Keys lists it in, and the second
// chance CLOCK gives a key that was read.

// TestKeysOrder pins the order of Keys within a shard: the eviction queue
// from its tail (CLOCK, DESIGN.md, section 5). A read only marks its entry, so it moves
// nothing; a write that needs a new chunk moves the entry to the head; a
// second chance moves a marked entry to the head.
func TestKeysOrder(t *testing.T) {
	d, c := openTest(t, Options{Shards: 1})
	want := func(what string, keys ...string) {
		t.Helper()
		got, err := d.Keys(0)
		if err != nil || strings.Join(got, " ") != strings.Join(keys, " ") {
			t.Fatalf("Keys(0) %s = %q, %v; want %q", what, got, err, keys)
		}
		if len(keys) > 0 {
			if got, err := d.Keys(2); err != nil || strings.Join(got, " ") != strings.Join(keys[:min(2, len(keys))], " ") {
				t.Fatalf("Keys(2) %s = %q, %v; want %q", what, got, err, keys[:min(2, len(keys))])
			}
		}
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		specSet(t, d, k, Int(1), 0, 0)
	}
	want("after Set a b c d", "a", "b", "c", "d")
	wantGet(t, d, "a", Int(1), 0)
	if _, err := d.Incr("c", 1); err != nil {
		t.Fatalf("Incr(\"c\") = %v", err)
	}
	want("after Get a and Incr c", "a", "b", "c", "d")
	specSet(t, d, "b", String("longer than an int, another chunk size"), time.Hour, 0)
	want("after Set b to a longer value", "a", "c", "d", "b")
	specSet(t, d, "c", Float(2), 0, 0)
	want("after Set c in place", "a", "c", "d", "b")
	if _, err := d.Add("d", Int(2), 0, 0); !errors.Is(err, ErrExists) {
		t.Fatalf("Add(\"d\") = %v, want %v", err, ErrExists)
	}
	d.TTL("d")
	d.Expire("d", time.Hour)
	d.LLen("a")
	d.CompareAndSwap("d", Int(5), Int(6), 0)
	want("after failed writes and TTL calls", "a", "c", "d", "b")
	// An expired key is left out.
	c.Advance(time.Hour)
	want("after b and d expired", "a", "c")
}

// TestSecondChance fills a one-shard zone after reading some keys: the first
// eviction passes over the keys read, moving them to the head of the
// protected segment, and evicts the oldest key not read.
func TestSecondChance(t *testing.T) {
	d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
	var keys []string
	for i := 1; ; i++ {
		if i > 100000 {
			t.Fatalf("no forcible Set after %d keys", i)
		}
		if i == 5 {
			for _, r := range []int{1, 2, 4} {
				wantGet(t, d, specKey(r), Int(int64(r)), 0)
			}
		}
		forcible, err := d.Set(specKey(i), Int(int64(i)), 0, 0)
		if err != nil {
			t.Fatalf("Set(%q) = %v", specKey(i), err)
		}
		if !forcible {
			keys = append(keys, specKey(i))
			continue
		}
		// 1 and 2 got their second chance, in the protected segment, 3
		// went; 4 was not reached. The new key joins probation, which
		// Keys lists before the protected segment.
		want := append(append(append([]string{specKey(4)}, keys[4:]...), specKey(i)), specKey(1), specKey(2))
		got, err := d.Keys(0)
		if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("Keys(0) after the first eviction =\n%q, %v; want\n%q", got, err, want)
		}
		break
	}
	wantGetErr(t, d, specKey(3), ErrNotFound)
}

// TestMixedSizesEvict writes values of many sizes into a small zone, as a
// cache of pages or responses does: a write that must evict finds room.
// Chunks of one size class are kept by the entries in use that hold them,
// so eviction from the queue's tail alone mostly frees chunks of other
// sizes; the shard frees a whole page after three rounds, and tries again
// every three rounds while a try fails. With one try only, some 150 in
// 100,000 of these writes evicted thirty rounds of entries and still
// failed with ErrNoMemory; with the tries, none to a few.
func TestMixedSizesEvict(t *testing.T) {
	d, _ := openTest(t, Options{Size: 1 << 20})
	r := rand.New(rand.NewPCG(testutil.Seed(t), 1))
	buf := make([]byte, 1040)
	const writes = 100_000
	failed := 0
	for i := 0; i < writes; i++ {
		key := fmt.Sprintf("page:%06d", r.IntN(50_000))
		if _, err := d.Set(key, Bytes(buf[:8+r.IntN(1032)]), 0, 0); errors.Is(err, ErrNoMemory) {
			failed++
		} else if err != nil {
			t.Fatalf("Set(%q) = %v", key, err)
		}
	}
	if st := d.Stats(); st.Evictions < writes/2 {
		t.Fatalf("%d evictions in %d writes: the zone was not full", st.Evictions, writes)
	}
	if failed > 20 {
		t.Errorf("%d of %d writes that may evict failed with ErrNoMemory, want at most 20", failed, writes)
	}
}

// TestWriteOverOwnExpiredEntry writes a key, in a value of another size,
// over its own expired entry in a zone of one shard and 14 pages: every
// write (Set, Add, SafeSet, SetList) frees that entry before it allocates,
// so its pages serve the new value and no live key is evicted, as nginx's
// shared dict removes a found node before it allocates. Set and Add once
// kept the expired entry while they allocated: over a live key of 6 pages
// and an expired one of 6, Set of 7 pages evicted the live key and still
// failed with ErrNoMemory, and in a zone holding only the expired 12 pages
// Set, Add and SetList of 6 failed.
func TestWriteOverOwnExpiredEntry(t *testing.T) {
	const page = 4096
	big := func(n int) Value { return Bytes(make([]byte, n)) }
	writes := []struct {
		name string
		fn   func(d *Dict, v Value) error
	}{
		{"Set", func(d *Dict, v Value) error { _, err := d.Set("k", v, 0, 0); return err }},
		{"Add", func(d *Dict, v Value) error { _, err := d.Add("k", v, 0, 0); return err }},
		{"SafeSet", func(d *Dict, v Value) error { return d.SafeSet("k", v, 0, 0) }},
		{"SetList", func(d *Dict, v Value) error {
			// Two nodes of whole pages, of about half the value each, and
			// the list's own entry fit where the value would.
			half := big((len(v.Bytes())/page)*page/2 - 300)
			return d.SetList("k", []Value{half, half}, 0)
		}},
	}
	for _, w := range writes {
		t.Run(w.name+"/beside-a-live-key", func(t *testing.T) {
			d, c := openTest(t, Options{Size: specMinZone, Shards: 1})
			specSet(t, d, "live", big(6*page-200), 0, 0)
			specSet(t, d, "k", big(6*page-200), time.Millisecond, 0)
			c.Advance(time.Millisecond)
			if err := w.fn(d, big(7*page-200)); err != nil {
				t.Errorf("%s(\"k\", 7 pages) over its expired 6 = %v, want <nil>", w.name, err)
			}
			if _, _, err := d.Get("live"); err != nil {
				t.Errorf("Get(\"live\") after %s(\"k\") = %v: a live key evicted where k's own pages were free", w.name, err)
			}
			if st := d.Stats(); st.Evictions != 0 {
				t.Errorf("Stats().Evictions = %d, want 0", st.Evictions)
			}
		})
		t.Run(w.name+"/alone", func(t *testing.T) {
			d, c := openTest(t, Options{Size: specMinZone, Shards: 1})
			specSet(t, d, "k", big(12*page), time.Millisecond, 0)
			c.Advance(time.Millisecond)
			if err := w.fn(d, big(6*page)); err != nil {
				t.Errorf("%s(\"k\", 6 pages) over its expired 12 in an otherwise empty zone = %v, want <nil>", w.name, err)
			}
		})
	}
}

package dict

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Tests of the eviction queue: the order Keys lists it in, and the second
// chance CLOCK gives a key that was read.

// TestKeysOrder pins the order of Keys within a shard: the eviction queue
// from its tail (CLOCK, doc.go). A read only marks its entry, so it moves
// nothing; a write that needs a new chunk moves the entry to the head; a
// second chance moves a marked entry to the head.
func TestKeysOrder(t *testing.T) {
	d, c := specOpen(t, Options{Shards: 1})
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
	specCheck(t, d)
}

// TestSecondChance fills a one-shard zone after reading some keys: the first
// eviction passes over the keys read, moving them to the head of the
// protected segment, and evicts the oldest key not read.
func TestSecondChance(t *testing.T) {
	d, _ := specOpen(t, Options{Size: specMinZone, Shards: 1})
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
	specCheck(t, d)
}

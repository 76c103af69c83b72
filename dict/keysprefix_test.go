package dict

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestKeysWithPrefix lists the keys of a prefix from a zone of many
// buckets, where a walk takes many holds of each shard's lock. It must
// list each live key of the prefix once: not the expired ones, not the
// deleted ones, not those of other prefixes. A read-only view lists the
// same keys.
func TestKeysWithPrefix(t *testing.T) {
	d, c := openTest(t, Options{Size: 4 << 20, Shards: 4})
	if n := len(d.shards[0].index); n < 4*prefixChunk {
		t.Fatalf("a shard has %d buckets, want %d or more: walks of many holds", n, 4*prefixChunk)
	}
	var want []string
	for i := range 3000 {
		k := fmt.Sprint("count|t|", i)
		ttl := time.Duration(0)
		switch {
		case i%10 == 1:
			ttl = time.Second // expired below
		case i%10 == 2: // deleted below
		default:
			want = append(want, k)
		}
		specSet(t, d, k, Int(int64(i)), ttl, 0)
		specSet(t, d, fmt.Sprint("count|tt|", i), Int(1), 0, 0)
		specSet(t, d, fmt.Sprint("other|", i), Int(1), 0, 0)
		if i%10 == 2 {
			if err := d.Delete(k); err != nil {
				t.Fatal(err)
			}
		}
	}
	specSet(t, d, "count|t", Int(1), 0, 0)  // the prefix less its last byte
	specSet(t, d, "count|t|", Int(1), 0, 0) // the prefix itself
	want = append(want, "count|t|")
	c.Advance(2 * time.Second)
	slices.Sort(want)

	view, err := Open(d.Path(), Options{ReadOnly: true, Clock: c.UnixMilli})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	for _, tt := range []struct {
		name string
		d    *Dict
	}{{"writable", d}, {"read-only", view}} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.d.KeysWithPrefix("count|t|")
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("KeysWithPrefix(%q) = %d keys, want %d: %s", "count|t|", len(got), len(want), firstDiff(got, want))
			}
		})
	}
	if got, err := d.KeysWithPrefix("none|"); err != nil || len(got) != 0 {
		t.Errorf("KeysWithPrefix(\"none|\") = %q, %v; want none", got, err)
	}
	all, err := d.KeysWithPrefix("")
	if err != nil || len(all) != len(want)+2*3000+1 {
		t.Errorf("KeysWithPrefix(\"\") = %d keys, %v; want %d", len(all), err, len(want)+2*3000+1)
	}
	d.Close()
	if _, err := d.KeysWithPrefix("count|"); err != ErrClosed {
		t.Errorf("KeysWithPrefix after Close = %v, want ErrClosed", err)
	}
}

// firstDiff describes where two sorted lists of keys part.
func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("key %d is %q, want %q", i, got[i], want[i])
		}
	}
	return "one list is a prefix of the other"
}

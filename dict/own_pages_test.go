package dict

import (
	"fmt"
	"testing"
)

// TestOwnPagesKept: two processes that create and rewrite their own keys,
// in turns, while short-lived writers come and go beside them, find most
// of their entries in pages of their own (slab.Mine): taking pages back
// from writers gone and leaving full pages that had an entry freed leave
// the two their pages.
func TestOwnPagesKept(t *testing.T) {
	const keys = 2000
	a, b, _ := openOwnViews(t, 4<<20, 4)
	sizes := []int{8, 40, 100, 200}
	key := func(d *Dict, i int) string {
		if d == a {
			return fmt.Sprintf("a-%05d", i)
		}
		return fmt.Sprintf("b-%05d", i)
	}
	set := func(d *Dict, i, size int) {
		t.Helper()
		if _, err := d.Set(key(d, i), Bytes(make([]byte, size)), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range keys {
		for _, d := range []*Dict{a, b} {
			set(d, i, sizes[i%len(sizes)])
			if i%10 == 9 {
				// A rewrite of another size frees a chunk.
				set(d, i-5, sizes[(i+1)%len(sizes)])
			}
		}
		if i%200 == 0 {
			c, err := Open(a.Path(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			for k := range 8 {
				if _, err := c.Set(fmt.Sprintf("c-%05d-%d", i, k), Bytes(make([]byte, sizes[k%len(sizes)])), 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			c.Close()
		}
	}
	for _, d := range []*Dict{a, b} {
		mine := 0
		for i := range keys {
			s, off := placeOf(t, d, key(d, i))
			if s.slab.Mine(off) {
				mine++
			}
		}
		if mine < keys*9/10 {
			t.Errorf("%d of %d entries of %s in pages of its own, want 90%% at least", mine, keys, key(d, 0)[:1])
		}
		t.Logf("%s: %d of %d entries in pages of its own", key(d, 0)[:1], mine, keys)
	}
}

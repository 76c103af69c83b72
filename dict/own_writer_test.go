package dict

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestMoveToWriterPages: entries that one process created and another
// writes in place move, one by one, to pages the writer took for itself,
// keeping their values; at most one per shard while the clock stands
// still, and each once.
func TestMoveToWriterPages(t *testing.T) {
	const keys, shards = 300, 4
	a, b, c := openOwnViews(t, 1<<20, shards)
	for i := range keys {
		if _, err := a.Set(specKey(i), Int(0), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range keys {
		if s, off := placeOf(t, b, specKey(i)); s.slab.Mine(off) {
			t.Fatalf("%s lies in a page of b's own before b wrote it", specKey(i))
		}
	}
	writes := 0
	round := func() {
		for i := range keys {
			if _, err := b.Incr(specKey(i), 1); err != nil {
				t.Fatal(err)
			}
		}
		writes++
	}
	for range 200 {
		round()
	}
	if m := b.Stats().Moves; m < 1 || m > shards {
		t.Fatalf("Stats().Moves = %d after %d writes of each entry at one instant, want 1 to %d: one per shard and millisecond", m, writes, shards)
	}
	for b.Stats().Moves < keys && writes < 5000 {
		c.Advance(time.Millisecond)
		round()
	}
	if m := b.Stats().Moves; m != keys {
		t.Fatalf("Stats().Moves = %d after %d writes of each entry, want %d: each entry once", m, writes, keys)
	}
	for i := range keys {
		key := specKey(i)
		// In a page b took, which is b's for every view.
		if s, off := placeOf(t, b, key); !s.slab.Mine(off) {
			t.Fatalf("%s at %d: not in a page of b's own", key, off)
		}
		if s, off := placeOf(t, a, key); s.slab.Mine(off) {
			t.Fatalf("%s at %d: in a page b took, which a's view names its own", key, off)
		}
		wantGet(t, a, key, Int(int64(writes)), 0)
	}
	if st := a.Stats(); st.Entries != keys || st.Moves != keys {
		t.Fatalf("Stats() = %+v, want %d entries, each moved once", st, keys)
	}
}

// TestMoveBoundedOnSharedKey: a key that two processes write in turn moves
// at most once per millisecond, in both together, and once each way in
// all, however many writes it takes, and every increment lands.
func TestMoveBoundedOnSharedKey(t *testing.T) {
	a, b, c := openOwnViews(t, 1<<20, 1)
	if _, err := a.Set("hot", Int(0), 0, 0); err != nil {
		t.Fatal(err)
	}
	n := 0
	turns := func(k int) {
		for range k {
			for _, d := range []*Dict{a, b} {
				if _, err := d.Incr("hot", 1); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
	}
	turns(5000)
	if m := a.Stats().Moves; m != 1 {
		t.Fatalf("Stats().Moves = %d after %d increments at one instant, want 1: one per shard and millisecond, in both processes together", m, n)
	}
	const ms = 50
	for range ms {
		c.Advance(time.Millisecond)
		turns(500)
	}
	if m := a.Stats().Moves; m != 2 {
		t.Fatalf("Stats().Moves = %d over %d ms of increments in turn, want 2: once each way", m, ms+1)
	}
	wantGet(t, a, "hot", Int(int64(n)), 0)
}

// TestMoveNeedsRoom: in a zone with no free page, or with no more free
// than the reserve that moves leave (moveReserve), entries written by a
// process that took no page stay where they are, even where other pages
// have room, and the writes land.
func TestMoveNeedsRoom(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int64
		// full reports whether a's keys filled the zone enough.
		full func(s *shard, forcible bool) bool
	}{
		{"no free page", specMinZone, func(_ *shard, forcible bool) bool { return forcible }},
		{"the reserve free", 1 << 20, func(s *shard, _ bool) bool {
			return s.slab.FreePages() <= s.slab.Pages()/moveReserve
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, c := openOwnViews(t, tc.size, 1)
			s := &a.shards[0]
			n := 0
			for ; ; n++ {
				forcible, err := a.Set(specKey(n), Int(0), 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				if tc.full(s, forcible) {
					break
				}
			}
			// Room in a's pages, but no free page beyond the reserve: keys
			// from the middle, whose page keeps others.
			for i := range 10 {
				if err := a.Delete(specKey(n/2 + i)); err != nil {
					t.Fatal(err)
				}
			}
			free := s.slab.FreePages()
			if free > s.slab.Pages()/moveReserve {
				t.Fatalf("%d free pages of %d, want no more than the reserve", free, s.slab.Pages())
			}
			live := 0
			for i := 0; i <= n; i++ {
				c.Advance(time.Millisecond)
				for range moveEvery {
					_, err := b.Incr(specKey(i), 1)
					if errors.Is(err, ErrNotFound) {
						break // evicted, or deleted
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if _, err := b.Incr(specKey(i), 0); err == nil {
					live++
					wantGet(t, a, specKey(i), Int(moveEvery), 0)
				}
			}
			if live == 0 {
				t.Fatal("no key left to write")
			}
			if m := a.Stats().Moves; m != 0 || s.slab.FreePages() != free {
				t.Fatalf("Stats().Moves = %d and %d free pages, was %d: want no move", m, s.slab.FreePages(), free)
			}
		})
	}
}

// TestMoveLeavesRunEntries writes in place, from a second view, two
// entries the first made: a counter, in a small page of the first's, and a
// value too large for a class, in a run of pages of its own, 640 times
// each, 2 ms apart every 64 writes. The counter moves to the writer's
// pages, once; the large entry stays where it is, as it shares nothing, and
// the shard is never repaired. Its every 64th write once asked AllocOwn,
// whose pages are small, for a run's size, took the ErrTooLarge answer for
// a corrupt arena and repaired the shard: 10 repairs over these writes,
// each sending every protected entry back to probation.
func TestMoveLeavesRunEntries(t *testing.T) {
	a, b, c := openOwnViews(t, 1<<20, 1)
	big := Bytes(bytes.Repeat([]byte{'x'}, 3000))
	if _, err := a.Set("big", big, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.IncrInit("n", 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64*10; i++ {
		if i%64 == 0 {
			c.Advance(2 * time.Millisecond)
		}
		if _, err := b.Set("big", big, 0, 0); err != nil {
			t.Fatalf("Set(\"big\") %d = %v", i, err)
		}
		if _, err := b.Incr("n", 1); err != nil {
			t.Fatalf("Incr(\"n\") %d = %v", i, err)
		}
	}
	if st := b.Stats(); st.Recoveries != 0 || st.Moves != 1 {
		t.Errorf("Stats() = %d recoveries, %d moves; want 0 and 1 (the counter)", st.Recoveries, st.Moves)
	}
	if v, _, err := b.Get("n"); err != nil || v.Int() != 640 {
		t.Errorf("Get(\"n\") = %v, %v; want 640", v, err)
	}
}

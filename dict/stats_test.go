package dict

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// statsCounts are the operation counts of Stats.
type statsCounts struct{ hits, misses, writes uint64 }

func countsOf(st Stats) statsCounts { return statsCounts{st.Hits, st.Misses, st.Writes} }

// statsWork runs, in goroutines at once, operations whose counts are known,
// on keys spread over many slab pages: entry writes (Incr, a Set, a
// CompareAndSwap, an Update and a Mutate of a value of the same size, an
// Expire), reads, misses, and writes under the shard's lock (a Set that
// grows a value, a Delete). It returns what Stats must then count.
func statsWork(t *testing.T, d *Dict, workers, rounds int) statsCounts {
	t.Helper()
	const keys = 400 // about 30 pages of counters
	var want statsCounts
	// The workers' keys side by side, so that their writers share pages;
	// and a key they all increment.
	if _, err := d.Set("shared", Int(0), 0, 0); err != nil {
		t.Fatal(err)
	}
	want.writes++
	for i := 0; i < keys; i++ {
		for w := 0; w < workers; w++ {
			k := fmt.Sprintf("w%d:int:%04d", w, i)
			if _, err := d.Set(k, Int(0), 0, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Set(fmt.Sprintf("w%d:bytes:%04d", w, i), Bytes(make([]byte, 16)), 0, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Set(fmt.Sprintf("w%d:float:%04d", w, i), Float(0.5), 0, 0); err != nil {
				t.Fatal(err)
			}
			want.writes += 3
		}
	}
	// Per round and key: Incr of its own key and of the shared one, and
	// IncrFloat of its float (a hit and a write each: the int's plain add
	// and the float's incrEntry), Set in place, CAS in place (a write; its
	// compare is no hit), Update in place, Mutate, Expire (a write each),
	// Get (a hit), Get of an absent key (a miss), Incr of an absent key (a
	// miss).
	per := statsCounts{hits: 4, misses: 2, writes: 8}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			errs <- statsRounds(d, w, keys, rounds)
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	n := uint64(workers * keys * rounds)
	want.hits += per.hits * n
	want.misses += per.misses * n
	want.writes += per.writes * n
	// Under the shard's lock: a value that grows, and a delete.
	for i := 0; i < keys; i++ {
		if _, err := d.Set(fmt.Sprintf("w0:bytes:%04d", i), Bytes(make([]byte, 40)), 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := d.Delete(fmt.Sprintf("w0:int:%04d", i)); err != nil {
			t.Fatal(err)
		}
		want.writes += 2
	}
	return want
}

// statsRounds is one worker of statsWork.
func statsRounds(d *Dict, w, keys, rounds int) error {
	inc := func(b []byte, _ bool) bool { b[0]++; return true }
	same := func(v Value, ok bool) (Value, time.Duration, bool) { return v, 0, ok }
	for r := 0; r < rounds; r++ {
		for i := 0; i < keys; i++ {
			ik, bk := fmt.Sprintf("w%d:int:%04d", w, i), fmt.Sprintf("w%d:bytes:%04d", w, i)
			n, err := d.Incr(ik, 1)
			if err != nil {
				return err
			}
			if _, err := d.Incr("shared", 1); err != nil {
				return err
			}
			if _, err := d.IncrFloat(fmt.Sprintf("w%d:float:%04d", w, i), 1); err != nil {
				return err
			}
			if _, err := d.Set(ik, Int(n), 0, 0); err != nil {
				return err
			}
			if ok, err := d.CompareAndSwap(ik, Int(n), Int(n+1), 0); err != nil || !ok {
				return fmt.Errorf("CompareAndSwap %s: %v, %v", ik, ok, err)
			}
			if err := d.Update(bk, same); err != nil {
				return err
			}
			if err := d.Mutate(bk, 16, 0, inc); err != nil {
				return err
			}
			if err := d.Expire(ik, 0); err != nil {
				return err
			}
			if _, _, err := d.Get(bk); err != nil {
				return err
			}
			if _, _, err := d.Get(ik + ":absent"); err != ErrNotFound {
				return fmt.Errorf("Get of an absent key: %v", err)
			}
			if _, err := d.Incr(ik+":absent", 1); err != ErrNotFound {
				return fmt.Errorf("Incr of an absent key: %v", err)
			}
		}
	}
	return nil
}

// TestStatsCountsExact: Stats counts every operation once, however many
// goroutines count at once and whichever way each write went (under its
// entry's page lock, or the shard's); the Dict that counted sees its counts
// at once, another Dict on the zone once they are synced, and after the
// counting Dict closes.
func TestStatsCountsExact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stats.zone")
	d, err := Open(path, Options{Size: 4 << 20, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	other, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	want := statsWork(t, d, 4, 30)
	if got := countsOf(d.Stats()); got != want {
		t.Errorf("the counting Dict's Stats: %+v, want %+v", got, want)
	}
	d.SyncStats()
	if got := countsOf(other.Stats()); got != want {
		t.Errorf("another Dict's Stats after SyncStats: %+v, want %+v", got, want)
	}
	// Counted again after the sync, then closed: Close adds the rest.
	want2 := statsWork(t, d, 2, 5)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	sum := statsCounts{want.hits + want2.hits, want.misses + want2.misses, want.writes + want2.writes}
	// statsWork's second call set its keys again: the same counts.
	if got := countsOf(other.Stats()); got != sum {
		t.Errorf("another Dict's Stats after Close: %+v, want %+v", got, sum)
	}
}

// TestStatsBehindBounded: without a sync, another Dict's Stats lag the
// counting Dict's by less than tallyFlush counts of a kind on a page of
// entries: a hot key's counts reach the zone as they are made.
func TestStatsBehindBounded(t *testing.T) {
	d, _ := openTest(t, Options{Shards: 1})
	other, err := Open(d.Path(), Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := d.Set("hot", Int(0), 0, 0); err != nil {
		t.Fatal(err)
	}
	const n = 3*tallyFlush + 7
	for i := 0; i < n; i++ {
		if _, err := d.Incr("hot", 1); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Set("hot", Int(int64(i)), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	st := other.Stats()
	if st.Hits < n-(tallyFlush-1) || st.Hits > n {
		t.Errorf("another Dict sees %d hits of %d: want at most %d behind", st.Hits, n, tallyFlush-1)
	}
	// Incr writes, and so does each Set: two kinds of count, each at most
	// tallyFlush-1 behind; 1 for the first Set.
	if w := uint64(2*n + 1); st.Writes < w-2*(tallyFlush-1) || st.Writes > w {
		t.Errorf("another Dict sees %d writes of %d: want at most %d behind", st.Writes, w, 2*(tallyFlush-1))
	}
}

// A shard's pageOf, the page index of entry writes' counts, names the page
// whose word the slab's PageWord gives, at every page's edges, and no page
// for an offset outside them, where PageWord gives none.
func TestShardPageOf(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "pages.zone"), Options{Size: 4 << 20, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range d.shards {
		s := &d.shards[i]
		if len(s.pages) != s.slab.Pages() || len(s.pages) == 0 {
			t.Fatalf("shard %d: %d page counts for %d pages", i, len(s.pages), s.slab.Pages())
		}
		pagesOff, shift := s.slab.PageGeometry()
		offs := []uint32{0, 1, pagesOff - 1, ^uint32(0), ^uint32(0) - pagesOff, uint32(len(s.arena)), uint32(len(s.arena)) - 1}
		for p := 0; p <= len(s.pages); p++ {
			start := pagesOff + uint32(p)<<shift
			offs = append(offs, start, start+1, start+8, start+1<<shift-1)
		}
		for _, off := range offs {
			w, got := s.slab.PageWord(off), s.pageOf(off)
			switch {
			case w == nil && got < len(s.pages):
				t.Fatalf("shard %d: pageOf(%d) = page %d, outside the pages", i, off, got)
			case w != nil && (got >= len(s.pages) || w != (*uint64)(unsafe.Pointer(&s.arena[int(pagesOff)+got<<shift]))):
				t.Fatalf("shard %d: pageOf(%d) = %d, not the page of PageWord's word %p", i, off, got, w)
			}
		}
	}
}

// The clock's checks add a Dict's page counts to the zone every pageTicks
// checks, and at the last check before the clock stops, whatever the
// count; the shards' own counts at every check. A zone under 512 MiB has
// its page counts added at every check.
func TestCheckFlushPageTicks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ticks.zone")
	d, err := Open(path, Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.pageTicks != 1 {
		t.Fatalf("a 1 MiB zone's pageTicks = %d, want 1", d.pageTicks)
	}
	other, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// The checks are the test's own: once unregistered (which waits for a
	// check in progress), the clock's ticker makes none, and those it made
	// since Open are forgotten.
	unregisterTallies(d)
	d.checks.Store(0)
	d.pageTicks = 3
	d.SyncStats()
	base := other.Stats()
	step := func(check string, last bool, wantWrites, wantMisses uint64) {
		t.Helper()
		d.checkFlush(last)
		st := other.Stats()
		if w, m := st.Writes-base.Writes, st.Misses-base.Misses; w != wantWrites || m != wantMisses {
			t.Errorf("after %s: another Dict sees %d more writes and %d more misses, want %d and %d", check, w, m, wantWrites, wantMisses)
		}
	}
	// Writes in place as their writers count them, on a page of the
	// shard of "k".
	s := d.shardFor(hashKey(d.seed, "k"))
	write := func(n int) {
		for i := 0; i < n; i++ {
			s.entryCounted(s.pagesOff, tWrites)
		}
	}
	write(5)
	if _, err := d.Incr("absent", 1); err != ErrNotFound {
		t.Fatalf("Incr of an absent key = %v", err)
	}
	step("check 1", false, 0, 1)
	step("check 2", false, 0, 1)
	step("check 3", false, 5, 1)
	write(2)
	step("check 4", false, 5, 1)
	step("the last check", true, 7, 1)
}

package dict

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// openOwnViews opens a zone of size bytes and shards shards twice, as two
// processes would (each Dict has slab views of its own), on one fake clock.
func openOwnViews(t *testing.T, size int64, shards int) (a, b *Dict, c *specClock) {
	t.Helper()
	c = newSpecClock()
	path := filepath.Join(t.TempDir(), "zone")
	a, err := Open(path, Options{Size: size, Shards: shards, Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err = Open(path, Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b, c
}

// placeOf returns key's shard in d and its entry's offset (0: absent).
func placeOf(t *testing.T, d *Dict, key string) (*shard, uint32) {
	t.Helper()
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	if err := d.lock(s); err != nil {
		t.Fatal(err)
	}
	defer d.unlock(s)
	off, _, err := s.findLocked(key, h)
	if err != nil {
		t.Fatalf("find %q: %v", key, err)
	}
	return s, off
}

// TestMoveConcurrent: moves of entries (moveToOwn, called here as a write
// in place calls it) while goroutines of both processes increment them
// lose no increment and leave a sound zone; under the race detector, it is
// the moves' test.
func TestMoveConcurrent(t *testing.T) {
	const keys, writers, rounds = 64, 4, 300
	a, b, c := openOwnViews(t, 1<<20, 2)
	for i := range keys {
		if _, err := a.Set(specKey(i), Int(0), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		d := []*Dict{a, b}[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				for i := range keys {
					if _, err := d.Incr(specKey((i+r)%keys), 1); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	moved := make(chan int)
	go func() {
		n := 0
		for i := 0; ; i++ {
			select {
			case <-done:
				moved <- n
				return
			default:
			}
			c.Advance(time.Millisecond)
			key := specKey(i % keys)
			h := hashKey(b.seed, key)
			before := b.Stats().Moves
			b.moveToOwn(b.shardFor(h), key, h, 0)
			if b.Stats().Moves > before {
				n++
			}
		}
	}()
	wg.Wait()
	close(done)
	if n := <-moved; n == 0 {
		t.Fatal("no entry moved")
	}
	for i := range keys {
		wantGet(t, a, specKey(i), Int(writers*rounds), 0)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestTriedSince: a try at the same millisecond or up to a minute later
// (another process's clock, ahead) waits; an earlier one, or one further
// ahead, across the wrap of the 32 bits too, does not.
func TestTriedSince(t *testing.T) {
	for _, c := range []struct {
		at, now uint32
		want    bool
	}{
		{100, 100, true},
		{101, 100, true},
		{100 + 59_999, 100, true},
		{100 + 60_000, 100, false},
		{99, 100, false},
		{0, 1 << 31, false},
		{1<<32 - 1, 0, false},
		{2, 1<<32 - 1, true},
		{0, 1<<32 - 5, true},
	} {
		if got := triedSince(c.at, c.now); got != c.want {
			t.Errorf("triedSince(%d, %d) = %t, want %t", c.at, c.now, got, c.want)
		}
	}
}

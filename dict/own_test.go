package dict

import (
	"sync"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/shm"
)

// openOwnViews opens a zone of size bytes and shards shards twice, as two
// processes would (each Dict has slab views of its own), on one fake clock.
// The first is openTest's: the zone is checked when the test ends, once
// the second is closed.
func openOwnViews(t *testing.T, size int64, shards int) (a, b *Dict, c *testutil.Clock) {
	return openOwnViewsWith(t, size, shards, Options{})
}

// openOwnViewsWith is openOwnViews whose second Dict opens with o and the
// clock.
func openOwnViewsWith(t *testing.T, size int64, shards int, o Options) (a, b *Dict, c *testutil.Clock) {
	t.Helper()
	a, c = openTest(t, Options{Size: size, Shards: shards})
	o.Clock = c.UnixMilli
	b, err := Open(a.Path(), o)
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
	off, err := s.findInShard(key, h)
	if err != nil {
		t.Fatalf("find %q: %v", key, err)
	}
	return s, off
}

// TestMoveConcurrent: moves of entries (moveToOwn, called here as a write
// in place calls it) while goroutines of both processes increment them
// lose no increment and leave a sound zone.
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

// TestMoveNeverWaits: a move finds the entry's page lock held (by a writer
// inside a Mutate's fn, say) and gives up at once, though its Dict waits
// for locks without bound; once the page is free, the entry moves.
func TestMoveNeverWaits(t *testing.T) {
	a, b, c := openOwnViewsWith(t, 1<<20, 1, Options{LockTimeout: -1})
	if _, err := a.Set("k", Int(7), 0, 0); err != nil {
		t.Fatal(err)
	}
	h := hashKey(b.seed, "k")
	s, off := placeOf(t, b, "k")
	pw := s.slab.PageLock(off)
	if pw == nil || !a.z.TryLock(pw) {
		t.Fatal("cannot take the page lock of k's entry")
	}
	done := make(chan struct{})
	go func() {
		b.moveToOwn(s, "k", h, off)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("moveToOwn still waits for a held page lock after a minute")
	}
	if m := b.Stats().Moves; m != 0 {
		t.Fatalf("Stats().Moves = %d with k's page locked, want 0", m)
	}
	if _, now := placeOf(t, b, "k"); now != off {
		t.Fatalf("k moved from %d to %d under a held page lock", off, now)
	}
	shm.Unlock(pw)
	c.Advance(time.Millisecond)
	b.moveToOwn(s, "k", h, off)
	if m := b.Stats().Moves; m != 1 {
		t.Fatalf("Stats().Moves = %d once the page is free, want 1", m)
	}
	wantGet(t, a, "k", Int(7), 0)
}

package dict

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// add1 treats b as a little-endian counter in its first 8 bytes.
func add1(b []byte, _ bool) bool {
	binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(b)+1)
	return true
}

func TestMutate(t *testing.T) {
	d, c := openTest(t, Options{Shards: 1})
	empty := d.FreeSpace()

	// Absent: fn sees zeros and found false; false creates nothing.
	err := d.Mutate("k", 16, time.Second, func(b []byte, found bool) bool {
		if found || !bytes.Equal(b, make([]byte, 16)) {
			t.Errorf("fn(%x, %v) for an absent key, want 16 zero bytes and false", b, found)
		}
		b[0] = 9
		return false
	})
	if err != nil {
		t.Fatalf("Mutate(absent, keep false) = %v", err)
	}
	wantGetErr(t, d, "k", ErrNotFound)
	if got := d.FreeSpace(); got != empty {
		t.Fatalf("FreeSpace after a Mutate that kept nothing = %d, want %d", got, empty)
	}

	// Absent, kept: a new entry with the TTL, flags 0.
	if err := d.Mutate("k", 16, time.Second, add1); err != nil {
		t.Fatalf("Mutate(absent) = %v", err)
	}
	want := make([]byte, 16)
	want[0] = 1
	wantGet(t, d, "k", Bytes(want), 0)

	// Found: changed in place; TTL and flags stay.
	if err := d.Expire("k", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := d.Update("k", func(cur Value, ok bool) (Value, time.Duration, bool) { return Value{}, 0, true }); err != nil {
		t.Fatal(err)
	}
	err = d.Mutate("k", 16, time.Second, func(b []byte, found bool) bool {
		if !found {
			t.Errorf("fn found = false for a live key")
		}
		return add1(b, found)
	})
	if err != nil {
		t.Fatalf("Mutate(found) = %v", err)
	}
	want[0] = 2
	wantGet(t, d, "k", Bytes(want), 0)
	if ttl, err := d.TTL("k"); ttl != time.Minute || err != nil {
		t.Fatalf("TTL after Mutate = %v, %v; want 1m0s (unchanged)", ttl, err)
	}

	// Expired: absent again, with the new TTL.
	c.Advance(time.Minute)
	if err := d.Mutate("k", 16, 5*time.Second, add1); err != nil {
		t.Fatalf("Mutate(expired) = %v", err)
	}
	want[0] = 1
	wantGet(t, d, "k", Bytes(want), 0)
	if ttl, err := d.TTL("k"); ttl != 5*time.Second || err != nil {
		t.Fatalf("TTL after Mutate of an expired key = %v, %v; want 5s", ttl, err)
	}

	// Another shape: fn is not called, the value stays.
	called := func([]byte, bool) bool { t.Errorf("fn called on a value of another shape"); return true }
	for _, v := range []Value{Int(5), String("short"), Bytes(make([]byte, 17))} {
		specSet(t, d, "other", v, 0, 3)
		if err := d.Mutate("other", 16, 0, called); !errors.Is(err, ErrWrongShape) {
			t.Fatalf("Mutate over %v = %v, want ErrWrongShape", v.Kind(), err)
		}
		wantGet(t, d, "other", v, 3)
	}
	if _, err := d.LPush("list", Int(1)); err != nil {
		t.Fatal(err)
	}
	if err := d.Mutate("list", 16, 0, called); !errors.Is(err, ErrWrongShape) {
		t.Fatalf("Mutate over a list = %v, want ErrWrongShape", err)
	}

	for _, size := range []int{0, -1, MaxMutateSize + 1} {
		if err := d.Mutate("k", size, 0, add1); !errors.Is(err, ErrBadValue) {
			t.Fatalf("Mutate(size %d) = %v, want ErrBadValue", size, err)
		}
	}
	if err := d.Mutate("k", 16, -time.Second, add1); !errors.Is(err, ErrBadTTL) {
		t.Fatalf("Mutate(negative ttl) = %v", err)
	}
}

// TestMutateOutcomeNegativeTTL checks that MutateOutcome's fn returning a
// negative TTL for an entry that stays is ErrBadTTL with its change undone,
// as a negative TTL is everywhere else, rather than an entry that never
// expires; and that a new entry fn does not keep ignores it.
func TestMutateOutcomeNegativeTTL(t *testing.T) {
	d, c := openTest(t, Options{Shards: 1})
	empty := d.FreeSpace()
	set := func(b []byte, _ bool) (bool, time.Duration) { b[0] = 'X'; return true, -time.Second }
	if _, err := d.MutateOutcome("new", 16, set); !errors.Is(err, ErrBadTTL) {
		t.Fatalf("MutateOutcome(absent, keep, ttl -1s) = %v, want ErrBadTTL", err)
	}
	wantGetErr(t, d, "new", ErrNotFound)
	if got := d.FreeSpace(); got != empty {
		t.Fatalf("FreeSpace after a refused new entry = %d, want %d", got, empty)
	}
	drop := func(b []byte, _ bool) (bool, time.Duration) { b[0] = 'X'; return false, -time.Second }
	if _, err := d.MutateOutcome("new", 16, drop); err != nil {
		t.Fatalf("MutateOutcome(absent, keep false, ttl -1s) = %v, want <nil>", err)
	}
	wantGetErr(t, d, "new", ErrNotFound)

	// A found entry, live or expired since (a new one again).
	old := bytes.Repeat([]byte("o"), 16)
	for _, expire := range []bool{false, true} {
		specSet(t, d, "k", Bytes(old), time.Minute, 5)
		if expire {
			c.Advance(time.Minute)
		}
		if _, err := d.MutateOutcome("k", 16, set); !errors.Is(err, ErrBadTTL) {
			t.Fatalf("MutateOutcome(found, ttl -1s), expired %v = %v, want ErrBadTTL", expire, err)
		}
		if expire {
			wantGetErr(t, d, "k", ErrNotFound)
			continue
		}
		wantGet(t, d, "k", Bytes(old), 5)
		if ttl, err := d.TTL("k"); ttl != time.Minute || err != nil {
			t.Fatalf("TTL after a refused MutateOutcome = %v, %v; want 1m0s (unchanged)", ttl, err)
		}
	}
}

func TestMutateAllocs(t *testing.T) {
	d, _ := openTest(t, Options{})
	if err := d.Mutate("k", 16, 0, add1); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { d.Mutate("k", 16, 0, add1) }); n != 0 {
		t.Fatalf("Mutate of a live key: %v allocs, want 0", n)
	}
}

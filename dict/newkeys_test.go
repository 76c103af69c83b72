package dict

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// New keys and the eviction queue (DESIGN.md, section 5): every way of creating a key
// joins probation unreferenced, so that keys never used again are evicted
// before keys that were. Writing to a live key is a use, pushing onto an
// existing list included.

// refOf returns the CLOCK and segment bits of key's entry: whether it was
// used since the hand last passed, and whether it is protected. The zone
// must pass Check.
func refOf(t *testing.T, d *Dict, key string) (ref, prot bool) {
	t.Helper()
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	if err := d.lock(s); err != nil {
		t.Fatal(err)
	}
	defer d.unlock(s)
	off, err := s.findInShard(key, h)
	if err != nil || off == 0 {
		t.Fatalf("no entry of %q: %v", key, err)
	}
	b := s.entryAt(off).bits()
	return b&refBit != 0, b&protBit != 0
}

// TestCreatedKeysUnreferenced creates a key by every operation that can,
// over no entry and over the key's expired entry of another size: each
// joins probation unreferenced. The same operation on the live key is a
// use, and sets the key's bit.
func TestCreatedKeysUnreferenced(t *testing.T) {
	set := func(d *Dict, k string) error { _, err := d.Set(k, Int(1), 0, 0); return err }
	ops := []struct {
		name string
		do   func(d *Dict, key string) error
		// use is the operation on the live key; nil: do again.
		use func(d *Dict, key string) error
	}{
		{"Set", set, nil},
		{"SafeSet", func(d *Dict, k string) error { return d.SafeSet(k, Int(1), 0, 0) }, nil},
		{"Add", func(d *Dict, k string) error { _, err := d.Add(k, Int(1), 0, 0); return err }, set},
		{"SafeAdd", func(d *Dict, k string) error { return d.SafeAdd(k, Int(1), 0, 0) }, set},
		{"IncrInit", func(d *Dict, k string) error { _, _, err := d.IncrInit(k, 1, 0, 0); return err }, nil},
		{"IncrInitNum", func(d *Dict, k string) error { _, _, err := d.IncrInitNum(k, 1, 0, 0); return err }, nil},
		{"Mutate", func(d *Dict, k string) error {
			return d.Mutate(k, 16, 0, func(b []byte, found bool) bool { b[0]++; return true })
		}, nil},
		{"MutateOutcome", func(d *Dict, k string) error {
			_, err := d.MutateOutcome(k, 16, func(b []byte, found bool) (bool, time.Duration) { b[0]++; return true, 0 })
			return err
		}, nil},
		{"Update", func(d *Dict, k string) error {
			return d.Update(k, func(Value, bool) (Value, time.Duration, bool) { return Int(1), 0, true })
		}, nil},
		{"UpdateOutcome", func(d *Dict, k string) error {
			_, err := d.UpdateOutcome(k, func(Value, bool) (Value, time.Duration, bool) { return Int(1), 0, true })
			return err
		}, nil},
		{"LPush", func(d *Dict, k string) error { _, err := d.LPush(k, Int(1)); return err }, nil},
		{"RPush", func(d *Dict, k string) error { _, err := d.RPush(k, Int(1)); return err }, nil},
		{"SetList", func(d *Dict, k string) error { return d.SetList(k, []Value{Int(1), Int(2)}, 0) }, nil},
	}
	// Before each creation the key holds nothing, or its own expired entry
	// of another size, which the creation frees first.
	befores := []struct {
		name string
		do   func(t *testing.T, d *Dict, c *testutil.Clock, key string)
	}{
		{"absent", func(*testing.T, *Dict, *testutil.Clock, string) {}},
		{"over its expired entry", func(t *testing.T, d *Dict, c *testutil.Clock, key string) {
			specSet(t, d, key, String("a value of another size than any op writes, read once"), time.Second, 0)
			d.Get(key)
			c.Advance(time.Second)
		}},
	}
	for _, op := range ops {
		for _, before := range befores {
			t.Run(op.name+"/"+before.name, func(t *testing.T) {
				d, c := openTest(t, Options{Shards: 1})
				before.do(t, d, c, "k")
				if err := op.do(d, "k"); err != nil {
					t.Fatalf("%s(\"k\") = %v", op.name, err)
				}
				if ref, prot := refOf(t, d, "k"); ref || prot {
					t.Errorf("%s(\"k\") created an entry referenced %v, protected %v; want neither", op.name, ref, prot)
				}
				use := op.use
				if use == nil {
					use = op.do
				}
				if err := use(d, "k"); err != nil {
					t.Fatalf("%s(\"k\") again = %v", op.name, err)
				}
				if ref, _ := refOf(t, d, "k"); !ref {
					t.Errorf("%s(\"k\") on the live key left it unreferenced; want it used", op.name)
				}
			})
		}
	}
}

// TestListsRemovedForcibly ports lua-nginx-module's shdict list test
// "list removed: forcibly" (145-shdict-list.t, TEST 16). A zone is filled
// with numbers until a Set evicts, emptied, filled with one-element lists
// never read again, and then Set the same numbers. In nginx the lists are
// the least recently used, so they are evicted first, and Get("2") finds
// 2. Here too: a new list joins probation unreferenced, as every new key.
func TestListsRemovedForcibly(t *testing.T) {
	d, _ := openTest(t, Options{Size: 900 << 10, Shards: 1})
	max := 0
	for i := 1; ; i++ {
		if i > 200_000 {
			t.Fatal("no eviction after 200,000 keys")
		}
		forcible, err := d.Set(strconv.Itoa(i), Int(int64(i)), 0, 0)
		if err != nil || forcible {
			max = i
			break
		}
	}
	wantGet(t, d, "2", Int(2), 0)
	if kept := keptNumbers(d, max); kept != max-1 {
		t.Fatalf("a zone of numbers only kept %d of the %d set, want all but the one the last Set evicted", kept, max)
	}
	if err := d.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.FlushExpired(0); err != nil {
		t.Fatal(err)
	}
	if keys, err := d.Keys(0); err != nil || len(keys) != 0 {
		t.Fatalf("Keys(0) after FlushAll and FlushExpired = %d keys, %v; want none", len(keys), err)
	}
	lists := 0
	for i := 1; i <= 200_000; i++ {
		if _, err := d.LPush(fmt.Sprintf("%05d", i), Int(int64(i))); err != nil {
			break // a push never evicts: the zone is full of lists
		}
		lists++
	}
	if lists == 0 {
		t.Fatal("no list pushed")
	}
	for i := 1; i <= max; i++ {
		if _, err := d.Set(strconv.Itoa(i), Int(int64(i)), 0, 0); err != nil {
			t.Fatalf("Set(%d) = %v", i, err)
		}
	}
	wantGet(t, d, "2", Int(2), 0)
	// The lists went first: the numbers kept are as many as a zone of
	// numbers only kept.
	if kept := keptNumbers(d, max); kept != max-1 {
		t.Errorf("after %d lists, Set of 1 to %d kept %d of the numbers, want %d: the lists evicted first", lists, max, kept, max-1)
	}
}

// keptNumbers returns how many of the keys "1" to "max" d holds.
func keptNumbers(d *Dict, max int) int {
	n := 0
	for i := 1; i <= max; i++ {
		if _, _, err := d.Get(strconv.Itoa(i)); err == nil {
			n++
		}
	}
	return n
}

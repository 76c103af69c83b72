package dict

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// The examples of spec/dict.md, one sub-test each, with an injected clock.

// specEpoch is where the fake clocks start: a fixed instant in the past, so a
// TTL measured on a fake clock has long run out on the system clock.
const specEpoch = int64(1_700_000_000_000)

// specMinZone is the smallest zone of one shard (shm.HeaderSize +
// shm.MinShardSize): 14 slab pages of 4 KiB.
const specMinZone = 4096 + 16*4096

// specClock is a fake clock in Unix ms that only moves when told.
type specClock struct{ ms atomic.Int64 }

func newSpecClock() *specClock {
	c := &specClock{}
	c.ms.Store(specEpoch)
	return c
}

func (c *specClock) Now() int64                { return c.ms.Load() }
func (c *specClock) Advance(d time.Duration)   { c.ms.Add(int64(d / time.Millisecond)) }
func (c *specClock) SetOffset(d time.Duration) { c.ms.Store(specEpoch + int64(d/time.Millisecond)) }

// specOpen creates a zone in a temporary directory with a fake clock (unless
// o.Clock is set) and 1 MiB unless o.Size is set; the Dict closes with the test.
func specOpen(t *testing.T, o Options) (*Dict, *specClock) {
	t.Helper()
	c := newSpecClock()
	if o.Clock == nil {
		o.Clock = c.Now
	}
	if o.Size == 0 {
		o.Size = 1 << 20
	}
	d, err := Open(filepath.Join(t.TempDir(), "zone"), o)
	if err != nil {
		t.Fatalf("Open(%+v) = %v", o, err)
	}
	t.Cleanup(func() { d.Close() })
	return d, c
}

func specCheck(t *testing.T, d *Dict) {
	t.Helper()
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
}

// wantGet fails unless Get(key) returns want and flags.
func wantGet(t *testing.T, d *Dict, key string, want Value, flags uint32) {
	t.Helper()
	v, f, err := d.Get(key)
	if err != nil || !v.Equal(want) || f != flags {
		t.Fatalf("Get(%q) = %s %v, %d, %v; want %s %v, %d, <nil>", short(key), v.Kind(), short(v.String()), f, err, want.Kind(), short(want.String()), flags)
	}
}

// wantGetErr fails unless Get(key) returns the error want.
func wantGetErr(t *testing.T, d *Dict, key string, want error) {
	t.Helper()
	if v, f, err := d.Get(key); !errors.Is(err, want) {
		t.Fatalf("Get(%q) = %s %v, %d, %v; want %v", short(key), v.Kind(), short(v.String()), f, err, want)
	}
}

func wantErr(t *testing.T, call string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s = %v, want %v", call, err, want)
	}
}

// short abbreviates long keys and values in messages.
func short(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s…(%d bytes)", s[:16], len(s))
	}
	return s
}

func specKey(i int) string { return fmt.Sprintf("key%05d", i) }

func TestSpecExamples(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"ex1-int", specEx1},
		{"ex2-float-overwrite", specEx2},
		{"ex3-bool", specEx3},
		{"ex4-resize", specEx4},
		{"ex5-ttl-boundary", specEx5},
		{"ex6-lru-eviction", specEx6},
		{"ex7-never-set", specEx7},
		{"ex8-too-large-no-memory", specEx8},
		{"ex9-key-length", specEx9},
		{"ex10-add", specEx10},
		{"ex11-replace", specEx11},
		{"ex12-incr", specEx12},
		{"ex13-flags", specEx13},
		{"ex14-flush-all", specEx14},
		{"ex15-flush-expired", specEx15},
		{"ex16-keys", specEx16},
		{"ex17-safe-set-add", specEx17},
		{"ex18-incr-init", specEx18},
		{"ex19-incr-init-bad-ttl", specEx19},
		{"ex20-lists", specEx20},
		{"ex21-reopen", specEx21},
	} {
		t.Run(tc.name, tc.run)
	}
}

func specSet(t *testing.T, d *Dict, key string, v Value, ttl time.Duration, flags uint32) {
	t.Helper()
	if _, err := d.Set(key, v, ttl, flags); err != nil {
		t.Fatalf("Set(%q, %s %v, %v, %d) = %v", short(key), v.Kind(), short(v.String()), ttl, flags, err)
	}
}

func specEx1(t *testing.T) {
	d, _ := specOpen(t, Options{})
	specSet(t, d, "foo", Int(32), 0, 0)
	wantGet(t, d, "foo", Int(32), 0)
	specCheck(t, d)
}

func specEx2(t *testing.T) {
	d, _ := specOpen(t, Options{})
	specSet(t, d, "baz", Float(1.28), 0, 0)
	specSet(t, d, "baz", Float(3.96), 0, 0)
	wantGet(t, d, "baz", Float(3.96), 0)
	v, _, _ := d.Get("baz")
	if v.Float() != 3.96 || v.Kind() != KindFloat {
		t.Fatalf("Get(\"baz\").Float() = %v (%s), want 3.96 (float)", v.Float(), v.Kind())
	}
	specCheck(t, d)
}

func specEx3(t *testing.T) {
	d, _ := specOpen(t, Options{})
	specSet(t, d, "t", Bool(true), 0, 0)
	specSet(t, d, "f", Bool(false), 0, 0)
	wantGet(t, d, "t", Bool(true), 0)
	wantGet(t, d, "f", Bool(false), 0)
	if v, _, _ := d.Get("f"); v.Bool() || v.Kind() != KindBool {
		t.Fatalf("Get(\"f\") = %v (%s), want false (bool)", v.Bool(), v.Kind())
	}
	specCheck(t, d)
}

func specEx4(t *testing.T) {
	d, _ := specOpen(t, Options{})
	for _, s := range []string{"hello", "hello, world", "hello", strings.Repeat("x", 3000), "hello"} {
		specSet(t, d, "k", String(s), 0, 0)
		wantGet(t, d, "k", String(s), 0)
	}
	specCheck(t, d)
}

func specEx5(t *testing.T) {
	// In ascending time, and in the spec's order (reads reclaim nothing, so
	// going back before the expiry finds the value again).
	for _, order := range [][]int{{9, 10, 11}, {11, 10, 9}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			d, c := specOpen(t, Options{})
			specSet(t, d, "foo", Int(32), 10*time.Millisecond, 0)
			for _, at := range order {
				c.SetOffset(time.Duration(at) * time.Millisecond)
				if at < 10 {
					wantGet(t, d, "foo", Int(32), 0)
				} else {
					wantGetErr(t, d, "foo", ErrNotFound)
				}
			}
			specCheck(t, d)
		})
	}
}

func specEx6(t *testing.T) {
	for _, read := range []bool{false, true} {
		t.Run(fmt.Sprintf("read-key1=%v", read), func(t *testing.T) {
			d, _ := specOpen(t, Options{Size: specMinZone, Shards: 1})
			for i := 1; ; i++ {
				if i > 100000 {
					t.Fatalf("no forcible Set after %d keys", i)
				}
				if read && i == 3 {
					wantGet(t, d, specKey(1), Int(1), 0)
				}
				forcible, err := d.Set(specKey(i), Int(int64(i)), 0, 0)
				if err != nil {
					t.Fatalf("Set(%q) = %v", specKey(i), err)
				}
				if !forcible {
					continue
				}
				gone, kept := 1, 2
				if read {
					gone, kept = 2, 1
				}
				wantGetErr(t, d, specKey(gone), ErrNotFound)
				wantGet(t, d, specKey(kept), Int(int64(kept)), 0)
				for j := 3; j <= i; j++ {
					wantGet(t, d, specKey(j), Int(int64(j)), 0)
				}
				if ev := d.Stats().Evictions; ev != 1 {
					t.Fatalf("Stats().Evictions = %d after the first forcible Set, want 1", ev)
				}
				t.Logf("first forcible Set at key %d", i)
				break
			}
			specCheck(t, d)
		})
	}
}

func specEx7(t *testing.T) {
	d, _ := specOpen(t, Options{})
	wantGetErr(t, d, "never", ErrNotFound)
	if _, _, stale, err := d.GetStale("never"); !errors.Is(err, ErrNotFound) || stale {
		t.Fatalf("GetStale(\"never\") stale %v, %v; want false, %v", stale, err, ErrNotFound)
	}
	specCheck(t, d)
}

func specEx8(t *testing.T) {
	d, _ := specOpen(t, Options{Size: specMinZone, Shards: 1})
	for _, n := range []int{int(d.Capacity()) + 1, d.maxEntry} {
		big := Bytes(make([]byte, n))
		if forcible, err := d.Set("big", big, 0, 0); !errors.Is(err, ErrValueTooLarge) || forcible {
			t.Fatalf("Set(\"big\", %d bytes) = %v, %v; want false, %v", n, forcible, err, ErrValueTooLarge)
		}
		wantErr(t, fmt.Sprintf("SafeSet(\"big\", %d bytes)", n), d.SafeSet("big", big, 0, 0), ErrValueTooLarge)
		_, err := d.Add("big", big, 0, 0)
		wantErr(t, fmt.Sprintf("Add(\"big\", %d bytes)", n), err, ErrValueTooLarge)
		_, err = d.LPush("big", big)
		wantErr(t, fmt.Sprintf("LPush(\"big\", %d bytes)", n), err, ErrValueTooLarge)
	}
	wantGetErr(t, d, "big", ErrNotFound)

	// 30000 bytes take 8 of the 14 pages; 34000 bytes need 9 more, and the
	// only entry is the key's own, which is never evicted.
	old := String(strings.Repeat("a", 30000))
	specSet(t, d, "a", old, 0, 3)
	forcible, err := d.Set("a", String(strings.Repeat("b", 34000)), 0, 0)
	if !errors.Is(err, ErrNoMemory) || forcible {
		t.Fatalf("Set(\"a\", 34000 bytes) over 30000 = %v, %v; want false, %v", forcible, err, ErrNoMemory)
	}
	wantGet(t, d, "a", old, 3)

	// SafeSet does not evict "a" for "b"; Set does.
	wantErr(t, "SafeSet(\"b\", 30000 bytes)", d.SafeSet("b", old, 0, 0), ErrNoMemory)
	wantGet(t, d, "a", old, 3)
	forcible, err = d.Set("b", old, 0, 0)
	if err != nil || !forcible {
		t.Fatalf("Set(\"b\", 30000 bytes) = %v, %v; want true, <nil>", forcible, err)
	}
	wantGetErr(t, d, "a", ErrNotFound)
	wantGet(t, d, "b", old, 0)
	specCheck(t, d)
}

func specEx9(t *testing.T) {
	d, _ := specOpen(t, Options{Size: 1 << 20, Shards: 1})
	long := strings.Repeat("k", MaxKeyLen)
	specSet(t, d, long, Int(1), 0, 0)
	wantGet(t, d, long, Int(1), 0)
	if n, err := d.Incr(long, 1); n != 2 || err != nil {
		t.Fatalf("Incr(65535-byte key, 1) = %d, %v; want 2, <nil>", n, err)
	}
	if keys, err := d.Keys(0); err != nil || len(keys) != 1 || keys[0] != long {
		t.Fatalf("Keys(0) = %d keys, %v; want the 65535-byte key", len(keys), err)
	}
	if err := d.Delete(long); err != nil {
		t.Fatalf("Delete(65535-byte key) = %v", err)
	}
	if n, err := d.RPush(long, String("x")); n != 1 || err != nil {
		t.Fatalf("RPush(65535-byte key) = %d, %v; want 1, <nil>", n, err)
	}
	if v, err := d.LPop(long); err != nil || v.String() != "x" {
		t.Fatalf("LPop(65535-byte key) = %v, %v; want x, <nil>", v, err)
	}
	tooLong := strings.Repeat("k", MaxKeyLen+1)
	for _, op := range specKeyOps {
		wantErr(t, op.name+"(65536-byte key)", op.fn(d, tooLong), ErrKeyTooLong)
	}
	specCheck(t, d)
}

func specEx10(t *testing.T) {
	d, c := specOpen(t, Options{})
	specSet(t, d, "foo", Int(32), 0, 1)
	if forcible, err := d.Add("foo", Int(64), 0, 2); !errors.Is(err, ErrExists) || forcible {
		t.Fatalf("Add(\"foo\") on a live key = %v, %v; want false, %v", forcible, err, ErrExists)
	}
	wantGet(t, d, "foo", Int(32), 1)
	if _, err := d.Add("bar", Int(64), 0, 2); err != nil {
		t.Fatalf("Add(\"bar\") on an absent key = %v", err)
	}
	wantGet(t, d, "bar", Int(64), 2)
	specSet(t, d, "exp", Int(1), time.Millisecond, 0)
	c.Advance(time.Millisecond)
	if _, err := d.Add("exp", String("new"), 0, 0); err != nil {
		t.Fatalf("Add(\"exp\") on an expired key = %v", err)
	}
	wantGet(t, d, "exp", String("new"), 0)
	specCheck(t, d)
}

func specEx11(t *testing.T) {
	d, c := specOpen(t, Options{})
	if _, err := d.Replace("foo", Int(1), 0, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Replace(\"foo\") on an absent key = %v, want %v", err, ErrNotFound)
	}
	specSet(t, d, "exp", Int(1), 5*time.Millisecond, 0)
	c.Advance(5 * time.Millisecond)
	if _, err := d.Replace("exp", Int(2), 0, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Replace(\"exp\") on an expired key = %v, want %v", err, ErrNotFound)
	}
	if _, _, stale, err := d.GetStale("exp"); err != nil || !stale {
		t.Fatalf("GetStale(\"exp\") after a failed Replace: stale %v, %v; want true, <nil>", stale, err)
	}
	specSet(t, d, "foo", Int(32), 0, 0)
	if _, err := d.Replace("foo", String("bar"), 0, 5); err != nil {
		t.Fatalf("Replace(\"foo\", \"bar\") on a live int = %v", err)
	}
	wantGet(t, d, "foo", String("bar"), 5)
	specCheck(t, d)
}

func specEx12(t *testing.T) {
	d, _ := specOpen(t, Options{})
	specSet(t, d, "foo", Int(32), 0, 0)
	if n, err := d.Incr("foo", 10502); n != 10534 || err != nil {
		t.Fatalf("Incr(\"foo\", 10502) = %d, %v; want 10534, <nil>", n, err)
	}
	wantGet(t, d, "foo", Int(10534), 0)
	if _, err := d.Incr("absent", 10502); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Incr(\"absent\", 10502) = %v, want %v", err, ErrNotFound)
	}
	wantGetErr(t, d, "absent", ErrNotFound)
	specSet(t, d, "b", Bool(true), 0, 0)
	if _, err := d.Incr("b", 10502); !errors.Is(err, ErrNotNumber) {
		t.Fatalf("Incr(\"b\", 10502) on a bool = %v, want %v", err, ErrNotNumber)
	}
	wantGet(t, d, "b", Bool(true), 0)
	specSet(t, d, "s", String("12"), 0, 0)
	if _, err := d.Incr("s", 1); !errors.Is(err, ErrNotNumber) {
		t.Fatalf("Incr(\"s\", 1) on bytes = %v, want %v", err, ErrNotNumber)
	}
	specCheck(t, d)
}

func specEx13(t *testing.T) {
	d, _ := specOpen(t, Options{})
	specSet(t, d, "foo", Int(32), 0, 199)
	wantGet(t, d, "foo", Int(32), 199)
	specCheck(t, d)
}

func specEx14(t *testing.T) {
	d, _ := specOpen(t, Options{Size: 1 << 20})
	empty := d.FreeSpace()
	if empty <= 0 || empty > d.Capacity() {
		t.Fatalf("FreeSpace() of an empty zone = %d, capacity %d", empty, d.Capacity())
	}
	for i := 0; i < 500; i++ {
		switch i % 4 {
		case 0:
			specSet(t, d, specKey(i), Int(int64(i)), 0, 0)
		case 1:
			specSet(t, d, specKey(i), String(strings.Repeat("v", i*7)), time.Hour, 0)
		case 2:
			specSet(t, d, specKey(i), String(strings.Repeat("w", 5000)), 0, 0)
		default:
			for j := 0; j < 3; j++ {
				if _, err := d.RPush(specKey(i), Int(int64(j))); err != nil {
					t.Fatalf("RPush(%q) = %v", specKey(i), err)
				}
			}
		}
	}
	if f := d.FreeSpace(); f >= empty {
		t.Fatalf("FreeSpace() after 500 Sets = %d, want less than %d", f, empty)
	}
	if err := d.FlushAll(); err != nil {
		t.Fatalf("FlushAll() = %v", err)
	}
	for i := 0; i < 500; i++ {
		wantGetErr(t, d, specKey(i), ErrNotFound)
		if n, err := d.LLen(specKey(i)); n != 0 || err != nil {
			t.Fatalf("LLen(%q) after FlushAll = %d, %v; want 0, <nil>", specKey(i), n, err)
		}
	}
	if keys, err := d.Keys(0); len(keys) != 0 || err != nil {
		t.Fatalf("Keys(0) after FlushAll = %d keys, %v; want none", len(keys), err)
	}
	if f := d.FreeSpace(); f != empty {
		t.Fatalf("FreeSpace() after FlushAll = %d, want %d", f, empty)
	}
	if n := d.Stats().Entries; n != 0 {
		t.Fatalf("Stats().Entries after FlushAll = %d, want 0", n)
	}
	specCheck(t, d)
}

func specEx15(t *testing.T) {
	d, c := specOpen(t, Options{})
	specSet(t, d, "1s", Int(1), time.Second, 0)
	specSet(t, d, "never", Int(2), 0, 0)
	specSet(t, d, "100s", Int(3), 100*time.Second, 0)
	c.Advance(1500 * time.Millisecond)
	if n, err := d.FlushExpired(0); n != 1 || err != nil {
		t.Fatalf("FlushExpired(0) at +1.5 s = %d, %v; want 1, <nil>", n, err)
	}
	if _, _, _, err := d.GetStale("1s"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetStale(\"1s\") after FlushExpired = %v, want %v", err, ErrNotFound)
	}
	wantGet(t, d, "never", Int(2), 0)
	wantGet(t, d, "100s", Int(3), 0)

	for i := 0; i < 100; i++ {
		specSet(t, d, specKey(i), Int(int64(i)), time.Millisecond, 0)
	}
	c.Advance(time.Millisecond)
	if n, err := d.FlushExpired(42); n != 42 || err != nil {
		t.Fatalf("FlushExpired(42) with 100 expired = %d, %v; want 42, <nil>", n, err)
	}
	stale := 0
	for i := 0; i < 100; i++ {
		if _, _, s, err := d.GetStale(specKey(i)); err == nil && s {
			stale++
		}
	}
	if stale != 58 {
		t.Fatalf("%d expired keys left after FlushExpired(42), want 58", stale)
	}
	if n, err := d.FlushExpired(0); n != 58 || err != nil {
		t.Fatalf("FlushExpired(0) with 58 expired = %d, %v; want 58, <nil>", n, err)
	}
	if n, err := d.FlushExpired(0); n != 0 || err != nil {
		t.Fatalf("FlushExpired(0) with none expired = %d, %v; want 0, <nil>", n, err)
	}
	if n, err := d.FlushExpired(5); n != 0 || err != nil {
		t.Fatalf("FlushExpired(5) with none expired = %d, %v; want 0, <nil>", n, err)
	}
	wantGet(t, d, "never", Int(2), 0)
	wantGet(t, d, "100s", Int(3), 0)
	if n := d.Stats().Entries; n != 2 {
		t.Fatalf("Stats().Entries = %d, want 2", n)
	}
	specCheck(t, d)
}

func specEx16(t *testing.T) {
	d, c := specOpen(t, Options{Size: 1 << 20})
	want := make([]string, 2048)
	for i := range want {
		want[i] = specKey(i)
		specSet(t, d, want[i], Int(int64(i)), time.Second, 0)
	}
	keys, err := d.Keys(0)
	if err != nil || len(keys) != 2048 {
		t.Fatalf("Keys(0) = %d keys, %v; want 2048", len(keys), err)
	}
	sort.Strings(keys)
	for i := range want {
		if keys[i] != want[i] {
			t.Fatalf("Keys(0) sorted [%d] = %q, want %q", i, keys[i], want[i])
		}
	}
	if keys, err := d.Keys(1); err != nil || len(keys) != 1 {
		t.Fatalf("Keys(1) = %q, %v; want one key", keys, err)
	}
	if keys, err := d.Keys(100); err != nil || len(keys) != 100 {
		t.Fatalf("Keys(100) = %d keys, %v; want 100", len(keys), err)
	}
	c.Advance(time.Second)
	if keys, err := d.Keys(0); err != nil || len(keys) != 0 {
		t.Fatalf("Keys(0) with every key expired = %d keys, %v; want 0", len(keys), err)
	}
	specCheck(t, d)
}

func specEx17(t *testing.T) {
	d, _ := specOpen(t, Options{Size: specMinZone, Shards: 1})
	fill := func(name string, op func(string, Value) error) int {
		for i := 0; ; i++ {
			if i > 100000 {
				t.Fatalf("%s never ran out of memory", name)
			}
			err := op(specKey(i), Int(int64(i)))
			if err == nil {
				continue
			}
			if !errors.Is(err, ErrNoMemory) {
				t.Fatalf("%s(%q) = %v, want nil or %v", name, specKey(i), err, ErrNoMemory)
			}
			if ev := d.Stats().Evictions; ev != 0 {
				t.Fatalf("Stats().Evictions = %d after %s, want 0", ev, name)
			}
			for j := 0; j < i; j++ {
				wantGet(t, d, specKey(j), Int(int64(j)), 0)
			}
			wantGetErr(t, d, specKey(i), ErrNotFound)
			return i
		}
	}
	safeSet := func(k string, v Value) error { return d.SafeSet(k, v, 0, 0) }
	safeAdd := func(k string, v Value) error { return d.SafeAdd(k, v, 0, 0) }
	n := fill("SafeSet", safeSet)
	// A second SafeSet run overwrites in place until it reaches the key that
	// did not fit.
	for j := 0; j < n; j++ {
		if err := d.SafeSet(specKey(j), Int(int64(j)), 0, 0); err != nil {
			t.Fatalf("SafeSet(%q) over itself = %v", specKey(j), err)
		}
	}
	wantErr(t, fmt.Sprintf("SafeSet(%q) in a full zone", specKey(n)), d.SafeSet(specKey(n), Int(0), 0, 0), ErrNoMemory)
	if err := d.FlushAll(); err != nil {
		t.Fatalf("FlushAll() = %v", err)
	}
	if m := fill("SafeAdd", safeAdd); m != n {
		t.Fatalf("SafeAdd filled %d keys, SafeSet %d", m, n)
	}
	wantErr(t, fmt.Sprintf("second SafeAdd(%q)", specKey(0)), d.SafeAdd(specKey(0), Int(0), 0, 0), ErrExists)
	wantGet(t, d, specKey(0), Int(0), 0)
	specCheck(t, d)
}

func specEx18(t *testing.T) {
	d, c := specOpen(t, Options{})
	specSet(t, d, "foo", Int(32), 0, 9)
	if n, forcible, err := d.IncrInit("foo", 10502, 1, 0); n != 10534 || forcible || err != nil {
		t.Fatalf("IncrInit(\"foo\", 10502, 1, 0) on 32 = %d, %v, %v; want 10534, false, <nil>", n, forcible, err)
	}
	wantGet(t, d, "foo", Int(10534), 9)
	if n, _, err := d.IncrInit("bar", 10502, 1, 0); n != 10503 || err != nil {
		t.Fatalf("IncrInit(\"bar\", 10502, 1, 0) on absent = %d, %v; want 10503, <nil>", n, err)
	}
	wantGet(t, d, "bar", Int(10503), 0)
	if ttl, err := d.TTL("bar"); ttl != 0 || err != nil {
		t.Fatalf("TTL(\"bar\") = %v, %v; want 0, <nil>", ttl, err)
	}
	// initTTL applies to a created key only; an expired key is created anew
	// with flags 0.
	if n, _, err := d.IncrInit("ttl", 1, 10, time.Second); n != 11 || err != nil {
		t.Fatalf("IncrInit(\"ttl\", 1, 10, 1s) = %d, %v; want 11, <nil>", n, err)
	}
	if n, _, err := d.IncrInit("ttl", 1, 10, time.Hour); n != 12 || err != nil {
		t.Fatalf("IncrInit(\"ttl\", 1, 10, 1h) = %d, %v; want 12, <nil>", n, err)
	}
	if ttl, err := d.TTL("ttl"); ttl != time.Second || err != nil {
		t.Fatalf("TTL(\"ttl\") = %v, %v; want 1s, <nil>", ttl, err)
	}
	specSet(t, d, "exp", Int(100), time.Millisecond, 77)
	c.Advance(time.Second)
	if n, _, err := d.IncrInit("exp", 1, 10, 0); n != 11 || err != nil {
		t.Fatalf("IncrInit(\"exp\", 1, 10, 0) on expired = %d, %v; want 11, <nil>", n, err)
	}
	wantGet(t, d, "exp", Int(11), 0)
	specSet(t, d, "s", String("x"), 0, 0)
	if _, _, err := d.IncrInit("s", 1, 10, 0); !errors.Is(err, ErrNotNumber) {
		t.Fatalf("IncrInit(\"s\") on bytes = %v, want %v", err, ErrNotNumber)
	}
	wantGet(t, d, "s", String("x"), 0)
	specCheck(t, d)
}

func specEx19(t *testing.T) {
	d, _ := specOpen(t, Options{})
	if _, _, err := d.IncrInit("k", 1, 0, -1); !errors.Is(err, ErrBadTTL) {
		t.Fatalf("IncrInit(\"k\", 1, 0, -1) = %v, want %v", err, ErrBadTTL)
	}
	wantGetErr(t, d, "k", ErrNotFound)
	specCheck(t, d)
}

func specEx20(t *testing.T) {
	d, _ := specOpen(t, Options{Shards: 1})
	for i := int64(1); i <= 3; i++ {
		if n, err := d.LPush("l", Int(i)); n != int(i) || err != nil {
			t.Fatalf("LPush(\"l\", %d) = %d, %v; want %d, <nil>", i, n, err, i)
		}
	}
	for _, want := range []int64{3, 2, 1} {
		if v, err := d.LPop("l"); err != nil || !v.Equal(Int(want)) {
			t.Fatalf("LPop(\"l\") = %v, %v; want %d, <nil>", v, err, want)
		}
	}
	if _, err := d.LPop("l"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LPop(\"l\") on an emptied list = %v, want %v", err, ErrNotFound)
	}
	for i := int64(1); i <= 3; i++ {
		if _, err := d.LPush("r", Int(i)); err != nil {
			t.Fatalf("LPush(\"r\", %d) = %v", i, err)
		}
	}
	for _, want := range []int64{1, 2, 3} {
		if v, err := d.RPop("r"); err != nil || !v.Equal(Int(want)) {
			t.Fatalf("RPop(\"r\") = %v, %v; want %d, <nil>", v, err, want)
		}
	}
	if n, err := d.LLen("absent"); n != 0 || err != nil {
		t.Fatalf("LLen(\"absent\") = %d, %v; want 0, <nil>", n, err)
	}
	// Every element kind round-trips.
	elems := []Value{String("two"), Int(-7), Float(2.5), Bool(true), Bool(false), String("")}
	for i, v := range elems {
		if n, err := d.RPush("mixed", v); n != i+1 || err != nil {
			t.Fatalf("RPush(\"mixed\", %v) = %d, %v; want %d, <nil>", v, n, err, i+1)
		}
	}
	if n, err := d.LLen("mixed"); n != len(elems) || err != nil {
		t.Fatalf("LLen(\"mixed\") = %d, %v; want %d, <nil>", n, err, len(elems))
	}
	wantGetErr(t, d, "mixed", ErrIsList)
	specSet(t, d, "str", String("s"), 0, 0)
	if _, err := d.LPush("str", Int(1)); !errors.Is(err, ErrNotList) {
		t.Fatalf("LPush(\"str\") on a string = %v, want %v", err, ErrNotList)
	}
	if _, err := d.LLen("str"); !errors.Is(err, ErrNotList) {
		t.Fatalf("LLen(\"str\") on a string = %v, want %v", err, ErrNotList)
	}
	if _, err := d.RPop("str"); !errors.Is(err, ErrNotList) {
		t.Fatalf("RPop(\"str\") on a string = %v, want %v", err, ErrNotList)
	}
	if _, err := d.Add("mixed", Int(1), 0, 0); !errors.Is(err, ErrExists) {
		t.Fatalf("Add(\"mixed\") on a list = %v, want %v", err, ErrExists)
	}
	keys, err := d.Keys(0)
	if err != nil || strings.Join(keys, ",") != "mixed,str" {
		t.Fatalf("Keys(0) = %q, %v; want [mixed str]", keys, err)
	}
	for _, want := range elems {
		if v, err := d.LPop("mixed"); err != nil || !v.Equal(want) {
			t.Fatalf("LPop(\"mixed\") = %s %v, %v; want %s %v", v.Kind(), v, err, want.Kind(), want)
		}
	}
	for i := 0; i < 3; i++ {
		if _, err := d.RPush("mixed", String("x")); err != nil {
			t.Fatalf("RPush(\"mixed\") = %v", err)
		}
	}
	specSet(t, d, "mixed", Int(5), 0, 0)
	wantGet(t, d, "mixed", Int(5), 0)
	if _, err := d.LPop("mixed"); !errors.Is(err, ErrNotList) {
		t.Fatalf("LPop(\"mixed\") after Set = %v, want %v", err, ErrNotList)
	}
	specCheck(t, d)
}

// specDump lists a Dict's live keys, sorted, one line each: key, kind, value
// and flags; a list shows its length.
func specDump(d *Dict) (string, error) {
	keys, err := d.Keys(0)
	if err != nil {
		return "", err
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v, f, err := d.Get(k)
		switch {
		case errors.Is(err, ErrIsList):
			n, err := d.LLen(k)
			if err != nil {
				return "", fmt.Errorf("LLen(%q): %w", k, err)
			}
			fmt.Fprintf(&b, "%q list %d\n", k, n)
		case err != nil:
			return "", fmt.Errorf("Get(%q): %w", k, err)
		default:
			fmt.Fprintf(&b, "%q %s %q %d\n", k, v.Kind(), v.String(), f)
		}
	}
	return b.String(), nil
}

func specEx21(t *testing.T) {
	c := newSpecClock()
	path := filepath.Join(t.TempDir(), "zone")
	d, err := Open(path, Options{Size: 1 << 20, Clock: c.Now})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	specSet(t, d, "int", Int(42), 0, 7)
	specSet(t, d, "float", Float(2.5), 0, 0)
	specSet(t, d, "bool", Bool(true), 0, 1)
	specSet(t, d, "bytes", String("hello, world"), 0, 0)
	specSet(t, d, "bin\x00\xff", String("\x00\x01"), 0, 0)
	specSet(t, d, "century", Int(100), 100*365*24*time.Hour, 0)
	specSet(t, d, "gone", Int(0), 10*time.Millisecond, 0)
	specSet(t, d, "deleted", Int(0), 0, 0)
	if err := d.Delete("deleted"); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	for _, v := range []Value{Int(1), String("two")} {
		if _, err := d.RPush("list", v); err != nil {
			t.Fatalf("RPush = %v", err)
		}
	}
	c.Advance(20 * time.Millisecond)
	specCheck(t, d)
	if err := d.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	want := strings.Join([]string{
		`"bin\x00\xff" bytes "\x00\x01" 0`,
		`"bool" bool "true" 1`,
		`"bytes" bytes "hello, world" 0`,
		`"century" int "100" 0`,
		`"float" float "2.5" 0`,
		`"int" int "42" 7`,
		`"list" list 2`,
	}, "\n") + "\n"

	// Reopened in this process, with the same clock.
	d, err = Open(path, Options{Clock: c.Now})
	if err != nil {
		t.Fatalf("reopen = %v", err)
	}
	defer d.Close()
	got, err := specDump(d)
	if err != nil || got != want {
		t.Fatalf("after reopen:\n%s(err %v)\nwant:\n%s", got, err, want)
	}
	specCheck(t, d)

	// Opened by another process, with the system clock: "gone" expired long
	// ago there too.
	out, err := testutil.Helper(t, "spec-reopen", path).CombinedOutput()
	if err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	if string(out) != want+"check ok\n" {
		t.Fatalf("helper process read:\n%s\nwant:\n%scheck ok\n", out, want)
	}
	specCheck(t, d)
}

// HelperSpecReopen is the child of specEx21 (registered in multiproc_test.go's
// TestHelperProcess): it opens the zone at args[0], prints what it reads and
// the result of Check.
func HelperSpecReopen(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("want a zone path, got %q", args)
	}
	d, err := Open(args[0], Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	out, err := specDump(d)
	if err != nil {
		return err
	}
	fmt.Print(out)
	if err := d.Check(); err != nil {
		return fmt.Errorf("Check: %w", err)
	}
	fmt.Println("check ok")
	return nil
}

// specKeyOps calls every operation that takes a key with otherwise valid
// arguments.
var specKeyOps = []struct {
	name string
	fn   func(d *Dict, key string) error
}{
	{"Set", func(d *Dict, k string) error { _, err := d.Set(k, Int(1), 0, 0); return err }},
	{"SafeSet", func(d *Dict, k string) error { return d.SafeSet(k, Int(1), 0, 0) }},
	{"Add", func(d *Dict, k string) error { _, err := d.Add(k, Int(1), 0, 0); return err }},
	{"SafeAdd", func(d *Dict, k string) error { return d.SafeAdd(k, Int(1), 0, 0) }},
	{"Replace", func(d *Dict, k string) error { _, err := d.Replace(k, Int(1), 0, 0); return err }},
	{"Delete", func(d *Dict, k string) error { return d.Delete(k) }},
	{"Get", func(d *Dict, k string) error { _, _, err := d.Get(k); return err }},
	{"GetInto", func(d *Dict, k string) error { _, _, err := d.GetInto(k, nil); return err }},
	{"GetStale", func(d *Dict, k string) error { _, _, _, err := d.GetStale(k); return err }},
	{"Incr", func(d *Dict, k string) error { _, err := d.Incr(k, 1); return err }},
	{"IncrFloat", func(d *Dict, k string) error { _, err := d.IncrFloat(k, 1); return err }},
	{"IncrInit", func(d *Dict, k string) error { _, _, err := d.IncrInit(k, 1, 0, 0); return err }},
	{"CompareAndSwap", func(d *Dict, k string) error { _, err := d.CompareAndSwap(k, Int(1), Int(2), 0); return err }},
	{"Update", func(d *Dict, k string) error {
		return d.Update(k, func(Value, bool) (Value, time.Duration, bool) { return Int(1), 0, true })
	}},
	{"Expire", func(d *Dict, k string) error { return d.Expire(k, time.Second) }},
	{"TTL", func(d *Dict, k string) error { _, err := d.TTL(k); return err }},
	{"LPush", func(d *Dict, k string) error { _, err := d.LPush(k, Int(1)); return err }},
	{"RPush", func(d *Dict, k string) error { _, err := d.RPush(k, Int(1)); return err }},
	{"LPop", func(d *Dict, k string) error { _, err := d.LPop(k); return err }},
	{"RPop", func(d *Dict, k string) error { _, err := d.RPop(k); return err }},
	{"LLen", func(d *Dict, k string) error { _, err := d.LLen(k); return err }},
}

// specWriteOps are the operations that must fail on a read-only view.
var specWriteOps = map[string]bool{
	"Set": true, "SafeSet": true, "Add": true, "SafeAdd": true, "Replace": true,
	"Delete": true, "Incr": true, "IncrFloat": true, "IncrInit": true,
	"CompareAndSwap": true, "Update": true, "Expire": true,
	"LPush": true, "RPush": true, "LPop": true, "RPop": true,
}

// specZoneOps are the operations without a key.
var specZoneOps = []struct {
	name string
	fn   func(d *Dict) error
}{
	{"Keys", func(d *Dict) error { _, err := d.Keys(0); return err }},
	{"FlushAll", func(d *Dict) error { return d.FlushAll() }},
	{"FlushExpired", func(d *Dict) error { _, err := d.FlushExpired(0); return err }},
	{"Repair", func(d *Dict) error { _, err := d.Repair(); return err }},
}

func TestErrorSentinels(t *testing.T) {
	t.Run("empty-key", func(t *testing.T) {
		d, _ := specOpen(t, Options{})
		for _, op := range specKeyOps {
			wantErr(t, op.name+`("")`, op.fn(d, ""), ErrEmptyKey)
		}
		specCheck(t, d)
	})
	t.Run("key-too-long", func(t *testing.T) {
		d, _ := specOpen(t, Options{})
		long := strings.Repeat("x", MaxKeyLen+1)
		for _, op := range specKeyOps {
			wantErr(t, op.name+"(65536-byte key)", op.fn(d, long), ErrKeyTooLong)
		}
		specCheck(t, d)
	})
	t.Run("negative-ttl", func(t *testing.T) {
		d, _ := specOpen(t, Options{})
		specSet(t, d, "k", Int(1), 0, 0)
		for _, c := range []struct {
			name string
			fn   func() error
		}{
			{"Set", func() error { _, err := d.Set("k", Int(2), -1, 0); return err }},
			{"SafeSet", func() error { return d.SafeSet("k", Int(2), -time.Second, 0) }},
			{"Add", func() error { _, err := d.Add("new", Int(2), -1, 0); return err }},
			{"SafeAdd", func() error { return d.SafeAdd("new", Int(2), -1, 0) }},
			{"Replace", func() error { _, err := d.Replace("k", Int(2), -1, 0); return err }},
			{"IncrInit", func() error { _, _, err := d.IncrInit("new", 1, 0, -1); return err }},
			{"CompareAndSwap", func() error { _, err := d.CompareAndSwap("k", Int(1), Int(2), -1); return err }},
			{"Expire", func() error { return d.Expire("k", -1) }},
			{"Update", func() error {
				return d.Update("k", func(Value, bool) (Value, time.Duration, bool) { return Int(2), -1, true })
			}},
		} {
			wantErr(t, c.name+" with ttl < 0", c.fn(), ErrBadTTL)
		}
		wantGet(t, d, "k", Int(1), 0)
		wantGetErr(t, d, "new", ErrNotFound)
		if ttl, err := d.TTL("k"); ttl != 0 || err != nil {
			t.Fatalf("TTL(\"k\") = %v, %v; want 0, <nil>", ttl, err)
		}
		specCheck(t, d)
	})
	t.Run("zero-value", func(t *testing.T) {
		d, _ := specOpen(t, Options{})
		specSet(t, d, "k", Int(1), 0, 0)
		var zero Value
		for _, c := range []struct {
			name string
			fn   func() error
		}{
			{"Set", func() error { _, err := d.Set("k", zero, 0, 0); return err }},
			{"SafeSet", func() error { return d.SafeSet("k", zero, 0, 0) }},
			{"Add", func() error { _, err := d.Add("new", zero, 0, 0); return err }},
			{"SafeAdd", func() error { return d.SafeAdd("new", zero, 0, 0) }},
			{"Replace", func() error { _, err := d.Replace("k", zero, 0, 0); return err }},
			{"CompareAndSwap", func() error { _, err := d.CompareAndSwap("k", Int(1), zero, 0); return err }},
			{"Update", func() error {
				return d.Update("k", func(Value, bool) (Value, time.Duration, bool) { return zero, 0, true })
			}},
			{"LPush", func() error { _, err := d.LPush("l", zero); return err }},
			{"RPush", func() error { _, err := d.RPush("l", zero); return err }},
		} {
			wantErr(t, c.name+" of the zero Value", c.fn(), ErrBadValue)
		}
		wantGet(t, d, "k", Int(1), 0)
		wantGetErr(t, d, "new", ErrNotFound)
		if n, err := d.LLen("l"); n != 0 || err != nil {
			t.Fatalf("LLen(\"l\") = %d, %v; want 0, <nil>", n, err)
		}
		specCheck(t, d)
	})
	t.Run("closed", func(t *testing.T) {
		d, _ := specOpen(t, Options{})
		specSet(t, d, "k", Int(1), 0, 0)
		if err := d.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("second Close() = %v", err)
		}
		for _, op := range specKeyOps {
			wantErr(t, op.name+" after Close", op.fn(d, "k"), ErrClosed)
		}
		for _, op := range specZoneOps {
			wantErr(t, op.name+" after Close", op.fn(d), ErrClosed)
		}
		wantErr(t, "Check after Close", d.Check(), ErrClosed)
		if n := d.FreeSpace(); n != 0 {
			t.Fatalf("FreeSpace() after Close = %d, want 0", n)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		c := newSpecClock()
		path := filepath.Join(t.TempDir(), "zone")
		w, err := Open(path, Options{Size: 1 << 20, Clock: c.Now})
		if err != nil {
			t.Fatalf("Open = %v", err)
		}
		defer w.Close()
		specSet(t, w, "k", Int(1), time.Hour, 4)
		if _, err := w.RPush("l", String("e")); err != nil {
			t.Fatalf("RPush = %v", err)
		}
		ro, err := Open(path, Options{ReadOnly: true, Clock: c.Now})
		if err != nil {
			t.Fatalf("Open(ReadOnly) = %v", err)
		}
		defer ro.Close()
		for _, op := range specKeyOps {
			err := op.fn(ro, "k")
			if specWriteOps[op.name] {
				wantErr(t, op.name+" on a read-only view", err, ErrReadOnly)
			} else if err != nil && !errors.Is(err, ErrNotList) {
				t.Fatalf("%s(\"k\") on a read-only view = %v", op.name, err)
			}
		}
		for _, op := range specZoneOps {
			if err := op.fn(ro); op.name != "Keys" {
				wantErr(t, op.name+" on a read-only view", err, ErrReadOnly)
			} else if err != nil {
				t.Fatalf("Keys(0) on a read-only view = %v", err)
			}
		}
		wantGet(t, ro, "k", Int(1), 4)
		if ttl, err := ro.TTL("k"); ttl != time.Hour || err != nil {
			t.Fatalf("TTL(\"k\") on a read-only view = %v, %v; want 1h, <nil>", ttl, err)
		}
		if n, err := ro.LLen("l"); n != 1 || err != nil {
			t.Fatalf("LLen(\"l\") on a read-only view = %d, %v; want 1, <nil>", n, err)
		}
		// The writer's changes show through the read-only view.
		specSet(t, w, "k", String("two"), 0, 5)
		wantGet(t, ro, "k", String("two"), 5)
		specCheck(t, ro)
		specCheck(t, w)
	})
}

func TestIncrFloat(t *testing.T) {
	d, _ := specOpen(t, Options{})
	specSet(t, d, "f", Float(1.5), time.Hour, 3)
	if f, err := d.IncrFloat("f", 0.25); f != 1.75 || err != nil {
		t.Fatalf("IncrFloat(\"f\", 0.25) = %v, %v; want 1.75, <nil>", f, err)
	}
	wantGet(t, d, "f", Float(1.75), 3)
	if ttl, err := d.TTL("f"); ttl != time.Hour || err != nil {
		t.Fatalf("TTL(\"f\") after IncrFloat = %v, %v; want 1h, <nil>", ttl, err)
	}
	// An int becomes a float.
	specSet(t, d, "i", Int(10), 0, 0)
	if f, err := d.IncrFloat("i", 0.5); f != 10.5 || err != nil {
		t.Fatalf("IncrFloat(\"i\", 0.5) on 10 = %v, %v; want 10.5, <nil>", f, err)
	}
	wantGet(t, d, "i", Float(10.5), 0)
	// Incr on a float adds to the float and returns the sum truncated.
	if n, err := d.Incr("i", 2); n != 12 || err != nil {
		t.Fatalf("Incr(\"i\", 2) on 10.5 = %d, %v; want 12, <nil>", n, err)
	}
	wantGet(t, d, "i", Float(12.5), 0)
	if n, _, err := d.IncrInit("i", -20, 0, 0); n != -7 || err != nil {
		t.Fatalf("IncrInit(\"i\", -20, 0, 0) on 12.5 = %d, %v; want -7, <nil>", n, err)
	}
	wantGet(t, d, "i", Float(-7.5), 0)
	if _, err := d.IncrFloat("absent", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("IncrFloat(\"absent\", 1) = %v, want %v", err, ErrNotFound)
	}
	specSet(t, d, "s", String("1"), 0, 0)
	if _, err := d.IncrFloat("s", 1); !errors.Is(err, ErrNotNumber) {
		t.Fatalf("IncrFloat(\"s\", 1) on bytes = %v, want %v", err, ErrNotNumber)
	}
	if _, err := d.LPush("l", Int(1)); err != nil {
		t.Fatalf("LPush = %v", err)
	}
	if _, err := d.IncrFloat("l", 1); !errors.Is(err, ErrNotNumber) {
		t.Fatalf("IncrFloat(\"l\", 1) on a list = %v, want %v", err, ErrNotNumber)
	}
	specCheck(t, d)
}

func TestGetStale(t *testing.T) {
	d, c := specOpen(t, Options{})
	specSet(t, d, "k", String("old"), 10*time.Millisecond, 6)
	if v, f, stale, err := d.GetStale("k"); err != nil || stale || v.String() != "old" || f != 6 {
		t.Fatalf("GetStale(\"k\") live = %v, %d, %v, %v; want old, 6, false, <nil>", v, f, stale, err)
	}
	c.Advance(10 * time.Millisecond)
	wantGetErr(t, d, "k", ErrNotFound)
	for i := 0; i < 2; i++ {
		if v, f, stale, err := d.GetStale("k"); err != nil || !stale || v.String() != "old" || f != 6 {
			t.Fatalf("GetStale(\"k\") expired = %v, %d, %v, %v; want old, 6, true, <nil>", v, f, stale, err)
		}
	}
	if n, err := d.FlushExpired(0); n != 1 || err != nil {
		t.Fatalf("FlushExpired(0) = %d, %v; want 1, <nil>", n, err)
	}
	if _, _, stale, err := d.GetStale("k"); !errors.Is(err, ErrNotFound) || stale {
		t.Fatalf("GetStale(\"k\") after FlushExpired = stale %v, %v; want false, %v", stale, err, ErrNotFound)
	}
	// A list is no value, expired or not.
	if _, err := d.RPush("l", Int(1)); err != nil {
		t.Fatalf("RPush = %v", err)
	}
	if err := d.Expire("l", time.Millisecond); err != nil {
		t.Fatalf("Expire = %v", err)
	}
	c.Advance(time.Millisecond)
	if v, f, stale, err := d.GetStale("l"); !errors.Is(err, ErrIsList) || stale || v.Kind() != KindNone || f != 0 {
		t.Fatalf("GetStale(\"l\") of an expired list = %s, %d, stale %v, %v; want none, 0, false, %v", v.Kind(), f, stale, err, ErrIsList)
	}
	specCheck(t, d)
}

func TestUpdate(t *testing.T) {
	d, c := specOpen(t, Options{})
	// Create.
	err := d.Update("k", func(cur Value, ok bool) (Value, time.Duration, bool) {
		if ok {
			t.Errorf("Update(\"k\") on an absent key: fn got ok = true, %v", cur)
		}
		return Int(1), time.Minute, true
	})
	if err != nil {
		t.Fatalf("Update(\"k\") create = %v", err)
	}
	wantGet(t, d, "k", Int(1), 0)
	if ttl, err := d.TTL("k"); ttl != time.Minute || err != nil {
		t.Fatalf("TTL(\"k\") = %v, %v; want 1m, <nil>", ttl, err)
	}
	// Modify: the flags stay, the kind may change.
	specSet(t, d, "k", Int(41), 0, 8)
	err = d.Update("k", func(cur Value, ok bool) (Value, time.Duration, bool) {
		if !ok || !cur.Equal(Int(41)) {
			t.Errorf("Update(\"k\") fn got %v, %v; want 41, true", cur, ok)
		}
		return String(fmt.Sprint(cur.Int() + 1)), 0, true
	})
	if err != nil {
		t.Fatalf("Update(\"k\") modify = %v", err)
	}
	wantGet(t, d, "k", String("42"), 8)
	// A bytes cur holds the stored value.
	err = d.Update("k", func(cur Value, ok bool) (Value, time.Duration, bool) {
		if !ok || cur.String() != "42" {
			t.Errorf("Update(\"k\") fn got %q, %v; want \"42\", true", cur.String(), ok)
		}
		return String(cur.String() + strings.Repeat("!", 500)), 0, true
	})
	if err != nil {
		t.Fatalf("Update(\"k\") grow = %v", err)
	}
	wantGet(t, d, "k", String("42"+strings.Repeat("!", 500)), 8)
	// Delete.
	err = d.Update("k", func(cur Value, ok bool) (Value, time.Duration, bool) { return Value{}, 0, false })
	if err != nil {
		t.Fatalf("Update(\"k\") delete = %v", err)
	}
	wantGetErr(t, d, "k", ErrNotFound)
	// keep=false on an absent key does nothing.
	err = d.Update("absent", func(cur Value, ok bool) (Value, time.Duration, bool) { return Value{}, 0, false })
	if err != nil {
		t.Fatalf("Update(\"absent\") keep=false = %v", err)
	}
	wantGetErr(t, d, "absent", ErrNotFound)
	// An expired key reads as absent and gets flags 0.
	specSet(t, d, "e", Int(5), time.Millisecond, 9)
	c.Advance(time.Millisecond)
	err = d.Update("e", func(cur Value, ok bool) (Value, time.Duration, bool) {
		if ok {
			t.Errorf("Update(\"e\") on an expired key: fn got ok = true, %v", cur)
		}
		return Int(6), 0, true
	})
	if err != nil {
		t.Fatalf("Update(\"e\") = %v", err)
	}
	wantGet(t, d, "e", Int(6), 0)
	// A list is refused before fn runs.
	if _, err := d.LPush("l", Int(1)); err != nil {
		t.Fatalf("LPush = %v", err)
	}
	err = d.Update("l", func(cur Value, ok bool) (Value, time.Duration, bool) {
		t.Errorf("Update(\"l\") on a list called fn")
		return Int(1), 0, true
	})
	wantErr(t, `Update("l") on a list`, err, ErrIsList)
	// A panic in fn releases the lock and goes on.
	specSet(t, d, "p", Int(1), 0, 0)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("Update(\"p\") with a panicking fn: recovered %v, want boom", r)
			}
		}()
		d.Update("p", func(Value, bool) (Value, time.Duration, bool) { panic("boom") })
		t.Fatalf("Update(\"p\") returned after fn panicked")
	}()
	wantGet(t, d, "p", Int(1), 0)
	if n, err := d.Incr("p", 1); n != 2 || err != nil {
		t.Fatalf("Incr(\"p\", 1) after a panic in Update = %d, %v; want 2, <nil>", n, err)
	}
	specCheck(t, d)
}

func TestCompareAndSwap(t *testing.T) {
	d, c := specOpen(t, Options{})
	specSet(t, d, "k", Int(1), 0, 5)
	if ok, err := d.CompareAndSwap("k", Int(1), String("two"), time.Second); !ok || err != nil {
		t.Fatalf("CompareAndSwap(\"k\", 1, two) = %v, %v; want true, <nil>", ok, err)
	}
	wantGet(t, d, "k", String("two"), 5)
	if ttl, err := d.TTL("k"); ttl != time.Second || err != nil {
		t.Fatalf("TTL(\"k\") = %v, %v; want 1s, <nil>", ttl, err)
	}
	for _, old := range []Value{String("one"), Int(1), String("tw"), String("two\x00"), Bool(true)} {
		if ok, err := d.CompareAndSwap("k", old, Int(3), 0); ok || err != nil {
			t.Fatalf("CompareAndSwap(\"k\", %s %q, 3) on two = %v, %v; want false, <nil>", old.Kind(), old, ok, err)
		}
	}
	wantGet(t, d, "k", String("two"), 5)
	// Same number, other kind.
	specSet(t, d, "n", Float(1), 0, 0)
	if ok, err := d.CompareAndSwap("n", Int(1), Int(2), 0); ok || err != nil {
		t.Fatalf("CompareAndSwap(\"n\", int 1, 2) on float 1 = %v, %v; want false, <nil>", ok, err)
	}
	if ok, err := d.CompareAndSwap("n", Float(1), Int(2), 0); !ok || err != nil {
		t.Fatalf("CompareAndSwap(\"n\", float 1, 2) on float 1 = %v, %v; want true, <nil>", ok, err)
	}
	wantGet(t, d, "n", Int(2), 0)
	if ok, err := d.CompareAndSwap("absent", Int(1), Int(2), 0); ok || !errors.Is(err, ErrNotFound) {
		t.Fatalf("CompareAndSwap(\"absent\") = %v, %v; want false, %v", ok, err, ErrNotFound)
	}
	c.Advance(time.Second)
	if ok, err := d.CompareAndSwap("k", String("two"), Int(2), 0); ok || !errors.Is(err, ErrNotFound) {
		t.Fatalf("CompareAndSwap(\"k\") expired = %v, %v; want false, %v", ok, err, ErrNotFound)
	}
	if _, err := d.LPush("l", Int(1)); err != nil {
		t.Fatalf("LPush = %v", err)
	}
	if ok, err := d.CompareAndSwap("l", Int(1), Int(2), 0); ok || !errors.Is(err, ErrIsList) {
		t.Fatalf("CompareAndSwap(\"l\") on a list = %v, %v; want false, %v", ok, err, ErrIsList)
	}
	specCheck(t, d)
}

func TestExpireTTL(t *testing.T) {
	d, c := specOpen(t, Options{})
	specSet(t, d, "never", Int(1), 0, 0)
	if ttl, err := d.TTL("never"); ttl != 0 || err != nil {
		t.Fatalf("TTL(\"never\") = %v, %v; want 0, <nil>", ttl, err)
	}
	if _, err := d.TTL("absent"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("TTL(\"absent\") = %v, want %v", err, ErrNotFound)
	}
	// Sub-millisecond TTLs round up.
	for _, c := range []struct {
		ttl, want time.Duration
	}{
		{time.Nanosecond, time.Millisecond},
		{999 * time.Microsecond, time.Millisecond},
		{time.Millisecond, time.Millisecond},
		{1500 * time.Microsecond, 2 * time.Millisecond},
		{time.Minute, time.Minute},
	} {
		specSet(t, d, "k", Int(1), c.ttl, 0)
		if ttl, err := d.TTL("k"); ttl != c.want || err != nil {
			t.Fatalf("TTL(\"k\") after Set with ttl %v = %v, %v; want %v, <nil>", c.ttl, ttl, err, c.want)
		}
		if err := d.Expire("never", c.ttl); err != nil {
			t.Fatalf("Expire(\"never\", %v) = %v", c.ttl, err)
		}
		if ttl, err := d.TTL("never"); ttl != c.want || err != nil {
			t.Fatalf("TTL(\"never\") after Expire(%v) = %v, %v; want %v, <nil>", c.ttl, ttl, err, c.want)
		}
	}
	specSet(t, d, "k", Int(1), time.Nanosecond, 0)
	wantGet(t, d, "k", Int(1), 0)
	c.Advance(time.Millisecond)
	wantGetErr(t, d, "k", ErrNotFound)
	if _, err := d.TTL("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("TTL(\"k\") expired = %v, want %v", err, ErrNotFound)
	}
	// Expire does not bring back an expired key.
	wantErr(t, `Expire("k", 1h) on an expired key`, d.Expire("k", time.Hour), ErrNotFound)
	wantGetErr(t, d, "k", ErrNotFound)
	wantErr(t, `Expire("absent", 1h)`, d.Expire("absent", time.Hour), ErrNotFound)
	// The TTL counts down; Expire(0) makes a key permanent.
	specSet(t, d, "k", Int(1), 10*time.Second, 0)
	c.Advance(4 * time.Second)
	if ttl, err := d.TTL("k"); ttl != 6*time.Second || err != nil {
		t.Fatalf("TTL(\"k\") 4 s into 10 s = %v, %v; want 6s, <nil>", ttl, err)
	}
	if err := d.Expire("k", 0); err != nil {
		t.Fatalf("Expire(\"k\", 0) = %v", err)
	}
	c.Advance(time.Hour)
	if ttl, err := d.TTL("k"); ttl != 0 || err != nil {
		t.Fatalf("TTL(\"k\") after Expire(0) = %v, %v; want 0, <nil>", ttl, err)
	}
	wantGet(t, d, "k", Int(1), 0)
	// Lists have TTLs too.
	if _, err := d.RPush("l", Int(1)); err != nil {
		t.Fatalf("RPush = %v", err)
	}
	if err := d.Expire("l", time.Second); err != nil {
		t.Fatalf("Expire(\"l\", 1s) = %v", err)
	}
	c.Advance(time.Second)
	if n, err := d.LLen("l"); n != 0 || err != nil {
		t.Fatalf("LLen(\"l\") expired = %d, %v; want 0, <nil>", n, err)
	}
	if n, err := d.RPush("l", Int(2)); n != 1 || err != nil {
		t.Fatalf("RPush(\"l\") on an expired list = %d, %v; want 1 (a fresh list), <nil>", n, err)
	}
	if ttl, err := d.TTL("l"); ttl != 0 || err != nil {
		t.Fatalf("TTL(\"l\") of a fresh list = %v, %v; want 0, <nil>", ttl, err)
	}
	specCheck(t, d)
}

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
// eviction passes over the keys read, moving them to the head, and evicts the
// oldest key not read.
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
		// 1 and 2 got their second chance, 3 went; 4 was not reached.
		want := append(append(append([]string{specKey(4)}, keys[4:]...), specKey(1), specKey(2)), specKey(i))
		got, err := d.Keys(0)
		if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("Keys(0) after the first eviction =\n%q, %v; want\n%q", got, err, want)
		}
		break
	}
	wantGetErr(t, d, specKey(3), ErrNotFound)
	specCheck(t, d)
}

// TestGetStaleRetry reads a key that another Dict on the same zone keeps
// rewriting, now expired ("dead", written on a clock an hour behind), now
// live: GetStale must never call a live value stale. A bytes value takes two
// passes (the first sizes the buffer), and the stale mark of the first must
// not leak into the second.
func TestGetStaleRetry(t *testing.T) {
	now := newSpecClock()
	behind := newSpecClock()
	behind.Advance(-time.Hour)
	path := filepath.Join(t.TempDir(), "zone")
	r, err := Open(path, Options{Size: 1 << 20, Clock: now.Now})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer r.Close()
	w, err := Open(path, Options{Clock: behind.Now})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer w.Close()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				w.Set("k", String("dead"), time.Millisecond, 0)
			} else {
				w.Set("k", String("live"), 0, 0)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for i := 0; i < 300000; i++ {
		v, _, stale, err := r.GetStale("k")
		if err == nil && (v.String() == "live") == stale {
			t.Fatalf("GetStale(\"k\") = %q, stale %v (read %d)", v.String(), stale, i)
		}
	}
	specCheck(t, r)
}

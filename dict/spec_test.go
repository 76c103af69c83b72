package dict

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// The package's semantics in numbered examples, one sub-test each, with an
// injected clock.
// Example 21, which reopens the zone in another process, is in
// spec_reopen_test.go.

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

func specEx1(t *testing.T) {
	d, _ := openTest(t, Options{})
	specSet(t, d, "foo", Int(32), 0, 0)
	wantGet(t, d, "foo", Int(32), 0)
}

func specEx2(t *testing.T) {
	d, _ := openTest(t, Options{})
	specSet(t, d, "baz", Float(1.28), 0, 0)
	specSet(t, d, "baz", Float(3.96), 0, 0)
	wantGet(t, d, "baz", Float(3.96), 0)
	v, _, _ := d.Get("baz")
	if v.Float() != 3.96 || v.Kind() != KindFloat {
		t.Fatalf("Get(\"baz\").Float() = %v (%s), want 3.96 (float)", v.Float(), v.Kind())
	}
}

func specEx3(t *testing.T) {
	d, _ := openTest(t, Options{})
	specSet(t, d, "t", Bool(true), 0, 0)
	specSet(t, d, "f", Bool(false), 0, 0)
	wantGet(t, d, "t", Bool(true), 0)
	wantGet(t, d, "f", Bool(false), 0)
	if v, _, _ := d.Get("f"); v.Bool() || v.Kind() != KindBool {
		t.Fatalf("Get(\"f\") = %v (%s), want false (bool)", v.Bool(), v.Kind())
	}
}

func specEx4(t *testing.T) {
	d, _ := openTest(t, Options{})
	for _, s := range []string{"hello", "hello, world", "hello", strings.Repeat("x", 3000), "hello"} {
		specSet(t, d, "k", String(s), 0, 0)
		wantGet(t, d, "k", String(s), 0)
	}
}

func specEx5(t *testing.T) {
	// In ascending time, and in the spec's order (reads reclaim nothing, so
	// going back before the expiry finds the value again).
	for _, order := range [][]int{{9, 10, 11}, {11, 10, 9}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			d, c := openTest(t, Options{})
			specSet(t, d, "foo", Int(32), 10*time.Millisecond, 0)
			for _, at := range order {
				c.Set(time.Duration(at) * time.Millisecond)
				if at < 10 {
					wantGet(t, d, "foo", Int(32), 0)
				} else {
					wantGetErr(t, d, "foo", ErrNotFound)
				}
			}
		})
	}
}

func specEx6(t *testing.T) {
	for _, read := range []bool{false, true} {
		t.Run(fmt.Sprintf("read-key1=%v", read), func(t *testing.T) {
			d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
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
		})
	}
}

func specEx7(t *testing.T) {
	d, _ := openTest(t, Options{})
	wantGetErr(t, d, "never", ErrNotFound)
	if _, _, stale, err := d.GetStale("never"); !errors.Is(err, ErrNotFound) || stale {
		t.Fatalf("GetStale(\"never\") stale %v, %v; want false, %v", stale, err, ErrNotFound)
	}
}

func specEx8(t *testing.T) {
	d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
	for _, n := range []int{int(d.Size()) + 1, d.maxEntry} {
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
}

func specEx9(t *testing.T) {
	d, _ := openTest(t, Options{Size: 1 << 20, Shards: 1})
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
}

func specEx10(t *testing.T) {
	d, c := openTest(t, Options{})
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
}

func specEx11(t *testing.T) {
	d, c := openTest(t, Options{})
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
}

func specEx12(t *testing.T) {
	d, _ := openTest(t, Options{})
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
}

func specEx13(t *testing.T) {
	d, _ := openTest(t, Options{})
	specSet(t, d, "foo", Int(32), 0, 199)
	wantGet(t, d, "foo", Int(32), 199)
}

func specEx14(t *testing.T) {
	d, _ := openTest(t, Options{Size: 1 << 20})
	empty := d.FreeSpace()
	if empty <= 0 || empty > d.Size() {
		t.Fatalf("FreeSpace() of an empty zone = %d, capacity %d", empty, d.Size())
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
}

func specEx15(t *testing.T) {
	d, c := openTest(t, Options{})
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
}

func specEx16(t *testing.T) {
	d, c := openTest(t, Options{Size: 1 << 20})
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
}

func specEx17(t *testing.T) {
	d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
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
}

func specEx18(t *testing.T) {
	d, c := openTest(t, Options{})
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
}

func specEx19(t *testing.T) {
	d, _ := openTest(t, Options{})
	if _, _, err := d.IncrInit("k", 1, 0, -1); !errors.Is(err, ErrBadTTL) {
		t.Fatalf("IncrInit(\"k\", 1, 0, -1) = %v, want %v", err, ErrBadTTL)
	}
	wantGetErr(t, d, "k", ErrNotFound)
}

func specEx20(t *testing.T) {
	d, _ := openTest(t, Options{Shards: 1})
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
}

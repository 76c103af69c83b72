package dict

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// snapOpen fills a one-shard zone with a value of each kind and a list, and
// opens a read-only view of it with lock timeout timeout and d's clock.
func snapOpen(t *testing.T, timeout time.Duration) (d, ro *Dict) {
	t.Helper()
	d, c := openTest(t, Options{Size: 1 << 20, Shards: 1})
	d.Set("b", String("hello"), 0, 7)
	d.Set("i", Int(-42), 0, 0)
	d.Set("f", Float(2.5), 0, 0)
	d.Set("t", Bool(true), 0, 0)
	d.Set("m", String(strings.Repeat("m", 16)), 0, 0)
	d.RPush("l", Int(1))
	d.RPush("l", String("two"))
	ro, err := Open(d.Path(), Options{ReadOnly: true, LockTimeout: timeout, Clock: c.UnixMilli})
	if err != nil {
		t.Fatalf("Open(ReadOnly) = %v", err)
	}
	t.Cleanup(func() { ro.Close() })
	return d, ro
}

// entryOf returns key's entry in d's only shard.
func entryOf(t *testing.T, d *Dict, key string) (uint32, *entry) {
	t.Helper()
	s := &d.shards[0]
	off, err := s.findInShard(key, hashKey(d.seed, key))
	if err != nil || off == 0 {
		t.Fatalf("findInShard(%q) = %#x, %v", key, off, err)
	}
	return off, s.entryAt(off)
}

// sortedKeys returns ro.Keys(0) sorted.
func sortedKeys(t *testing.T, ro *Dict) []string {
	t.Helper()
	keys, err := ro.Keys(0)
	if err != nil {
		t.Fatalf("read-only Keys(0) = %v", err)
	}
	slices.Sort(keys)
	return keys
}

var snapAll = []string{
	"b bytes hello flags=7 ttl=0s",
	"f float 2.5 flags=0 ttl=0s",
	"i int -42 flags=0 ttl=0s",
	"l list (list) int:1 bytes:two flags=0 ttl=0s",
	"m bytes mmmmmmmmmmmmmmmm flags=0 ttl=0s",
	"t bool true flags=0 ttl=0s",
}

// TestReadOnlyDeadHolder: a shard left changing (Seq odd) by a lock holder
// that is gone stays as it is until a writer takes it over, so a read-only
// view copies it as it stands, at once rather than after its lock timeout:
// Check reports the gone owner and nothing else (the shard is sound), and
// Keys and Scan list it whole.
func TestReadOnlyDeadHolder(t *testing.T) {
	d, ro := snapOpen(t, time.Minute)
	s := &d.shards[0]
	atomic.StoreUint64(&s.h.Lock, 0x1) // a word no owner wrote: dead
	atomic.AddUint64(&s.h.Seq, 1)
	start := time.Now()
	err := ro.Check()
	var j interface{ Unwrap() []error }
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "owner that is gone") || !errors.As(err, &j) || len(j.Unwrap()) != 1 {
		t.Errorf("read-only Check() of a shard its dead holder left changing = %v, want the gone owner alone", err)
	}
	if got, want := sortedKeys(t, ro), []string{"b", "f", "i", "l", "m", "t"}; !slices.Equal(got, want) {
		t.Errorf("read-only Keys(0) = %q, want %q", got, want)
	}
	if got := scanAll(t, ro); !slices.Equal(got, snapAll) {
		t.Errorf("read-only Scan reports\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(snapAll, "\n"))
	}
	if el := time.Since(start); el >= time.Minute { // the view's lock timeout
		t.Errorf("read-only Check, Keys and Scan took %v: they waited for a dead holder", el)
	}
	// Undone, the shard is sound again: openTest checks it at the end.
	atomic.AddUint64(&s.h.Seq, 1)
	atomic.StoreUint64(&s.h.Lock, 0)
}

// TestReadOnlyLiveHolder: a shard whose lock a live process keeps is busy
// for a read-only view once its lock timeout has passed: Check, Keys and
// Scan return ErrLockTimeout, never a report of corruption.
func TestReadOnlyLiveHolder(t *testing.T) {
	const timeout = 50 * time.Millisecond
	d, ro := snapOpen(t, timeout)
	s := &d.shards[0]
	if err := d.lock(s); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := ro.Check()
	if !errors.Is(err, ErrLockTimeout) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "a live process holds its lock") {
		t.Errorf("read-only Check() of a held shard = %v, want ErrLockTimeout naming the live holder", err)
	}
	if el := time.Since(start); el < timeout {
		t.Errorf("read-only Check() gave up after %v, before its lock timeout %v", el, timeout)
	}
	if _, err := ro.Keys(0); !errors.Is(err, ErrLockTimeout) {
		t.Errorf("read-only Keys(0) of a held shard = %v, want ErrLockTimeout", err)
	}
	if err := ro.Scan(func(Item) bool { return true }); !errors.Is(err, ErrLockTimeout) {
		t.Errorf("read-only Scan of a held shard = %v, want ErrLockTimeout", err)
	}
	d.unlock(s)
	if err := ro.Check(); err != nil {
		t.Errorf("read-only Check() after the holder let go = %v", err)
	}
}

// TestReadOnlyEntryWrite: an entry whose Ver is odd is being written by a
// live process (which holds its page lock) or was by one that died. A
// read-only view cannot tell them apart by the entry and reports neither as
// corruption; Scan waits for the live writer (up to its lock timeout) and
// leaves the dead one's entry out, which the next writer drops. A writable
// Check, which drains the page first, drops the dead writer's entry too.
func TestReadOnlyEntryWrite(t *testing.T) {
	const timeout = 50 * time.Millisecond
	d, ro := snapOpen(t, timeout)
	s := &d.shards[0]
	off, e := entryOf(t, d, "m")
	e.beginWrite()
	pw := s.slab.PageWord(off)
	if !d.z.TryLock(pw) {
		t.Fatal("the page of m is locked")
	}

	if err := ro.Check(); err != nil {
		t.Errorf("read-only Check() with m written by a live process = %v", err)
	}
	if got, want := sortedKeys(t, ro), []string{"b", "f", "i", "l", "m", "t"}; !slices.Equal(got, want) {
		t.Errorf("read-only Keys(0) = %q, want %q", got, want)
	}
	if err := ro.Scan(func(Item) bool { return true }); !errors.Is(err, ErrLockTimeout) {
		t.Errorf("read-only Scan with m written by a live process = %v, want ErrLockTimeout", err)
	}

	d.z.Unswap(pw) // the writer dies: its page lock word is free, Ver stays odd
	if err := ro.Check(); err != nil {
		t.Errorf("read-only Check() with m left by a dead writer = %v", err)
	}
	want := slices.DeleteFunc(slices.Clone(snapAll), func(l string) bool { return strings.HasPrefix(l, "m ") })
	if got := scanAll(t, ro); !slices.Equal(got, want) {
		t.Errorf("read-only Scan with m left by a dead writer reports\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A writable Check drains the page and settles the dead writer's
	// entry as a write of m would: the shard's repair drops m.
	if err := d.Check(); err != nil {
		t.Errorf("Check() with m left by a dead writer = %v, want m settled", err)
	}
	wantGetErr(t, d, "m", ErrNotFound)
	if got := scanAll(t, ro); !slices.Equal(got, want) {
		t.Errorf("read-only Scan after Check settled m reports\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

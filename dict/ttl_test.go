package dict

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// Tests of expiry: GetStale on expired keys (also against a concurrent
// writer), and Expire and TTL.

func TestGetStale(t *testing.T) {
	d, c := openTest(t, Options{})
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
}

func TestExpireTTL(t *testing.T) {
	d, c := openTest(t, Options{})
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
}

// TestLongestTTL sets the longest TTLs a time.Duration holds, with Set,
// Expire and a list: the entry keeps them (its expiry is in Unix ms, good
// to the year 2527), and TTL and Scan give them back as the longest
// Duration of whole milliseconds, never negative. Rounding the TTL up to
// whole milliseconds once wrapped there: the entry's expiry became the
// year 2527 and TTL read back -709599h27m9.29s.
func TestLongestTTL(t *testing.T) {
	d, _ := openTest(t, Options{})
	const longest = time.Duration(maxTTLMs) * time.Millisecond
	for _, c := range []struct{ ttl, want time.Duration }{
		{math.MaxInt64, longest},
		{longest + 1, longest},
		{longest, longest},
		{longest - 1, longest},
		{longest - time.Millisecond, longest - time.Millisecond},
	} {
		ttl, want := c.ttl, c.want
		specSet(t, d, "k", Int(1), ttl, 0)
		if err := d.Expire("l", 0); err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatalf("Expire(\"l\", 0) = %v", err)
		}
		if _, err := d.RPush("l", Int(1)); err != nil {
			t.Fatalf("RPush = %v", err)
		}
		if err := d.Expire("l", ttl); err != nil {
			t.Fatalf("Expire(\"l\", %v) = %v", ttl, err)
		}
		for _, k := range []string{"k", "l"} {
			if got, err := d.TTL(k); got != want || err != nil {
				t.Errorf("TTL(%q) after a TTL of %v = %v, %v; want %v, <nil>", k, ttl, got, err, want)
			}
		}
		n := 0
		if err := d.Scan(func(it Item) bool {
			n++
			if it.TTL != want {
				t.Errorf("Scan: %q's TTL after a TTL of %v = %v, want %v", it.Key, ttl, it.TTL, want)
			}
			return true
		}); err != nil || n != 2 {
			t.Fatalf("Scan = %v after %d items, want <nil> after 2", err, n)
		}
	}
}

// TestGetStaleRetry reads a key that another Dict on the same zone keeps
// rewriting, now expired ("dead", written on a clock an hour behind), now
// live: GetStale must never call a live value stale. A bytes value takes two
// passes (the first sizes the buffer), and the stale mark of the first must
// not leak into the second.
func TestGetStaleRetry(t *testing.T) {
	r, _ := openTest(t, Options{})
	behind := new(testutil.Clock)
	behind.Advance(-time.Hour)
	w, err := Open(r.Path(), Options{Clock: behind.UnixMilli})
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
}

package limiter

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// holdShard holds d's shard of key inside Update until the test ends or the
// returned release is called, and returns once the lock is held.
func holdShard(t *testing.T, d *dict.Dict, key string) (release func()) {
	t.Helper()
	held, free, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- d.Update(key, func(cur dict.Value, ok bool) (dict.Value, time.Duration, bool) {
			close(held)
			<-free
			return dict.Int(1), 0, true
		})
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("Update(%q) = %v before holding the lock", key, err)
	}
	var released bool
	release = func() {
		if released {
			return
		}
		released = true
		close(free)
		if err := <-done; err != nil {
			t.Errorf("holding Update(%q) = %v", key, err)
		}
	}
	t.Cleanup(release)
	return release
}

// Every limiter returns ErrLockTimeout, and counts nothing, when the key's
// shard is held past the dictionary's LockTimeout.
func TestLockTimeout(t *testing.T) {
	const timeout = 20 * time.Millisecond
	// One shard: the held key's lock is every key's.
	d, _ := zonetest.Open(t, dict.Options{Shards: 1, LockTimeout: timeout})
	req, _ := NewReq(d, "t", 10, 5)
	count, _ := NewCount(d, "t", 10, time.Minute)
	conn, _ := NewConn(d, "t", 10, 0, time.Second)
	leased, _ := NewLeasedConn(d, "t", 10, 0, time.Second, time.Minute)
	sliding, _ := NewSlidingWindow(d, "t", 10, time.Minute)
	gcra, _ := NewGCRA(d, "t", 10, 5)
	keysBefore, err := d.Keys(0)
	if err != nil {
		t.Fatal(err)
	}
	release := holdShard(t, d, "held")

	ctx := context.Background()
	limiters := []struct {
		name string
		l    Limiter
	}{{"Req", req}, {"Count", count}, {"Conn", conn}, {"LeasedConn", leased}, {"SlidingWindow", sliding}, {"GCRA", gcra}}
	wantTimeout := func(what string, err error, start time.Time) {
		t.Helper()
		if !errors.Is(err, ErrLockTimeout) || !errors.Is(err, dict.ErrLockTimeout) {
			t.Errorf("%s on a held shard = %v, want ErrLockTimeout", what, err)
		}
		if el := time.Since(start); el < timeout {
			t.Errorf("%s gave up after %v, before LockTimeout %v", what, el, timeout)
		}
	}
	for _, c := range limiters {
		for _, commit := range []bool{true, false} {
			start := time.Now()
			d, err := c.l.Incoming(ctx, "k", commit)
			if err == nil {
				t.Errorf("%s.Incoming(k, %v) = %+v on a held shard", c.name, commit, d)
			}
			wantTimeout(c.name+".Incoming", err, start)
		}
		start := time.Now()
		wantTimeout(c.name+".Uncommit", c.l.Uncommit(ctx, "k"), start)
	}
	start := time.Now()
	_, err = Combine(ctx, []Limiter{count, req}, []string{"k", "k"})
	wantTimeout("Combine", err, start)

	release()
	keys, err := d.Keys(0)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	want := slices.Sorted(slices.Values(append(keysBefore, "held")))
	if !slices.Equal(keys, want) {
		t.Errorf("keys after timed-out decisions = %q, want %q: a decision that timed out wrote", keys, want)
	}
	// The limiters work again, from a state with nothing counted.
	if dc, err := count.Incoming(ctx, "k", true); err != nil || !dc.Allowed || dc.Remaining != 9 {
		t.Errorf("Count.Incoming(k) after release = %+v, %v, want allowed with 9 remaining", dc, err)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
}

package dict

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// TestReclaimJudgesEntryAfterDrain: the hand judges an entry (expired? used
// since it passed?) only once it has drained the entry's page, so an entry
// writer already inside the page, which gives the entry a new TTL, is
// waited for before the judgement, not after it. SafeSet, which evicts
// nothing live, must not then drop the entry as expired.
//
// The writer is a MutateOutcome whose fn holds the page while the entry's
// old TTL runs out. The clock tells where SafeSet is: the hand reads it for
// the entry's expiry, and the first read after SafeSet starts stops SafeSet
// there until the writer has finished. A hand that reads the entry before
// draining its page reads the clock while the writer is inside (and the
// writer then finishes first); one that drains first waits for the writer
// and, as LockTimeout is short, gives up with ErrLockTimeout having read
// nothing. Either way the entry must be found live afterwards.
func TestReclaimJudgesEntryAfterDrain(t *testing.T) {
	c := new(testutil.Clock)
	var armed atomic.Bool
	read, resume := make(chan struct{}), make(chan struct{})
	clock := func() int64 {
		if armed.CompareAndSwap(true, false) {
			close(read)
			<-resume
		}
		return c.UnixMilli()
	}
	d, _ := openTest(t, Options{Size: specMinZone, Shards: 1, Clock: clock, LockTimeout: 50 * time.Millisecond})
	val := make([]byte, 16)
	const victim = "victim0000"
	if err := d.SafeSet(victim, Bytes(val), 10*time.Millisecond, 0); err != nil {
		t.Fatalf("SafeSet(%q) = %v", victim, err)
	}
	for i := 0; ; i++ {
		err := d.SafeSet(fmt.Sprintf("fill%06d", i), Bytes(val), 0, 0)
		if errors.Is(err, ErrNoMemory) {
			break
		}
		if err != nil {
			t.Fatalf("SafeSet(fill%06d) = %v", i, err)
		}
	}
	if keys, err := d.Keys(1); err != nil || len(keys) != 1 || keys[0] != victim {
		t.Fatalf("Keys(1) = %q, %v; want the queue's tail %q", keys, err, victim)
	}

	in, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := d.MutateOutcome(victim, 16, func(b []byte, found bool) (bool, time.Duration) {
			close(in)
			<-release
			b[0] = 42
			return true, time.Hour
		})
		done <- err
	}()
	<-in
	if seq := d.shards[0].seq(); seq&1 != 0 {
		t.Fatalf("Seq = %d inside MutateOutcome's fn: the write took the shard's lock, not the page's", seq)
	}
	c.Advance(20 * time.Millisecond) // the old TTL runs out while the writer is inside
	armed.Store(true)
	setErr := make(chan error, 1)
	go func() { setErr <- d.SafeSet("fill999999", Bytes(val), 0, 0) }()
	select {
	case <-read:
		// The hand read the entry's expiry with the writer still inside.
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("MutateOutcome(%q) = %v", victim, err)
		}
		close(resume)
		t.Logf("SafeSet read the clock with the writer inside the page; SafeSet = %v", <-setErr)
	case err := <-setErr:
		if !errors.Is(err, ErrLockTimeout) {
			t.Fatalf("SafeSet with a writer inside the tail's page = %v, want %v", err, ErrLockTimeout)
		}
		armed.Store(false)
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("MutateOutcome(%q) = %v", victim, err)
		}
	}

	v, _, err := d.Get(victim)
	if err != nil || len(v.Bytes()) != 16 || v.Bytes()[0] != 42 {
		t.Fatalf("Get(%q) = %v, %v; want the value MutateOutcome wrote, with its TTL of 1h", victim, v, err)
	}
	if ttl, err := d.TTL(victim); err != nil || ttl < 59*time.Minute {
		t.Fatalf("TTL(%q) = %v, %v; want 1h", victim, ttl, err)
	}
	if st := d.Stats(); st.Expirations != 0 || st.Evictions != 0 {
		t.Fatalf("Stats() = %d expirations, %d evictions; want none: the entry was live", st.Expirations, st.Evictions)
	}
}

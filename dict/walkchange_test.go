package dict

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// walkChangeKeys is how many keys the tests of walks that a change
// interrupts write: many steps' worth.
const walkChangeKeys = 8 * walkStep

// openWalkShard returns a Dict of one shard that holds walkChangeKeys
// keys, key(i) for i from 0.
func openWalkShard(t *testing.T, key func(i int) string) *Dict {
	t.Helper()
	d, _ := openTest(t, Options{Size: 4 << 20, Shards: 1})
	for i := range walkChangeKeys {
		specSet(t, d, key(i), Int(int64(i)), 0, 0)
	}
	return d
}

func stableKey(i int) string { return fmt.Sprintf("stable-%05d", i) }

// TestScanChangedBetweenSteps changes the shard from Scan's callback, which
// runs between steps: it writes new keys, deletes keys not yet reported,
// and deletes and writes again keys already reported, which the queue
// then holds again ahead of the walk. Scan must report each key once, and
// every key that no change touched.
func TestScanChangedBetweenSteps(t *testing.T) {
	d := openWalkShard(t, stableKey)
	seen := map[string]int{}
	deleted := map[string]bool{}
	n := 0
	err := d.Scan(func(it Item) bool {
		seen[it.Key]++
		n++
		if n%64 != 0 {
			return true
		}
		specSet(t, d, fmt.Sprintf("new-%05d", n), Int(1), 0, 0)
		if victim := stableKey(walkChangeKeys - n/8); seen[victim] == 0 {
			if err := d.Delete(victim); err != nil {
				t.Fatal(err)
			}
			deleted[victim] = true
		}
		// A key reported before, written again: a new entry at the
		// queue's head.
		if err := d.Delete(it.Key); err != nil {
			t.Fatal(err)
		}
		specSet(t, d, it.Key, Int(2), 0, 0)
		return true
	})
	if err != nil {
		t.Fatalf("Scan = %v", err)
	}
	for k, c := range seen {
		if c > 1 {
			t.Errorf("Scan reported %q %d times, want once", k, c)
		}
	}
	for i := range walkChangeKeys {
		if k := stableKey(i); seen[k] == 0 && !deleted[k] {
			t.Errorf("Scan did not report %q, present throughout", k)
		}
	}
	if len(deleted) == 0 {
		t.Error("no key deleted ahead of the walk: the test changes too little")
	}
}

// TestWalksConcurrentWriter runs Keys, Scan, FlushExpired and
// KeysWithPrefix while a goroutine writes and deletes keys of its own in
// the same shard. Each walk must list each key once and every key that
// the writer does not touch.
func TestWalksConcurrentWriter(t *testing.T) {
	d := openWalkShard(t, stableKey)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			k := fmt.Sprintf("churn-%05d", i%(2*walkStep))
			if i%3 == 2 {
				d.Delete(k)
			} else {
				d.Set(k, Int(int64(i)), 0, 0)
			}
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	check := func(what string, keys []string) {
		t.Helper()
		count := map[string]int{}
		for _, k := range keys {
			if count[k]++; count[k] == 2 {
				t.Errorf("%s listed %q twice", what, k)
			}
		}
		for i := range walkChangeKeys {
			if count[stableKey(i)] == 0 {
				t.Errorf("%s did not list %q, present throughout", what, stableKey(i))
				return
			}
		}
	}
	for range 4 {
		keys, err := d.Keys(0)
		if err != nil {
			t.Fatalf("Keys(0) = %v", err)
		}
		check("Keys(0)", keys)
		keys = keys[:0]
		if err := d.Scan(func(it Item) bool { keys = append(keys, it.Key); return true }); err != nil {
			t.Fatalf("Scan = %v", err)
		}
		check("Scan", keys)
		if keys, err = d.KeysWithPrefix("stable-"); err != nil {
			t.Fatalf("KeysWithPrefix = %v", err)
		}
		check("KeysWithPrefix", keys)
		if _, err := d.FlushExpired(0); err != nil {
			t.Fatalf("FlushExpired(0) = %v", err)
		}
	}
}

// TestRepairAdvances repairs a shard of many entries under its lock. The
// repair must move Seq by 2 at least once every walkStep entries, keep it
// odd, and lose no entry.
func TestRepairAdvances(t *testing.T) {
	d := openWalkShard(t, stableKey)
	s := &d.shards[0]
	if err := d.lock(s); err != nil {
		t.Fatal(err)
	}
	before := s.seq()
	err := s.repairInShard()
	after := s.seq()
	d.unlock(s)
	if err != nil {
		t.Fatalf("repairInShard() = %v", err)
	}
	if after&1 == 0 {
		t.Errorf("Seq = %d after a repair under the lock, want it odd", after)
	}
	if moves, want := (after-before)/2, uint64(walkChangeKeys/walkStep); moves < want {
		t.Errorf("the repair moved Seq %d times, want %d or more: once per walkStep entries", moves, want)
	}
	if st := d.Stats(); st.Entries != walkChangeKeys {
		t.Errorf("Stats().Entries = %d after the repair, want %d", st.Entries, walkChangeKeys)
	}
}

// inLockWatch reports whether some goroutine waits in shm's lockWatch.
func inLockWatch() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "shm.(*Zone).lockWatch")
}

// TestLockWaitSeesProgress holds a shard's lock for two lock timeouts
// while moving Seq, as a repair does (advance). A writer that waits for
// the lock meanwhile must not time out, and must write once the lock is
// let go. Without the moves, the same writer times out.
func TestLockWaitSeesProgress(t *testing.T) {
	// The holder moves Seq as fast as it runs, for two timeouts: a least
	// time held, not a budget. So the waiter times out only if the holder
	// is not run for a whole timeout, a second, which even a busy machine
	// does not do.
	const timeout = time.Second
	for _, progress := range []bool{true, false} {
		t.Run(fmt.Sprintf("progress=%v", progress), func(t *testing.T) {
			d, _ := openTest(t, Options{Size: 1 << 20, Shards: 1, LockTimeout: timeout})
			s := &d.shards[0]
			if err := d.lock(s); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := d.Set("waiter", Bytes(make([]byte, 100)), 0, 0)
				done <- err
			}()
			for !inLockWatch() {
				runtime.Gosched()
			}
			var err error
			if progress {
				for start := time.Now(); time.Since(start) < 2*timeout; {
					s.advance()
					select {
					case err = <-done:
					default:
					}
					runtime.Gosched()
				}
			} else {
				// Held until the waiter gives up, however late it runs: a
				// waiter that found the lock free would not say whether
				// it times out.
				err = <-done
			}
			d.unlock(s)
			if progress && err == nil {
				err = <-done
			}
			switch {
			case progress && err != nil:
				t.Fatalf("Set, waiting on a holder that shows progress = %v, want nil", err)
			case !progress && !errors.Is(err, ErrLockTimeout):
				t.Fatalf("Set, waiting on a holder that shows none = %v, want ErrLockTimeout", err)
			}
		})
	}
}

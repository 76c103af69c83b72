package dict_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/shm"
)

// Crash tests: helper processes hammer one zone with mixed writes and are
// SIGKILLed at random moments, inside a shard lock or outside. The next
// process to lock a shard whose owner died rebuilds it (doc.go I6). Afterwards
// the zone must pass Check, no lock may be held, every value must be whole,
// and every counter must hold each acknowledged increment and at most the
// increments in flight when their process died: an increment is one aligned
// store, never lost or half done.
//
// A helper signals readiness, and may be killed, only once it has done
// crashMinOps operations. So every kill lands among operations, however the
// machine schedules the helpers. The witness (crashWitness) also waits
// until Stats shows an entry moved to a helper's pages. Then it is killed
// inside an update, holding a shard's lock, which forces a recovery.
//
// The test's seed (testutil.Seed) fixes each slot's kill delays and each
// helper's operations; where a kill lands in a helper's run is up to the
// scheduler, so a replay repeats the workload, not the interleaving. A run
// with SHMZONE_CRASH_KILLS set replays with it set the same.
//
// This file holds the tests and their checks; the helper processes' bodies
// are in crash_helpers_test.go, and the keys, values and ack files both
// sides share in crash_records_test.go.

const (
	crashDefaultKills = 400                   // SIGKILLs per run; SHMZONE_CRASH_KILLS overrides
	crashSlots        = 4                     // helpers hammering at once
	crashMaxDelay     = 20 * time.Millisecond // a helper is killed 0..crashMaxDelay after it is ready
	crashMinOps       = 10                    // operations a helper does before it is ready
	crashStatsEvery   = 16                    // operations between the witness's Stats calls
	crashCounters     = 64                    // keys only incremented
	crashValues       = 128                   // keys set, added, replaced, deleted and read
	crashLists        = 8                     // keys pushed and popped
	crashMutates      = 16                    // state keys changed in place with Mutate
	crashListMax      = 64                    // a helper pops rather than pushes past this length
	crashMaxValue     = 12 << 10              // largest value: three pages, a page run
	crashShards       = 4
	// crashZoneSize holds everything the helpers can write, about 2 MiB at
	// most, many times over: an eviction could legitimately lose a counter.
	crashZoneSize = 32 << 20
)

// crashKills returns the number of kills a run of a crash test makes: def,
// or SHMZONE_CRASH_KILLS when set, for every crash test alike.
func crashKills(t *testing.T, def int) int {
	n := def
	if s := os.Getenv("SHMZONE_CRASH_KILLS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("SHMZONE_CRASH_KILLS=%q: want a positive number", s)
		}
		n = v
	}
	return n
}

// TestCrashKill kills hammering helpers at random moments, crashKills times,
// then checks that the zone is whole and no acknowledged increment is lost.
func TestCrashKill(t *testing.T) {
	kills := crashKills(t, crashDefaultKills)
	seed := testutil.Seed(t)
	t.Logf("%d kills (SHMZONE_CRASH_KILLS)", kills)

	path, d := openCrashCounters(t)

	dir := t.TempDir()
	var total crashTally
	hammered := killRounds(t, crashSlots, kills, seed, 0, &total, func(n int, r *rand.Rand, mine *crashTally) error {
		return crashOnce(t, path, dir, n, seed, r, mine)
	})

	st := crashStats(t, d)
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after %d kills = %v", total.kills, err)
	}
	acked, inflight := checkCrashCounters(t, d, &total)
	checkCrashLeftovers(t, d)
	if st.Evictions != 0 {
		t.Errorf("Stats() evictions = %d, want 0: the zone is too small for the test", st.Evictions)
	}
	// What the run must have exercised, which every helper's readiness
	// makes hold however the kills fell.
	if want := uint64(crashMinOps * kills); total.ops < want {
		t.Errorf("%d operations in %d kills, want at least %d", total.ops, total.kills, want)
	}
	if st.Recoveries == 0 {
		t.Errorf("Stats() recoveries = 0 after %d kills, want the witness's shard rebuilt", total.kills)
	}
	// The counters lie in pages the test's process filled, so a helper
	// moves those it writes in place to pages of its own (move.go). The
	// witness waits for such a move.
	if st.Moves == 0 {
		t.Errorf("Stats() moves = 0 after %d kills, want the move the witness saw", total.kills)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after reading everything = %v", err)
	}
	t.Logf("%d kills in %v: %d ops, %d increments acknowledged, %d in flight; %d recoveries, %d lock waits, %d moves; the witness did %d ops",
		total.kills, hammered, total.ops, acked, inflight, st.Recoveries, st.LockWaits, st.Moves, total.witnessOps)
}

// openCrashCounters creates a crash test's zone, which the test closes,
// with its counters at 0.
func openCrashCounters(t *testing.T) (string, *dict.Dict) {
	t.Helper()
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: crashZoneSize, Shards: crashShards})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for k := 0; k < crashCounters; k++ {
		if _, err := d.Set(crashCounterKey(k), dict.Int(0), 0, 0); err != nil {
			t.Fatalf("Set(%q, 0) = %v", crashCounterKey(k), err)
		}
	}
	return path, d
}

// checkCrashCounters checks that every counter holds the increments the
// helpers acknowledged and at most those in flight when they died; it
// returns the sums of both.
func checkCrashCounters(t *testing.T, d *dict.Dict, total *crashTally) (acked, inflight uint64) {
	t.Helper()
	for k := 0; k < crashCounters; k++ {
		key := crashCounterKey(k)
		lo, hi := total.acked[k], total.acked[k]+total.inflight[k]
		acked += lo
		inflight += total.inflight[k]
		v, _, err := d.Get(key)
		if err != nil || v.Kind() != dict.KindInt || uint64(v.Int()) < lo || uint64(v.Int()) > hi {
			t.Errorf("Get(%q) = %v, %v, want Int from %d (acknowledged) to %d (+ in flight)", key, v, err, lo, hi)
		}
	}
	return acked, inflight
}

// crashOnce starts helper n, kills it at a random moment drawn from r after
// it is ready, and adds its ack file to tally. The witness is killed where
// it signals readiness, inside a shard's lock. The helper draws its
// operations from the test's seed, stream crashSlots+n: the streams below
// crashSlots are the slots' delays.
func crashOnce(t *testing.T, path, dir string, n int, seed uint64, r *rand.Rand, tally *crashTally) error {
	ack := filepath.Join(dir, fmt.Sprintf("ack-%d", n))
	if err := os.WriteFile(ack, make([]byte, ackSize), 0o600); err != nil {
		return err
	}
	err := crashKill(t, testutil.Helper(t, "crash-hammer", path, ack,
		strconv.FormatUint(seed, 10), strconv.Itoa(crashSlots+n), crashRole(n)), r, crashMaxDelay)
	if err != nil {
		return err
	}
	tally.kills++
	ops := tally.ops
	if err := tally.readAck(ack); err != nil {
		return err
	}
	if n == crashWitness {
		tally.witnessOps = tally.ops - ops
	}
	return os.Remove(ack)
}

// crashKill starts a helper, waits until it prints readyLine, and SIGKILLs
// it 0 to maxDelay later (drawn from r); it returns once the helper is dead.
func crashKill(t *testing.T, cmd *exec.Cmd, r *rand.Rand, maxDelay time.Duration) error {
	ready := make(chan struct{})
	p := testutil.Start(t, cmd, func(line string) {
		if line == readyLine {
			close(ready)
		}
	})
	select {
	case <-ready:
	case <-p.Done():
		return fmt.Errorf("ended before it was ready: %v", p.Wait())
	case <-time.After(time.Minute):
		return errors.New("not ready after a minute")
	}
	time.Sleep(time.Duration(r.Int64N(int64(maxDelay) + 1)))
	if err := p.Kill(); err != nil {
		return fmt.Errorf("failed before it was killed: %w", err)
	}
	return nil
}

// checkCrashLeftovers reads every value and list the helpers left: each must
// be whole. It empties the lists.
func checkCrashLeftovers(t *testing.T, d *dict.Dict) {
	t.Helper()
	for k := 0; k < crashValues; k++ {
		key := crashValueKey(k)
		v, _, err := d.Get(key)
		switch {
		case errors.Is(err, dict.ErrNotFound):
		case err != nil:
			t.Errorf("Get(%q) = %v", key, err)
		case v.Kind() == dict.KindInt:
			if v.Int() != int64(k) {
				t.Errorf("Get(%q) = Int %d, want %d", key, v.Int(), k)
			}
		case v.Kind() == dict.KindBytes:
			if err := checkCrashValue(key, v.Bytes()); err != nil {
				t.Errorf("Get(%q): %v", key, err)
			}
		default:
			t.Errorf("Get(%q) = %v of kind %v", key, v, v.Kind())
		}
	}
	for k := 0; k < crashMutates; k++ {
		checkStateKey(t, d, crashMutateKey(k))
	}
	for k := 0; k < crashLists; k++ {
		key := crashListKey(k)
		n, err := d.LLen(key)
		if err != nil {
			t.Errorf("LLen(%q) = %v", key, err)
			continue
		}
		for i := 0; i < n; i++ {
			v, err := d.LPop(key)
			if err != nil {
				t.Errorf("LPop(%q) #%d of %d = %v", key, i, n, err)
				break
			}
			if err := checkCrashValue(key, v.Bytes()); err != nil {
				t.Errorf("LPop(%q): %v", key, err)
			}
		}
		if _, err := d.LPop(key); !errors.Is(err, dict.ErrNotFound) {
			t.Errorf("LPop(%q) after %d pops = %v, want ErrNotFound", key, n, err)
		}
	}
	keys, err := d.Keys(0)
	if err != nil {
		t.Fatalf("Keys(0) = %v", err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "ctr-") && !strings.HasPrefix(k, "val-") && !strings.HasPrefix(k, "mut-") {
			t.Errorf("Keys(0) holds %q, which no helper writes", k)
		}
	}
}

// TestCrashHoldingLock kills a helper that holds shard locks (taken through
// the lock word, the first 8 bytes of each shard) and does nothing: the next
// operation on each such shard takes the lock over, rebuilds the shard,
// counts a recovery, and loses nothing.
func TestCrashHoldingLock(t *testing.T) {
	tests := []struct {
		name   string
		shards []int
	}{
		{"one shard", []int{2}},
		{"every shard", []int{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := testutil.TempZone(t)
			d, err := dict.Open(path, dict.Options{Size: 4 << 20, Shards: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			const keys = 256
			for k := 0; k < keys; k++ {
				if _, err := d.Set(crashCounterKey(k), dict.Int(0), 0, 0); err != nil {
					t.Fatalf("Set(%q, 0) = %v", crashCounterKey(k), err)
				}
			}
			for _, i := range tt.shards {
				if st := d.ShardStats(i); st.Entries == 0 {
					t.Fatalf("shard %d holds no key: the test would not touch it", i)
				}
			}
			before := d.Stats()

			args := []string{path}
			for _, i := range tt.shards {
				args = append(args, strconv.Itoa(i))
			}
			ready := make(chan struct{})
			var owner uint64
			p := testutil.Start(t, testutil.Helper(t, "crash-lock", args...), func(line string) {
				if line == readyLine {
					close(ready)
					return
				}
				fmt.Sscanf(line, "owner %d", &owner)
			})
			select {
			case <-ready:
			case <-p.Done():
				t.Fatalf("helper ended before it held the locks: %v", p.Wait())
			case <-time.After(time.Minute):
				t.Fatal("helper not ready after a minute")
			}
			for _, i := range tt.shards {
				if o := *dict.ShardLock(d, i); o != owner || o == 0 {
					t.Fatalf("shard %d lock word %#x, want the helper's %#x", i, o, owner)
				}
				if st := dict.LockState(d, i); st != shm.LockLive {
					t.Fatalf("shard %d lock state %d with the helper alive, want LockLive", i, st)
				}
			}
			if err := p.Kill(); err != nil {
				t.Fatalf("Kill() = %v", err)
			}
			for _, i := range tt.shards {
				if st := dict.LockState(d, i); st != shm.LockDead {
					t.Fatalf("shard %d lock state %d with the helper killed, want LockDead", i, st)
				}
			}

			done := make(chan error, 1)
			go func() {
				for k := 0; k < keys; k++ {
					if n, err := d.Incr(crashCounterKey(k), 1); n != 1 || err != nil {
						done <- fmt.Errorf("Incr(%q, 1) = %d, %v, want 1", crashCounterKey(k), n, err)
						return
					}
				}
				done <- nil
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Minute):
				t.Fatal("Incr on shards locked by a dead process still waits after a minute")
			}
			after := d.Stats()
			if got := after.Recoveries - before.Recoveries; got != uint64(len(tt.shards)) {
				t.Errorf("Stats().Recoveries rose by %d, want %d", got, len(tt.shards))
			}
			for _, i := range tt.shards {
				if st := d.ShardStats(i); st.Recoveries != 1 {
					t.Errorf("ShardStats(%d).Recoveries = %d, want 1", i, st.Recoveries)
				}
			}
			for i := 0; i < after.Shards; i++ {
				if o := *dict.ShardLock(d, i); o != 0 {
					t.Errorf("shard %d lock held by %#x, want free", i, o)
				}
			}
			if after.Entries != keys {
				t.Errorf("Stats().Entries = %d, want %d", after.Entries, keys)
			}
			if err := d.Check(); err != nil {
				t.Fatalf("Check() = %v", err)
			}
		})
	}
}

// crashStats returns d's Stats after kills, which lock every shard: one
// whose lock a killed helper held is taken over and rebuilt there, so every
// lock must be free after it.
func crashStats(t *testing.T, d *dict.Dict) dict.Stats {
	t.Helper()
	st := d.Stats()
	for i := 0; i < st.Shards; i++ {
		if o := *dict.ShardLock(d, i); o != 0 {
			t.Errorf("shard %d lock held by %#x after Stats, want free", i, o)
		}
	}
	return st
}

// killRounds runs kills rounds of a crash test over slots goroutines, each
// with a random source of its own (the seed's stream stream+slot, for the
// kills' delays) and a tally of its own, added to total when it ends. Round
// n, from 1, is one(n, r, mine); the first error fails the test, once
// every slot has stopped. It returns how long the rounds took.
func killRounds[T any, P interface {
	*T
	add(P)
}](t *testing.T, slots, kills int, seed, stream uint64, total P, one func(n int, r *rand.Rand, mine P) error) time.Duration {
	t.Helper()
	start := time.Now()
	var (
		started atomic.Int64 // helpers started, each to be killed
		failed  atomic.Bool
		mu      sync.Mutex
		wg      sync.WaitGroup
	)
	for slot := 0; slot < slots; slot++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, stream+uint64(slot)))
			mine := P(new(T))
			defer func() {
				mu.Lock()
				total.add(mine)
				mu.Unlock()
			}()
			for !failed.Load() {
				n := started.Add(1)
				if n > int64(kills) {
					return
				}
				if err := one(int(n), r, mine); err != nil {
					t.Errorf("helper %d: %v", n, err)
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		t.FailNow()
	}
	return time.Since(start)
}

// checkStateKey fails t unless the Mutate state under key is absent (a
// writer killed inside it lost it, or eviction took it) or whole.
func checkStateKey(t *testing.T, d *dict.Dict, key string) {
	t.Helper()
	v, _, err := d.Get(key)
	switch {
	case errors.Is(err, dict.ErrNotFound):
	case err != nil:
		t.Errorf("Get(%q) = %v", key, err)
	default:
		if err := checkCrashState(key, v.Bytes()); err != nil {
			t.Error(err)
		}
	}
}

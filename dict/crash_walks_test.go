package dict_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/shm"
)

// TestCrashWalks is the soak of bounded holds: writer processes and
// processes that walk whole shards share a zone of two shards and about
// 60,000 entries, and are SIGKILLed at random moments. A run makes
// walksDefaultKills kills; SHMZONE_CRASH_KILLS=3000 makes it the soak of
// thousands. A kill inside a shard's lock leaves a repair of the whole
// shard to the next process. A walk takes the lock in bounded steps
// (stepInShard), and a repair moves Seq as it goes (advance), which lock
// waiters watch. TestWalkStep and TestCheckMovesSeq check those bounds.
// Each helper fails on any error but ErrLockTimeout. A walker also fails
// when a walk misses a stable key or lists one twice. Afterwards every
// stable key must hold its value. Stable keys are only read. A writer
// killed inside a write may lose that key, as doc.go's I6 says. Nothing
// else may be lost.
//
// A goroutine watches both shards meanwhile (holdWatch), and the test
// reports the longest holds it saw. It reports no budget: the machine's
// load decides the figures. A holder that the kernel does not run holds
// its lock all that time. So does a holder that was killed, until the
// kernel has torn the process down and released its owner slot. On a
// loaded machine that time dominates them, and may pass the lock
// timeout. So an operation that timed out is a figure too: the helper
// records it (walksTimeouts) and goes on, as the operation changed
// nothing, and the test reports how many there were.
func TestCrashWalks(t *testing.T) {
	kills := crashKills(t, walksDefaultKills)
	if raceEnabled {
		kills = max(kills/4, 1)
	}
	seed := testutil.Seed(t)
	// The zone is in /dev/shm, as a server's. On a disk filesystem a
	// writer's page could be written back and dropped, and a holder that
	// touched it again waited for the disk with the lock held.
	path := testutil.ShmZone(t, walksZoneSize)
	d, err := dict.Open(path, dict.Options{Size: walksZoneSize, Shards: walksShards})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for k := range walksStable {
		if _, err := d.Set(walksStableKey(k), dict.Int(int64(k)), 0, 0); err != nil {
			t.Fatalf("Set(%q) = %v", walksStableKey(k), err)
		}
	}
	for k := range walksVolatile {
		if _, err := d.Set(walksVolatileKey(k), dict.Int(int64(k)), 0, 0); err != nil {
			t.Fatalf("Set(%q) = %v", walksVolatileKey(k), err)
		}
	}
	for k := range walksTTL {
		if _, err := d.Set(walksTTLKey(k), dict.Int(1), walksMaxTTL, 0); err != nil {
			t.Fatalf("Set(%q) = %v", walksTTLKey(k), err)
		}
	}
	t.Logf("%d kills (SHMZONE_CRASH_KILLS); %d entries in %d shards", kills, d.Stats().Entries, walksShards)

	w := watchHolds(d)
	t.Cleanup(func() { w.stop() }) // before Close: a failed run ends here
	var total walkTally
	took := killRounds(t, walksSlots, kills, seed, 0, &total, func(n int, r *rand.Rand, mine *walkTally) error {
		role := walksWriter
		if n%walksWalkerEvery == 0 {
			role = walksWalker
			mine.walkers++
		}
		mine.kills++
		cmd := testutil.Helper(t, "walks", path, strconv.FormatUint(seed, 10), strconv.Itoa(walksSlots+n), role)
		return crashKill(t, cmd, r, walksMaxDelay)
	})
	still, moving, dead := w.stop()

	st := crashStats(t, d)
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after %d kills = %v", total.kills, err)
	}
	checkWalksStable(t, d)
	if st.Evictions != 0 {
		t.Errorf("Stats() evictions = %d, want 0: the zone is too small for the test", st.Evictions)
	}
	t.Logf("%d kills (%d walkers) in %v; %d recoveries, %d lock waits, %d entries left",
		total.kills, total.walkers, took, st.Recoveries, st.LockWaits, st.Entries)
	t.Logf("longest hold seen of a live process: %v with Seq unmoved, %v in all (a repair's progress included); of a dead one before its takeover: %v", still, moving, dead)
	n, first := readWalksTimeouts(t, path)
	t.Logf("%d operations timed out waiting for a lock (ErrLockTimeout)%s", n, first)
}

// walksTimeouts returns the file in which the helpers of the zone at path
// record their operations that timed out, a line each.
func walksTimeouts(path string) string { return filepath.Join(filepath.Dir(path), "timeouts") }

// readWalksTimeouts returns the number of timeouts the helpers of the zone
// at path recorded, and the first three, for the log.
func readWalksTimeouts(t *testing.T, path string) (n int, first string) {
	t.Helper()
	b, err := os.ReadFile(walksTimeouts(path))
	if errors.Is(err, os.ErrNotExist) {
		return 0, ""
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	return len(lines), ": " + string(bytes.Join(lines[:min(len(lines), 3)], []byte("; ")))
}

// recordTimeout appends err, an ErrLockTimeout of the helper of role, to
// the timeouts file of the zone at path, in one write.
func recordTimeout(path, role string, err error) error {
	f, ferr := os.OpenFile(walksTimeouts(path), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if ferr != nil {
		return ferr
	}
	_, ferr = f.WriteString(fmt.Sprintf("%s %d: %v\n", role, os.Getpid(), err))
	return errors.Join(ferr, f.Close())
}

const (
	walksDefaultKills = 400 // SIGKILLs per run; SHMZONE_CRASH_KILLS overrides
	walksSlots        = 8   // helpers at once
	walksWalkerEvery  = 4   // every walksWalkerEvery-th helper walks, the others write
	walksMaxDelay     = 15 * time.Millisecond
	walksShards       = 2
	walksZoneSize     = 32 << 20
	walksStable       = 45_000 // keys only read: every walk must list each once, and none may be lost
	walksVolatile     = 10_000 // keys written: a writer killed inside a write may lose its key
	walksTTL          = 5_000  // keys written with a short TTL, for FlushExpired
	walksMaxTTL       = 30 * time.Millisecond
	walksWriter       = "writer"
	walksWalker       = "walker"
)

func walksStableKey(k int) string   { return fmt.Sprintf("ws-%05d", k) }
func walksVolatileKey(k int) string { return fmt.Sprintf("wv-%05d", k) }
func walksTTLKey(k int) string      { return fmt.Sprintf("wt-%05d", k) }

// walkTally is what a slot of TestCrashWalks counts.
type walkTally struct{ kills, walkers int }

func (w *walkTally) add(o *walkTally) { w.kills += o.kills; w.walkers += o.walkers }

// checkWalksStable checks that every stable key holds its number, and
// every volatile key its number or a whole value of its own, or is gone.
func checkWalksStable(t *testing.T, d *dict.Dict) {
	t.Helper()
	for k := range walksStable {
		if err := checkWalksValue(walksStableKey(k), k, d, false); err != nil {
			t.Error(err)
		}
	}
	for k := range walksVolatile {
		if err := checkWalksValue(walksVolatileKey(k), k, d, true); err != nil {
			t.Error(err)
		}
	}
}

// checkWalksValue checks key, of number k: present, unless it may be gone,
// with its number or a whole value of its own.
func checkWalksValue(key string, k int, d *dict.Dict, mayBeGone bool) error {
	v, _, err := d.Get(key)
	switch {
	case mayBeGone && errors.Is(err, dict.ErrNotFound):
	case err != nil:
		return fmt.Errorf("Get(%q) = %w", key, err)
	case v.Kind() == dict.KindInt && v.Int() != int64(k):
		return fmt.Errorf("Get(%q) = %d, want %d", key, v.Int(), k)
	case v.Kind() == dict.KindBytes:
		return checkCrashValue(key, v.Bytes())
	case v.Kind() != dict.KindInt:
		return fmt.Errorf("Get(%q) = %v of kind %v", key, v, v.Kind())
	}
	return nil
}

// holdWatch watches the shards' lock words and Seq from a goroutine of
// the test. A hold is a time in which a shard's Seq stays odd and its lock
// word names one owner. A look that finds it longer than any before asks
// the kernel whether the owner lives: a dead owner's hold is the time its
// waiters take to notice, which deadCheckAfter bounds on an idle machine.
type holdWatch struct {
	stopped atomic.Bool
	wg      sync.WaitGroup
	still   time.Duration // the longest hold of a live owner in which Seq did not move
	moving  time.Duration // the longest hold of a live owner, progress included
	dead    time.Duration // the longest hold of a dead owner before a takeover
}

// watchHolds starts watching d's shards.
func watchHolds(d *dict.Dict) *holdWatch {
	w := &holdWatch{}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		n := d.Stats().Shards
		seq, owner := make([]uint64, n), make([]uint64, n)
		still, held := make([]time.Time, n), make([]time.Time, n)
		for !w.stopped.Load() {
			now := time.Now()
			for i := range n {
				s, o := dict.ShardSeq(d, i), atomic.LoadUint64(dict.ShardLock(d, i))
				switch {
				case s&1 == 0 || o == 0:
					seq[i], owner[i] = 0, 0
					continue
				case o != owner[i]:
					seq[i], owner[i], still[i], held[i] = s, o, now, now
				case s != seq[i]:
					seq[i], still[i] = s, now
				}
				w.look(d, i, o, now.Sub(still[i]), now.Sub(held[i]))
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	return w
}

// look records a hold of shard i by owner o, unmoved for still and held
// for held, when it is longer than those seen.
func (w *holdWatch) look(d *dict.Dict, i int, o uint64, still, held time.Duration) {
	if still <= w.still && held <= w.moving && held <= w.dead {
		return
	}
	if dict.LockState(d, i) != shm.LockLive || atomic.LoadUint64(dict.ShardLock(d, i)) != o {
		w.dead = max(w.dead, held)
		return
	}
	w.still, w.moving = max(w.still, still), max(w.moving, held)
}

// stop ends the watch and returns its figures.
func (w *holdWatch) stop() (still, moving, dead time.Duration) {
	w.stopped.Store(true)
	w.wg.Wait()
	return w.still, w.moving, w.dead
}

// helperWalks is a process of TestCrashWalks: args are the zone path, the
// test's seed, the helper's stream of it and its role. A writer reads
// stable keys, and writes and reads volatile keys and keys with a TTL.
// Writes of another length move an entry: a change of the shard's
// structure under its lock. A walker runs Keys, Scan, FlushExpired,
// Check, Repair and KeysWithPrefix at random, and checks that each stable
// key comes once. Check and Repair hold a shard's lock for a whole check
// of it, moving Seq as they go. Either prints readyLine after its first operations, a
// walker after a whole walk, and goes on until it is killed. An operation
// that times out on a lock changed nothing: the helper records it
// (recordTimeout) and goes on. Any other error ends it.
func helperWalks(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("want path, seed, stream and role, got %q", args)
	}
	seed, err := strconv.ParseUint(args[1], 10, 64)
	if err != nil {
		return err
	}
	stream, err := strconv.ParseUint(args[2], 10, 64)
	if err != nil {
		return err
	}
	path, role := args[0], args[3]
	d, err := dict.Open(path, dict.Options{})
	for errors.Is(err, dict.ErrLockTimeout) {
		if err := recordTimeout(path, role, err); err != nil {
			return err
		}
		d, err = dict.Open(path, dict.Options{})
	}
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, stream))
	step, readyAt := func() error { return walksWrite(d, r) }, crashMinOps
	if role == walksWalker {
		step, readyAt = func() error { return walksWalk(d, r) }, 1
	}
	for ops := 1; ; ops++ {
		err := step()
		if errors.Is(err, dict.ErrLockTimeout) {
			err = recordTimeout(path, role, err)
		}
		if err != nil {
			return err
		}
		if ops == readyAt {
			fmt.Println(readyLine)
		}
	}
}

// walksWrite does one writer's operation.
func walksWrite(d *dict.Dict, r *rand.Rand) error {
	var forcible bool
	var err error
	switch x := r.IntN(10); {
	case x < 2:
		k := r.IntN(walksStable)
		return checkWalksValue(walksStableKey(k), k, d, false)
	case x < 3:
		k := r.IntN(walksVolatile)
		return checkWalksValue(walksVolatileKey(k), k, d, true)
	case x < 5:
		k := r.IntN(walksVolatile)
		forcible, err = d.Set(walksVolatileKey(k), dict.Int(int64(k)), 0, 0)
	case x < 7:
		key := walksVolatileKey(r.IntN(walksVolatile))
		forcible, err = d.Set(key, dict.Bytes(crashValue(key, 1+r.IntN(300))), 0, 0)
	case x < 9:
		ttl := time.Millisecond + time.Duration(r.Int64N(int64(walksMaxTTL)))
		forcible, err = d.Set(walksTTLKey(r.IntN(walksTTL)), dict.Int(1), ttl, 0)
	default:
		if err = d.Delete(walksTTLKey(r.IntN(walksTTL))); errors.Is(err, dict.ErrNotFound) {
			err = nil
		}
	}
	if err == nil && forcible {
		err = errors.New("evicted")
	}
	return err
}

// walksWalk does one walker's walk, of a kind drawn from r.
func walksWalk(d *dict.Dict, r *rand.Rand) error {
	var keys []string
	var err error
	prefix := "ws-"
	switch r.IntN(6) {
	case 0:
		keys, err = d.Keys(0)
	case 1:
		err = d.Scan(func(it dict.Item) bool { keys = append(keys, it.Key); return true })
	case 2:
		_, err = d.FlushExpired(0)
		return err
	case 3:
		return d.Check()
	case 4:
		_, err = d.Repair()
		return err
	default:
		prefix = "ws-1"
		keys, err = d.KeysWithPrefix(prefix)
	}
	if err != nil {
		return err
	}
	return checkWalksKeys(keys, prefix)
}

// checkWalksKeys checks that keys holds every stable key that begins with
// prefix once.
func checkWalksKeys(keys []string, prefix string) error {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			return fmt.Errorf("a walk listed %q twice", k)
		}
		seen[k] = true
	}
	for k := range walksStable {
		if key := walksStableKey(k); key[:len(prefix)] == prefix && !seen[key] {
			return fmt.Errorf("a walk of %q missed %q", prefix, key)
		}
	}
	return nil
}

func init() { helperProcs["walks"] = helperWalks }

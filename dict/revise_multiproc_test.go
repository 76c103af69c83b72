package dict_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// Revise and ReviseInt across processes: re-executions of the test binary
// (TestHelperProcess) change the same keys at once, and are killed while
// they do.

func init() {
	helperProcs["revise-incr"] = helperReviseIncr
	helperProcs["revise-crash"] = helperReviseCrash
}

const (
	reviseProcs = 3
	reviseOps   = 100_000 // per process, half ReviseInt, half Revise
	reviseKeys  = 4       // int keys, and as many state keys
	reviseKills = 60      // SIGKILLs of TestReviseCrash, over two slots
)

func reviseIntKey(k int) string   { return fmt.Sprintf("rint-%d", k) }
func reviseStateKey(k int) string { return fmt.Sprintf("rstate-%d", k) }

// addBoth adds one to both counters of a 16-byte state; the state it gets
// must have them equal, or it reports it in *torn.
func addBoth(torn *error, key string) dict.ReviseFunc {
	return func(s dict.State, _ bool) (dict.State, bool, time.Duration) {
		a, b := s.W0, s.W1
		if a != b && *torn == nil {
			*torn = fmt.Errorf("Revise(%q) gave fn a torn state: %d and %d", key, a, b)
		}
		return dict.State{W0: a + 1, W1: b + 1}, true, 0
	}
}

func addOne(n int64, _ bool) (int64, bool, time.Duration) { return n + 1, true, 0 }

// reviseStep is operation i of a helper: one ReviseInt or Revise increment
// of a key drawn from i.
func reviseStep(d *dict.Dict, i int) error {
	k := (i / 2) % reviseKeys
	if i%2 == 0 {
		if _, err := d.ReviseInt(reviseIntKey(k), addOne); err != nil {
			return fmt.Errorf("ReviseInt(%q) #%d = %w", reviseIntKey(k), i, err)
		}
		return nil
	}
	var torn error
	if _, err := d.Revise(reviseStateKey(k), 16, addBoth(&torn, reviseStateKey(k))); err != nil {
		return fmt.Errorf("Revise(%q) #%d = %w", reviseStateKey(k), i, err)
	}
	return torn
}

// TestReviseMultiProc: reviseProcs processes each make reviseOps
// increments with ReviseInt and Revise on keys absent at first: every key
// ends with every increment, and no fn got a torn state.
func TestReviseMultiProc(t *testing.T) {
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 4 << 20, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	args := make([][]string, reviseProcs)
	for p := range args {
		args[p] = []string{path, strconv.Itoa(reviseOps)}
	}
	elapsed := runGated(t, "revise-incr", args, func(i int, line string) {
		t.Errorf("revise-incr helper %d printed %q", i, line)
	})
	want := int64(reviseProcs * reviseOps / 2 / reviseKeys)
	for k := 0; k < reviseKeys; k++ {
		if v, _, err := d.Get(reviseIntKey(k)); err != nil || v.Kind() != dict.KindInt || v.Int() != want {
			t.Errorf("Get(%q) = %v, %v; want Int %d", reviseIntKey(k), v, err, want)
		}
		v, _, err := d.Get(reviseStateKey(k))
		if err != nil || len(v.Bytes()) != 16 {
			t.Fatalf("Get(%q) = %v, %v; want 16 bytes", reviseStateKey(k), v, err)
		}
		b := v.Bytes()
		if a, c := binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:]); a != uint64(want) || c != uint64(want) {
			t.Errorf("%q holds %d, %d; want %d, %d", reviseStateKey(k), a, c, want, want)
		}
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
	t.Logf("%d processes × %d Revise/ReviseInt in %v", reviseProcs, reviseOps, elapsed)
}

// helperReviseIncr is one process of TestReviseMultiProc: args are the
// zone path and the number of increments.
func helperReviseIncr(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("want path and count, got %q", args)
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	fmt.Println(readyLine)
	if err := testutil.AwaitGate(); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := reviseStep(d, i); err != nil {
			return err
		}
	}
	return nil
}

// TestReviseCrash kills processes that store with Revise and ReviseInt, and
// sometimes delete, so that stores in place and creations under the
// shard's lock are both cut short. Afterwards each state key is absent or
// whole, each int key absent or an int, and the zone passes Check: a
// writer killed mid-write loses at most the entry it wrote, which a
// repair drops (DESIGN.md, section 8, I6). The helpers fail on any error
// and any torn state they meet while they run.
func TestReviseCrash(t *testing.T) {
	seed, kills := testutil.Seed(t), reviseKillsRun()
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 4 << 20, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for slot := range errs {
		wg.Add(1)
		go func(slot int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(slot)))
			for i := 0; i < kills/len(errs) && errs[slot] == nil; i++ {
				cmd := testutil.Helper(t, "revise-crash", path, strconv.FormatUint(r.Uint64(), 10))
				errs[slot] = crashKill(t, cmd, r, 10*time.Millisecond)
			}
		}(slot)
	}
	wg.Wait()
	for slot, err := range errs {
		if err != nil {
			t.Fatalf("revise-crash helper of slot %d: %v", slot, err)
		}
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after %d kills = %v", kills, err)
	}
	for k := 0; k < reviseKeys; k++ {
		checkReviseKey(t, d, k)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after the keys were revised again = %v", err)
	}
	t.Logf("%d kills, %d recoveries", kills, d.Stats().Recoveries)
}

// checkReviseKey checks the keys of number k that TestReviseCrash's
// helpers left, then revises each once more: a whole state, or none.
func checkReviseKey(t *testing.T, d *dict.Dict, k int) {
	t.Helper()
	if v, _, err := d.Get(reviseStateKey(k)); err == nil {
		if err := checkPair(reviseStateKey(k), v.Bytes()); err != nil {
			t.Error(err)
		}
	} else if !errors.Is(err, dict.ErrNotFound) {
		t.Errorf("Get(%q) = %v", reviseStateKey(k), err)
	}
	v, _, err := d.Get(reviseIntKey(k))
	if err != nil && !errors.Is(err, dict.ErrNotFound) || err == nil && v.Kind() != dict.KindInt {
		t.Errorf("Get(%q) = %v, %v; want an Int or ErrNotFound", reviseIntKey(k), v, err)
	}
	var torn error
	if _, err := d.Revise(reviseStateKey(k), 16, addBoth(&torn, reviseStateKey(k))); err != nil || torn != nil {
		t.Errorf("Revise(%q) after the kills = %v (%v)", reviseStateKey(k), err, torn)
	}
	if _, err := d.ReviseInt(reviseIntKey(k), addOne); err != nil {
		t.Errorf("ReviseInt(%q) after the kills = %v", reviseIntKey(k), err)
	}
}

// helperReviseCrash is one process of TestReviseCrash: args are the zone
// path and a seed. It revises and reads the keys, and deletes one now and
// then, until it is killed; it prints readyLine after crashMinOps
// operations. A torn state, in fn or in a read, or any error but a lock
// timeout (a shard held by a process rebuilding it) fails it.
func helperReviseCrash(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("want path and seed, got %q", args)
	}
	seed, err := strconv.ParseUint(args[1], 10, 64)
	if err != nil {
		return err
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, 0))
	for ops := 0; ; ops++ {
		if ops == crashMinOps {
			fmt.Println(readyLine)
		}
		err := reviseCrashStep(d, r)
		if err != nil && !errors.Is(err, dict.ErrLockTimeout) {
			return err
		}
	}
}

// reviseCrashStep is one random operation of helperReviseCrash.
func reviseCrashStep(d *dict.Dict, r *rand.Rand) error {
	k := r.IntN(reviseKeys)
	switch x := r.IntN(32); {
	case x < 2:
		key := reviseIntKey(k)
		if x == 0 {
			key = reviseStateKey(k)
		}
		if err := d.Delete(key); err != nil && !errors.Is(err, dict.ErrNotFound) {
			return fmt.Errorf("Delete(%q) = %w", key, err)
		}
		return nil
	case x < 8:
		v, _, err := d.Get(reviseStateKey(k))
		if errors.Is(err, dict.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("Get(%q) = %w", reviseStateKey(k), err)
		}
		return checkPair(reviseStateKey(k), v.Bytes())
	default:
		return reviseStep(d, r.IntN(2*reviseKeys))
	}
}

// checkPair reports whether a state of two counters is whole: 16 bytes,
// the counters equal.
func checkPair(key string, b []byte) error {
	if len(b) != 16 {
		return fmt.Errorf("state of %q has %d bytes, want 16", key, len(b))
	}
	if a, c := binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:]); a != c {
		return fmt.Errorf("state of %q is torn: %d and %d", key, a, c)
	}
	return nil
}

// reviseKillsRun is the number of kills of a run of TestReviseCrash: fewer
// under the race detector, whose helpers take long to start.
func reviseKillsRun() int {
	if raceEnabled {
		return 12
	}
	return reviseKills
}

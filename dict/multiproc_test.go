package dict_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// Multi-process tests: real OS processes, re-executions of this test binary,
// work on one zone at once, and the test checks the sums they leave behind.

// TestHelperProcess runs the helper processes of this package's
// multi-process tests (multiproc_test.go, crash_test.go, revise_multiproc_test.go,
// crash_evict_test.go, crash_move_test.go, spec_test.go, timeout_test.go, liveness_test.go,
// liveness_hammer_test.go, clock_test.go, readonly_live_test.go,
// optimistic_test.go, size_multiproc_test.go) and
// benchmarks (procs_bench_test.go); in an ordinary test run it does nothing.
func TestHelperProcess(t *testing.T) {
	testutil.RunHelper(helperProcs)
}

// helperProcs are the helpers that TestHelperProcess runs, by name. A file
// built only with a tag adds its helpers in an init.
var helperProcs = map[string]func(args []string) error{
	"incr":         helperIncr,
	"add":          helperAdd,
	"crash-hammer": helperHammer,
	"crash-lock":   helperHoldLock,
	"crash-move":   helperMove,
	"hold-update":  helperHoldUpdate,
	"hold-entry":   helperHoldEntry,
	"wait-incr":    helperWaitIncr,
	"open-hold":    helperOpenHold,
	"ns-hammer":    helperNSHammer,
	"spec-reopen":  dict.HelperSpecReopen,
	"bench-procs":  dict.HelperBenchProcs,
	"fault-incr":   helperFaultIncr,
	"clock-idle":   dict.HelperClockIdle,
	"live-writer":  helperLiveWriter,
	"opt-writer":   helperOptWriter,
	"short-writer": helperShortWriter,
	"replaced":     helperReplacedWriter,
	"size-open":    helperSizeOpen,
}

const (
	mpProcs   = 4
	incrOps   = 200_000 // Incr calls per process
	incrKeys  = 64      // process p's i-th Incr is on key i % incrKeys
	addKeys   = 20_000  // keys every process tries to Add
	readyLine = "ready"
)

func incrKey(i int) string { return fmt.Sprintf("incr-%02d", i) }
func addKey(i int) string  { return fmt.Sprintf("add-%05d", i) }

// runGated starts one helper per args entry, waits until each has printed
// readyLine, lets them all go at once through a gate, and waits for them to
// exit. Every other line of helper i goes to onLine(i, line). It returns the
// time from the gate's opening to the last exit.
func runGated(t *testing.T, name string, args [][]string, onLine func(i int, line string)) time.Duration {
	t.Helper()
	g := testutil.NewGate(t)
	var mu sync.Mutex
	ready := make(chan int, len(args))
	procs := make([]*testutil.Proc, len(args))
	for i, a := range args {
		cmd := testutil.Helper(t, name, a...)
		g.Attach(cmd)
		procs[i] = testutil.Start(t, cmd, func(line string) {
			if line == readyLine {
				ready <- i
				return
			}
			mu.Lock()
			defer mu.Unlock()
			onLine(i, line)
		})
	}
	for range procs {
		select {
		case <-ready:
		case <-time.After(time.Minute):
			t.Fatalf("%s helpers not ready after a minute", name)
		}
	}
	start := time.Now()
	g.Open()
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("%s helper %d: %v", name, i, err)
		}
	}
	return time.Since(start)
}

// TestMultiProcIncr runs mpProcs processes that each call Incr incrOps times
// over incrKeys keys: no increment may be lost or doubled.
func TestMultiProcIncr(t *testing.T) {
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for k := 0; k < incrKeys; k++ {
		if _, err := d.Set(incrKey(k), dict.Int(0), 0, 0); err != nil {
			t.Fatalf("Set(%q, 0) = %v", incrKey(k), err)
		}
	}
	args := make([][]string, mpProcs)
	for p := range args {
		args[p] = []string{path, strconv.Itoa(incrOps)}
	}
	elapsed := runGated(t, "incr", args, func(i int, line string) {
		t.Errorf("incr helper %d printed %q", i, line)
	})

	for k := 0; k < incrKeys; k++ {
		per := incrOps / incrKeys
		if k < incrOps%incrKeys {
			per++
		}
		want := int64(mpProcs * per)
		v, _, err := d.Get(incrKey(k))
		if err != nil || v.Kind() != dict.KindInt || v.Int() != want {
			t.Errorf("Get(%q) = %v, %v, want Int %d", incrKey(k), v, err, want)
		}
	}
	st := d.Stats()
	if st.Evictions != 0 || st.Recoveries != 0 {
		t.Errorf("Stats() evictions %d recoveries %d, want 0 and 0", st.Evictions, st.Recoveries)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
	t.Logf("%d processes × %d Incr in %v (%.0f ops/s), %d lock waits", mpProcs, incrOps, elapsed,
		float64(mpProcs*incrOps)/elapsed.Seconds(), st.LockWaits)
}

// helperIncr is one process of TestMultiProcIncr: args are the zone path and
// the number of Incr calls. The sums it sees on a key must grow, since every
// process only adds.
func helperIncr(args []string) error {
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
	keys := make([]string, incrKeys)
	for k := range keys {
		keys[k] = incrKey(k)
	}
	fmt.Println(readyLine)
	if err := testutil.AwaitGate(); err != nil {
		return err
	}
	return incrInTurn(d, keys, n)
}

// incrInTurn increments keys in turn, n times in all. The sums it sees on
// a key must grow, since every process only adds: one that does not means
// an increment was lost. Any error fails it, ErrLockTimeout (a holder kept
// a lock past the default LockTimeout) included.
func incrInTurn(d *dict.Dict, keys []string, n int) error {
	last := make([]int64, len(keys))
	for i := 0; i < n; i++ {
		k := i % len(keys)
		v, err := d.Incr(keys[k], 1)
		if errors.Is(err, dict.ErrLockTimeout) {
			return fmt.Errorf("Incr(%q, 1) #%d: a holder kept the lock past the default LockTimeout %v: %w",
				keys[k], i, dict.DefaultLockTimeout, err)
		}
		if err != nil {
			return fmt.Errorf("Incr(%q, 1) #%d = %w", keys[k], i, err)
		}
		if v <= last[k] {
			return fmt.Errorf("Incr(%q, 1) #%d = %d after %d: an increment was lost", keys[k], i, v, last[k])
		}
		last[k] = v
	}
	return nil
}

// TestMultiProcAdd runs mpProcs processes that each Add the same addKeys
// keys, with their number as the value: every key is added exactly once, by
// the process whose number it holds.
func TestMultiProcAdd(t *testing.T) {
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	args := make([][]string, mpProcs)
	for p := range args {
		args[p] = []string{path, strconv.Itoa(p), strconv.Itoa(addKeys)}
	}
	added := make([]int, mpProcs)
	reported := make([]bool, mpProcs)
	elapsed := runGated(t, "add", args, func(i int, line string) {
		n, err := strconv.Atoi(strings.TrimPrefix(line, "added "))
		if !strings.HasPrefix(line, "added ") || err != nil || reported[i] {
			t.Errorf("add helper %d printed %q", i, line)
			return
		}
		added[i], reported[i] = n, true
	})

	sum := 0
	for p, n := range added {
		if !reported[p] {
			t.Errorf("add helper %d reported no count", p)
		}
		sum += n
	}
	if sum != addKeys {
		t.Errorf("successful Adds %v sum to %d, want %d", added, sum, addKeys)
	}
	holds := make([]int, mpProcs)
	for i := 0; i < addKeys; i++ {
		v, _, err := d.Get(addKey(i))
		if err != nil || v.Kind() != dict.KindInt || v.Int() < 0 || v.Int() >= mpProcs {
			t.Fatalf("Get(%q) = %v, %v, want an Int from 0 to %d", addKey(i), v, err, mpProcs-1)
		}
		holds[v.Int()]++
	}
	for p := range holds {
		if holds[p] != added[p] {
			t.Errorf("%d keys hold %d, but helper %d reported %d Adds", holds[p], p, p, added[p])
		}
	}
	keys, err := d.Keys(0)
	if err != nil {
		t.Fatalf("Keys(0) = %v", err)
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] || !strings.HasPrefix(k, "add-") {
			t.Errorf("Keys(0) holds %q twice or unexpectedly", k)
		}
		seen[k] = true
	}
	if len(keys) != addKeys {
		t.Errorf("Keys(0) holds %d keys, want %d", len(keys), addKeys)
	}
	if st := d.Stats(); st.Evictions != 0 || st.Entries != addKeys {
		t.Errorf("Stats() evictions %d entries %d, want 0 and %d", st.Evictions, st.Entries, addKeys)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
	t.Logf("%d processes × %d Add in %v; successes per process %v", mpProcs, addKeys, elapsed, added)
}

// helperAdd is one process of TestMultiProcAdd: args are the zone path, the
// process's number and the key count. It prints "added N" for its N
// successful Adds.
func helperAdd(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("want path, id and count, got %q", args)
	}
	id, err1 := strconv.Atoi(args[1])
	n, err2 := strconv.Atoi(args[2])
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = addKey(i)
	}
	fmt.Println(readyLine)
	if err := testutil.AwaitGate(); err != nil {
		return err
	}
	added := 0
	for _, k := range keys {
		forcible, err := d.Add(k, dict.Int(int64(id)), 0, 0)
		switch {
		case err == nil && !forcible:
			added++
		case errors.Is(err, dict.ErrExists):
		default:
			return fmt.Errorf("Add(%q) = %v, %v, want nil or ErrExists without eviction", k, forcible, err)
		}
	}
	fmt.Printf("added %d\n", added)
	return nil
}

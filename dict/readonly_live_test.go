package dict_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// Read-only views of a zone that other processes write: Check, Keys and Scan
// work on a consistent copy of each shard, so that they report only what is
// true however fast the structure changes under them.

const (
	liveZoneSize = 1 << 20 // small, so that writers evict all the time
	liveShards   = 8
	liveKeys     = 4000 // more than the zone holds
	liveReady    = "ready"
	liveMutSize  = 200 // the size of the values that Mutate changes, byte by byte
)

// liveChecks is how many times the test checks through a read-only view
// while the writers run; every liveListEvery-th time it also lists the keys
// and scans the values.
var liveChecks, liveListEvery = 1000, 10

func init() {
	if raceEnabled {
		liveChecks, liveListEvery = 400, 10
	}
}

func liveKey(k int) string { return fmt.Sprintf("live-%04d", k) }

// uniform reports whether every byte of b is b[0]: the writers below store
// only such values, so a torn read shows as bytes of two writes.
func uniform(b []byte) bool { return torn(b) < 0 }

// torn returns the index of the first byte of b that is not b[0], or -1.
func torn(b []byte) int {
	for i, c := range b {
		if c != b[0] {
			return i
		}
	}
	return -1
}

// fill returns n bytes of c.
func fill(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

// TestReadOnlyLiveZone runs two processes that write a small zone as fast as
// they can (sets of changing sizes, adds, deletes, increments, Mutate, list
// pushes and pops, with evictions and expirations all the time), while this
// process checks the zone through a read-only view liveChecks times and lists
// and scans it now and then: every Check must pass, every Keys and Scan must
// succeed without listing a key twice, and every bytes value Scan reports
// must be one whole write (never torn). Once the writers stop, a writable
// Check passes too.
func TestReadOnlyLiveZone(t *testing.T) {
	seed := testutil.Seed(t)
	path := testutil.TempZone(t)
	w, err := dict.Open(path, dict.Options{Size: liveZoneSize, Shards: liveShards})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ro, err := dict.Open(path, dict.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()

	const writers = 2
	g := testutil.NewGate(t) // opened, it tells the writers to stop
	ready := make(chan int, writers)
	var ops [writers]atomic.Int64
	procs := make([]*testutil.Proc, writers)
	for i := range procs {
		cmd := testutil.Helper(t, "live-writer", path, strconv.FormatUint(seed, 10), strconv.Itoa(i))
		g.Attach(cmd)
		procs[i] = testutil.Start(t, cmd, func(line string) {
			if line == liveReady {
				ready <- i
				return
			}
			n, err := strconv.ParseInt(line, 10, 64)
			if err != nil {
				t.Errorf("writer %d printed %q", i, line)
				return
			}
			ops[i].Store(n)
		})
	}
	died := make(chan int, writers)
	for i, p := range procs {
		go func() { <-p.Done(); died <- i }()
	}
	for range procs {
		select {
		case <-ready:
		case i := <-died:
			t.Fatalf("writer %d ended before it was ready: %v", i, procs[i].Wait())
		case <-time.After(timeoutHang):
			t.Fatalf("writers not ready after %v", timeoutHang)
		}
	}

	start := time.Now()
	var scanned, listed int
	for n := 0; n < liveChecks; n++ {
		select {
		case i := <-died:
			t.Fatalf("writer %d ended while the zone was checked: %v", i, procs[i].Wait())
		default:
		}
		if err := ro.Check(); err != nil {
			t.Fatalf("read-only Check #%d = %v", n, err)
		}
		if n%liveListEvery != 0 {
			continue
		}
		keys, err := ro.Keys(0)
		if err != nil {
			t.Fatalf("read-only Keys(0) #%d = %v", n, err)
		}
		seen := make(map[string]bool, len(keys))
		for _, k := range keys {
			if seen[k] {
				t.Fatalf("read-only Keys(0) #%d lists %q twice", n, k)
			}
			seen[k] = true
		}
		listed += len(keys)
		clear(seen)
		err = ro.Scan(func(it dict.Item) bool {
			if seen[it.Key] {
				t.Fatalf("read-only Scan #%d reports %q twice", n, it.Key)
			}
			seen[it.Key] = true
			if b := it.Value.Bytes(); it.Value.Kind() == dict.KindBytes && torn(b) >= 0 {
				i := torn(b)
				t.Fatalf("read-only Scan #%d: %q holds %d bytes %#x then %#x from byte %d on: bytes of two writes",
					n, it.Key, len(b), b[0], b[i], i)
			}
			for _, e := range it.List {
				if e.Kind() != dict.KindBytes || !uniform(e.Bytes()) {
					t.Fatalf("read-only Scan #%d: list %q holds %v", n, it.Key, e)
				}
			}
			scanned++
			return true
		})
		if err != nil {
			t.Fatalf("read-only Scan #%d = %v", n, err)
		}
	}
	checking := time.Since(start)

	g.Open()
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	st := w.Stats()
	for i := range ops {
		if ops[i].Load() == 0 {
			t.Errorf("writer %d reports no operations", i)
		}
	}
	if st.Evictions == 0 {
		t.Errorf("Stats().Evictions = 0: the writers never filled the zone")
	}
	if listed == 0 || scanned == 0 {
		t.Errorf("Keys listed %d keys and Scan reported %d in all: the zone looked empty", listed, scanned)
	}
	if err := w.Check(); err != nil {
		t.Fatalf("writable Check() after the writers = %v", err)
	}
	if err := ro.Check(); err != nil {
		t.Fatalf("read-only Check() after the writers = %v", err)
	}
	t.Logf("%d read-only checks in %v while writers made %d and %d operations; %d evictions, %d recoveries",
		liveChecks, checking, ops[0].Load(), ops[1].Load(), st.Evictions, st.Recoveries)
}

// helperLiveWriter is one writer of TestReadOnlyLiveZone: args are the zone
// path, the test's seed and the writer's stream. It writes at random until
// its stdin closes, prints liveReady once the zone is full, and at the end
// the number of operations it made. Errors a full zone or another writer
// explains (ErrNoMemory, ErrExists, ErrNotFound, ErrWrongShape,
// ErrNotNumber, ErrNotList, ErrIsList) are normal; any other error fails it.
func helperLiveWriter(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("want path, seed and stream, got %q", args)
	}
	seed, err1 := strconv.ParseUint(args[1], 10, 64)
	stream, err2 := strconv.ParseUint(args[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	var stop atomic.Bool
	go func() {
		testutil.AwaitGate()
		stop.Store(true)
	}()
	r := rand.New(rand.NewPCG(seed, stream))
	n := int64(0)
	for ; !stop.Load(); n++ {
		if n == 20_000 {
			fmt.Println(liveReady)
		}
		if err := liveOp(d, r); err != nil {
			return fmt.Errorf("operation %d: %w", n, err)
		}
	}
	if n < 20_000 {
		fmt.Println(liveReady) // stopped early: let the test see the count
	}
	fmt.Println(n)
	return nil
}

// liveOp makes one random write. A key's number picks what it holds: bytes,
// a counter, a Mutate state, or a list.
func liveOp(d *dict.Dict, r *rand.Rand) error {
	k := r.IntN(liveKeys)
	key := liveKey(k)
	c := byte(1 + r.IntN(255))
	var ttl time.Duration
	if r.IntN(10) == 0 {
		ttl = time.Duration(1+r.IntN(50)) * time.Millisecond
	}
	var err error
	switch x := r.IntN(100); {
	case x < 8:
		err = d.Delete(key)
	case k%4 == 0: // bytes of changing sizes
		v := dict.Bytes(fill(c, 1+r.IntN(400)))
		if x < 30 {
			_, err = d.Add(key, v, ttl, uint32(x))
		} else {
			_, err = d.Set(key, v, ttl, uint32(x))
		}
	case k%4 == 1: // a counter
		if _, err = d.Incr(key, 1); errors.Is(err, dict.ErrNotFound) {
			_, err = d.Set(key, dict.Int(0), ttl, 0)
		}
	case k%4 == 2: // a Mutate state, one byte repeated, written byte by byte
		err = d.Mutate(key, liveMutSize, ttl, func(b []byte, found bool) bool {
			if i := torn(b); i >= 0 {
				panic(fmt.Sprintf("Mutate(%q) found %#x then %#x from byte %d on", key, b[0], b[i], i))
			}
			for i := range b {
				b[i] = c
			}
			return true
		})
	default: // a list
		if x < 60 {
			_, err = d.LPush(key, dict.Bytes(fill(c, 1+r.IntN(40))))
		} else {
			_, err = d.RPop(key)
		}
	}
	for _, ok := range []error{dict.ErrNoMemory, dict.ErrExists, dict.ErrNotFound, dict.ErrWrongShape,
		dict.ErrNotNumber, dict.ErrNotList, dict.ErrIsList} {
		if errors.Is(err, ok) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("%q: %w", key, err)
	}
	return nil
}

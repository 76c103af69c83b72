package dict

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// Tests of Revise and ReviseInt against their doc (revise.go): what fn is
// given and what a store leaves, the shapes and errors refused, and a
// rejection that takes no lock and writes nothing. The concurrent and
// multi-process tests are in revise_race_test.go and
// revise_multiproc_test.go.

// pair returns a State of two little-endian counters, a and b.
func pair(a, b uint64) State { return State{W0: a, W1: b} }

// bytesOf returns the first n bytes of s, as the zone stores them.
func bytesOf(s State, n int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, s.W0)
	b = binary.LittleEndian.AppendUint64(b, s.W1)
	b = binary.LittleEndian.AppendUint64(b, s.W2)
	return binary.LittleEndian.AppendUint64(b, s.W3)[:n]
}

// counters returns the two counters of a 16-byte state.
func counters(b []byte) (uint64, uint64) {
	return binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:16])
}

// incBoth is a ReviseFunc that adds one to both counters of a state.
func incBoth(s State, _ bool) (State, bool, time.Duration) {
	return pair(s.W0+1, s.W1+1), true, 0
}

// fnCall records the calls of a ReviseFunc that returns what it is told.
type fnCall struct {
	calls int
	seen  State
	found bool
	next  State
	store bool
	ttl   time.Duration
}

func (f *fnCall) fn(s State, found bool) (State, bool, time.Duration) {
	f.calls++
	f.seen, f.found = s, found
	return f.next, f.store, f.ttl
}

// reviseCase is one row of TestReviseSemantics: the key "k" as setup
// leaves it, a Revise of size with fn returning next, store and ttl, and
// what must follow.
type reviseCase struct {
	name  string
	setup func(t *testing.T, d *Dict, c *testutil.Clock)
	size  int
	next  State
	store bool
	ttl   time.Duration
	calls int   // calls of fn, at least
	seen  State // what fn must get
	found bool
	err   error
	check func(t *testing.T, d *Dict, c *testutil.Clock)
}

var (
	state16 = pair(3, 3)
	bytes16 = Bytes([]byte{3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0}) // state16's bytes
	ones    = State{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
)

// setState16 sets "k" to state16 with a TTL of a minute and flags 7.
func setState16(t *testing.T, d *Dict, _ *testutil.Clock) {
	specSet(t, d, "k", bytes16, time.Minute, 7)
}

// setExpired sets "k" to state16 with a TTL of a second, then lets it
// expire.
func setExpired(t *testing.T, d *Dict, c *testutil.Clock) {
	specSet(t, d, "k", bytes16, time.Second, 7)
	c.Advance(time.Second)
}

// wantTTL fails unless key's TTL is want.
func wantTTL(t *testing.T, d *Dict, key string, want time.Duration) {
	t.Helper()
	if ttl, err := d.TTL(key); ttl != want || err != nil {
		t.Fatalf("TTL(%q) = %v, %v; want %v", key, ttl, err, want)
	}
}

// absentCases are the rows of an absent or expired key.
func absentCases() []reviseCase {
	return []reviseCase{
		{name: "absent/reject", size: 16, next: pair(1, 1), calls: 1,
			check: func(t *testing.T, d *Dict, _ *testutil.Clock) { wantGetErr(t, d, "k", ErrNotFound) }},
		{name: "absent/store no TTL", size: 16, next: pair(1, 1), store: true, calls: 1,
			check: func(t *testing.T, d *Dict, _ *testutil.Clock) {
				wantGet(t, d, "k", Bytes(b16(pair(1, 1))), 0)
				wantTTL(t, d, "k", 0)
			}},
		{name: "absent/store TTL", size: 16, next: pair(1, 1), store: true, ttl: 5 * time.Second, calls: 1,
			check: func(t *testing.T, d *Dict, c *testutil.Clock) {
				wantTTL(t, d, "k", 5*time.Second)
				c.Advance(5 * time.Second)
				wantGetErr(t, d, "k", ErrNotFound)
			}},
		{name: "absent/next beyond size ignored", size: 8, next: ones, store: true, calls: 1,
			check: func(t *testing.T, d *Dict, _ *testutil.Clock) {
				wantGet(t, d, "k", Bytes(bytesOf(ones, 8)), 0)
			}},
		{name: "absent/negative TTL", size: 16, next: pair(1, 1), store: true, ttl: -time.Second, calls: 1, err: ErrBadTTL,
			check: func(t *testing.T, d *Dict, _ *testutil.Clock) { wantGetErr(t, d, "k", ErrNotFound) }},
		{name: "expired/reject", setup: setExpired, size: 16, next: pair(1, 1), calls: 1,
			check: func(t *testing.T, d *Dict, _ *testutil.Clock) { wantGetErr(t, d, "k", ErrNotFound) }},
		{name: "expired/store", setup: setExpired, size: 16, next: pair(1, 1), store: true, calls: 1,
			check: func(t *testing.T, d *Dict, _ *testutil.Clock) {
				wantGet(t, d, "k", Bytes(b16(pair(1, 1))), 0) // a new entry: flags 0
				wantTTL(t, d, "k", 0)
			}},
	}
}

// b16 returns the first 16 bytes of s.
func b16(s State) []byte { return bytesOf(s, 16) }

// liveCases are the rows of a live key: "k" holds state16, a TTL of a
// minute and flags 7.
func liveCases() []reviseCase {
	unchanged := func(t *testing.T, d *Dict, _ *testutil.Clock) {
		wantGet(t, d, "k", bytes16, 7)
		wantTTL(t, d, "k", time.Minute)
	}
	return []reviseCase{
		{name: "live/reject", setup: setState16, size: 16, next: pair(9, 9), calls: 1, seen: state16, found: true, check: unchanged},
		{name: "live/reject negative TTL", setup: setState16, size: 16, next: pair(9, 9), ttl: -time.Second, calls: 1, seen: state16, found: true, check: unchanged},
		{name: "live/store keeps TTL and flags", setup: setState16, size: 16, next: pair(4, 4), store: true, calls: 1, seen: state16, found: true,
			check: func(t *testing.T, d *Dict, _ *testutil.Clock) {
				wantGet(t, d, "k", Bytes(b16(pair(4, 4))), 7)
				wantTTL(t, d, "k", time.Minute)
			}},
		{name: "live/store sets TTL", setup: setState16, size: 16, next: pair(4, 4), store: true, ttl: 10 * time.Second, calls: 1, seen: state16, found: true,
			check: func(t *testing.T, d *Dict, c *testutil.Clock) {
				wantGet(t, d, "k", Bytes(b16(pair(4, 4))), 7)
				wantTTL(t, d, "k", 10*time.Second)
				c.Advance(10 * time.Second)
				wantGetErr(t, d, "k", ErrNotFound)
			}},
		{name: "live/negative TTL", setup: setState16, size: 16, next: pair(4, 4), store: true, ttl: -time.Second, calls: 1, seen: state16, found: true,
			err: ErrBadTTL, check: unchanged},
		{name: "live/next beyond size ignored", size: 8, next: ones, store: true, calls: 1, found: true,
			setup: func(t *testing.T, d *Dict, _ *testutil.Clock) {
				specSet(t, d, "k", Bytes([]byte{1, 2, 3, 4, 0, 0, 0, 0}), 0, 0)
			},
			seen: State{W0: 0x04030201},
			check: func(t *testing.T, d *Dict, _ *testutil.Clock) {
				wantGet(t, d, "k", Bytes(bytesOf(ones, 8)), 0)
			}},
	}
}

// refusedCases are the rows Revise refuses without calling fn.
func refusedCases() []reviseCase {
	var rows []reviseCase
	for _, v := range []Value{Bytes(make([]byte, 17)), Bytes(make([]byte, 8)), String("fifteen bytes!!"), Int(5), Float(0.5), Bool(true)} {
		v := v
		rows = append(rows, reviseCase{name: "shape/" + v.Kind().String(), size: 16, store: true, err: ErrWrongShape,
			setup: func(t *testing.T, d *Dict, _ *testutil.Clock) { specSet(t, d, "k", v, 0, 3) },
			check: func(t *testing.T, d *Dict, _ *testutil.Clock) { wantGet(t, d, "k", v, 3) }})
	}
	rows = append(rows, reviseCase{name: "shape/list", size: 16, store: true, err: ErrWrongShape,
		setup: func(t *testing.T, d *Dict, _ *testutil.Clock) {
			if _, err := d.LPush("k", Int(1)); err != nil {
				t.Fatal(err)
			}
		},
		check: func(t *testing.T, d *Dict, _ *testutil.Clock) {
			if n, err := d.LLen("k"); n != 1 || err != nil {
				t.Fatalf("LLen(k) = %d, %v; want 1", n, err)
			}
		}})
	for _, size := range []int{0, -1, 4, 12, MaxStateSize + 1, MaxStateSize + 8} {
		rows = append(rows, reviseCase{name: fmt.Sprintf("size/%d", size), size: size, store: true, err: ErrBadValue,
			setup: setState16, check: func(t *testing.T, d *Dict, _ *testutil.Clock) { wantGet(t, d, "k", bytes16, 7) }})
	}
	return rows
}

// TestReviseSemantics checks, row by row, what fn is given, what a store
// or a rejection leaves under "k", and the errors Revise returns.
func TestReviseSemantics(t *testing.T) {
	rows := append(append(absentCases(), liveCases()...), refusedCases()...)
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			d, c := openTest(t, Options{Shards: 1})
			if tc.setup != nil {
				tc.setup(t, d, c)
			}
			f := &fnCall{next: tc.next, store: tc.store, ttl: tc.ttl}
			_, err := d.Revise("k", tc.size, f.fn)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("Revise = %v, want %v", err, tc.err)
			}
			switch {
			case tc.calls == 0 && f.calls != 0:
				t.Fatalf("fn called %d times, want none", f.calls)
			case tc.calls > 0 && f.calls < tc.calls:
				t.Fatalf("fn called %d times, want at least %d", f.calls, tc.calls)
			case tc.calls > 0 && (f.seen != tc.seen || f.found != tc.found):
				t.Fatalf("fn got %x, %v; want %x, %v", f.seen, f.found, tc.seen, tc.found)
			}
			tc.check(t, d, c)
		})
	}
}

// TestReviseKeyErrors: the keys the Dict refuses are refused by Revise and
// ReviseInt with its errors, without calling fn.
func TestReviseKeyErrors(t *testing.T) {
	d, _ := openTest(t, Options{Shards: 1})
	for _, k := range []struct {
		key  string
		want error
	}{{"", ErrEmptyKey}, {strings.Repeat("k", MaxKeyLen+1), ErrKeyTooLong}} {
		f := &fnCall{store: true}
		if _, err := d.Revise(k.key, 16, f.fn); !errors.Is(err, k.want) {
			t.Errorf("Revise(%q) = %v, want %v", short(k.key), err, k.want)
		}
		intFn := func(n int64, _ bool) (int64, bool, time.Duration) { f.calls++; return n, true, 0 }
		if _, err := d.ReviseInt(k.key, intFn); !errors.Is(err, k.want) {
			t.Errorf("ReviseInt(%q) = %v, want %v", short(k.key), err, k.want)
		}
		if f.calls != 0 {
			t.Errorf("fn called %d times for key %q, want none", f.calls, short(k.key))
		}
	}
}

// reviseInt calls ReviseInt on key with an fn that records what it gets
// and returns next, store; it fails the test on an error.
func reviseInt(t *testing.T, d *Dict, key string, next int64, store bool) (got int64, found bool) {
	t.Helper()
	_, err := d.ReviseInt(key, func(n int64, f bool) (int64, bool, time.Duration) {
		got, found = n, f
		return next, store, 0
	})
	if err != nil {
		t.Fatalf("ReviseInt(%q, -> %d, %v) = %v", key, next, store, err)
	}
	return got, found
}

// TestReviseInt: numbers go round whole, negative and big; an int that
// Set or Incr wrote is what fn gets, and Incr adds to what ReviseInt
// stored. Other shapes are refused without calling fn.
func TestReviseInt(t *testing.T) {
	d, _ := openTest(t, Options{Shards: 1})
	if got, found := reviseInt(t, d, "n", 5, false); got != 0 || found {
		t.Fatalf("ReviseInt(absent) gave fn %d, %v; want 0, false", got, found)
	}
	wantGetErr(t, d, "n", ErrNotFound)
	prev := int64(0)
	for i, n := range []int64{-1, 1 << 40, -(1 << 62), 9223372036854775807, -9223372036854775808, 0} {
		if got, found := reviseInt(t, d, "n", n, true); got != prev || found != (i > 0) {
			t.Fatalf("ReviseInt #%d gave fn %d, %v; want %d, %v", i, got, found, prev, i > 0)
		}
		wantGet(t, d, "n", Int(n), 0)
		prev = n
	}
	specSet(t, d, "n", Int(-7), 0, 2)
	if got, found := reviseInt(t, d, "n", -7, false); got != -7 || !found {
		t.Fatalf("ReviseInt after Set(-7) gave fn %d, %v", got, found)
	}
	if _, err := d.Incr("n", 5); err != nil {
		t.Fatal(err)
	}
	if got, _ := reviseInt(t, d, "n", 100, true); got != -2 {
		t.Fatalf("ReviseInt after Incr gave fn %d, want -2", got)
	}
	if n, err := d.Incr("n", 1); n != 101 || err != nil {
		t.Fatalf("Incr after ReviseInt = %d, %v; want 101", n, err)
	}
	wantGet(t, d, "n", Int(101), 2)
	for _, v := range []Value{Bytes(make([]byte, 8)), Float(1), Bool(true), String("x")} {
		specSet(t, d, "o", v, 0, 1)
		called := false
		_, err := d.ReviseInt("o", func(n int64, _ bool) (int64, bool, time.Duration) { called = true; return n, true, 0 })
		if !errors.Is(err, ErrWrongShape) || called {
			t.Fatalf("ReviseInt over %v = %v, fn called %v; want ErrWrongShape, not called", v.Kind(), err, called)
		}
		wantGet(t, d, "o", v, 1)
	}
}

// entryWords returns key's entry's Ver and page lock words, and the Seq of
// its shard.
func entryWords(t *testing.T, d *Dict, key string) (ver, page, seq uint64) {
	t.Helper()
	ver, ok := EntryVer(d, key)
	page, ok2 := PageWord(d, key)
	if !ok || !ok2 {
		t.Fatalf("%q has no entry", key)
	}
	return ver, page, ShardSeq(d, ShardOf(d, key))
}

// TestReviseRejectTakesNoLock: a rejection of a live key, by Revise and
// by ReviseInt, decides while the test holds the key's shard lock and its
// entry's page lock, and leaves the entry's Ver, its page's lock word,
// the shard's Seq, the value and its TTL as they were. A rejection that
// took either lock would wait for it and fail with ErrLockTimeout; one
// that wrote would move Ver or Seq.
func TestReviseRejectTakesNoLock(t *testing.T) {
	d, _ := openTest(t, Options{Shards: 1, LockTimeout: 20 * time.Millisecond})
	specSet(t, d, "k", bytes16, time.Minute, 7)
	specSet(t, d, "n", Int(-3), time.Minute, 5)
	for _, key := range []string{"k", "n"} {
		writes := d.Stats().Writes
		releaseShard := HoldShardWord(d, 0)
		releasePage := HoldPage(d, key)
		if releasePage == nil {
			t.Fatalf("HoldPage(%q) failed", key)
		}
		ver, page, seq := entryWords(t, d, key)
		var err error
		f := &fnCall{next: pair(1, 2)}
		if key == "k" {
			_, err = d.Revise(key, 16, f.fn)
		} else {
			_, err = d.ReviseInt(key, func(n int64, found bool) (int64, bool, time.Duration) {
				f.calls++
				f.found = found
				binaryPut(&f.seen, n)
				return 42, false, 0
			})
		}
		ver2, page2, seq2 := entryWords(t, d, key)
		releasePage()
		releaseShard()
		if err != nil || f.calls != 1 || !f.found {
			t.Fatalf("%q: rejection with the locks held = %v, fn called %d times (found %v); want nil, once, found", key, err, f.calls, f.found)
		}
		if ver2 != ver || page2 != page || seq2 != seq {
			t.Fatalf("%q: rejection moved Ver %#x -> %#x, page word %#x -> %#x, Seq %d -> %d", key, ver, ver2, page, page2, seq, seq2)
		}
		if w := d.Stats().Writes; w != writes {
			t.Fatalf("%q: Stats().Writes %d -> %d after a rejection", key, writes, w)
		}
	}
	f := &fnCall{}
	if _, err := d.Revise("k", 16, f.fn); err != nil || f.seen != state16 {
		t.Fatalf("Revise after the rejections = %v, gave fn %x; want nil, %x", err, f.seen, state16)
	}
	// The witness: a store in place moves Ver (odd while it writes).
	ver, _, _ := entryWords(t, d, "k")
	if _, err := d.Revise("k", 16, func(State, bool) (State, bool, time.Duration) { return state16, true, 0 }); err != nil {
		t.Fatal(err)
	}
	if ver2, _, _ := entryWords(t, d, "k"); ver2 == ver {
		t.Fatalf("Ver %#x unchanged by a store in place", ver)
	}
	wantGet(t, d, "k", bytes16, 7)
	wantGet(t, d, "n", Int(-3), 5)
	wantTTL(t, d, "k", time.Minute)
	wantTTL(t, d, "n", time.Minute)
}

// binaryPut stores n in s as ReviseInt's fn gets it.
func binaryPut(s *State, n int64) { s.W0 = uint64(n) }

// TestReviseStoreWaitsForPage: a store into a live key takes its entry's
// page lock. With the page held by the test, Revise in another goroutine
// cannot store: it gives up its lock-free tries and waits under the
// shard's lock (Seq odd) for the page. The test sees it waiting, then
// releases the page; only then does the store land, once, on the value fn
// was given.
func TestReviseStoreWaitsForPage(t *testing.T) {
	d, _ := openTest(t, Options{Shards: 1, LockTimeout: time.Minute})
	specSet(t, d, "k", bytes16, 0, 7)
	hold := HoldPage(d, "k")
	if hold == nil {
		t.Fatal("HoldPage(k) failed")
	}
	var once sync.Once
	release := func() { once.Do(hold) }
	t.Cleanup(release) // before the zone's Check, on a failure
	var released, doneEarly atomic.Bool
	done := make(chan error, 1)
	go func() {
		_, err := d.Revise("k", 16, incBoth)
		doneEarly.Store(!released.Load())
		done <- err
	}()
	deadline := time.Now().Add(time.Minute) // a bound on a hang, not a timing
	for ShardSeq(d, 0)&1 == 0 {
		select {
		case err := <-done:
			t.Fatalf("Revise stored (%v) while the test held the entry's page lock", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Revise neither stored nor waited for the page under the shard's lock")
		}
		runtime.Gosched()
	}
	released.Store(true)
	release()
	if err := <-done; err != nil {
		t.Fatalf("Revise after the page was released = %v", err)
	}
	if doneEarly.Load() {
		t.Fatal("Revise returned before the page was released")
	}
	wantGet(t, d, "k", Bytes(b16(pair(4, 4))), 7)
}

// TestReviseRejectExpiredTakesNoLock: a key that expired is absent to
// Revise; a rejection of it, as of an absent key, takes no lock and
// writes nothing: with the shard's lock held it decides at once, and the
// stale value is still there for GetStale. So does the rejection of an
// absent key.
func TestReviseRejectExpiredTakesNoLock(t *testing.T) {
	d, c := openTest(t, Options{Shards: 1, LockTimeout: 20 * time.Millisecond})
	specSet(t, d, "k", bytes16, time.Second, 7)
	c.Advance(time.Second)
	ver, _ := EntryVer(d, "k")
	release := HoldShardWord(d, 0)
	f := &fnCall{next: pair(1, 1)}
	_, err := d.Revise("k", 16, f.fn)
	ver2, ok := EntryVer(d, "k")
	release()
	if err != nil || f.calls != 1 || f.found || f.seen != (State{}) {
		t.Fatalf("Revise(expired, reject) with the shard's lock held = %v, fn called %d times with %x, %v; want nil, once, zeros, false",
			err, f.calls, f.seen, f.found)
	}
	if !ok || ver2 != ver {
		t.Fatalf("Revise(expired, reject) changed the entry: Ver %#x -> %#x (still there %v)", ver, ver2, ok)
	}
	if v, _, stale, err := d.GetStale("k"); err != nil || !stale || !v.Equal(bytes16) {
		t.Fatalf("GetStale(k) after a rejection = %v, %v, %v; want the stale value", v, stale, err)
	}
	// An absent key likewise.
	release = HoldShardWord(d, 0)
	f = &fnCall{next: pair(1, 1)}
	_, err = d.Revise("absent", 16, f.fn)
	release()
	if err != nil || f.calls != 1 || f.found {
		t.Fatalf("Revise(absent, reject) with the shard's lock held = %v, fn called %d times (found %v); want nil, once", err, f.calls, f.found)
	}
	wantGetErr(t, d, "absent", ErrNotFound)
}

// TestReviseStoreRechecksKind: a value replaced, between fn's read and the
// store, by one of another kind in the same bytes (an int over 8 bytes, a
// float over an int) is not the value fn was given: the store must not
// land in it. Another goroutine replaces the value while fn runs on its
// first, lock-free, copy; Revise must then refuse the new shape with
// ErrWrongShape and leave it as it is.
func TestReviseStoreRechecksKind(t *testing.T) {
	const n = int64(0x0102030405060708)
	var nb [8]byte
	binary.NativeEndian.PutUint64(nb[:], uint64(n))
	rows := []struct {
		name        string
		before, now Value
		revise      func(d *Dict, fn ReviseFunc) error
	}{
		{"Revise, bytes then int", Bytes(nb[:]), Int(n), func(d *Dict, fn ReviseFunc) error {
			_, err := d.Revise("k", 8, fn)
			return err
		}},
		{"ReviseInt, int then float", Int(n), Float(math.Float64frombits(uint64(n))), func(d *Dict, fn ReviseFunc) error {
			_, err := d.ReviseInt("k", func(m int64, found bool) (int64, bool, time.Duration) {
				var s State
				binaryPut(&s, m)
				next, store, ttl := fn(s, found)
				return int64(next.W0), store, ttl
			})
			return err
		}},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := openTest(t, Options{Shards: 1})
			specSet(t, d, "k", tc.before, 0, 0)
			calls := 0
			fn := func(s State, found bool) (State, bool, time.Duration) {
				if calls++; calls == 1 {
					done := make(chan error)
					go func() { _, err := d.Set("k", tc.now, 0, 0); done <- err }()
					if err := <-done; err != nil {
						t.Errorf("Set(k, %v) while fn ran = %v", tc.now.Kind(), err)
					}
				}
				return pair(0xdead, 0xbeef), true, 0
			}
			err := tc.revise(d, fn)
			if !errors.Is(err, ErrWrongShape) {
				t.Errorf("Revise after the value became %v = %v (fn called %d times), want ErrWrongShape", tc.now.Kind(), err, calls)
			}
			wantGet(t, d, "k", tc.now, 0)
		})
	}
}

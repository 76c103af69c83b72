package dict_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

const (
	crashDefaultKills = 400                   // SIGKILLs per run; SHMZONE_CRASH_KILLS overrides
	crashSlots        = 4                     // helpers hammering at once
	crashMaxDelay     = 20 * time.Millisecond // a helper is killed 0..crashMaxDelay after it is ready
	crashCounters     = 64                    // keys only incremented
	crashValues       = 128                   // keys set, added, replaced, deleted and read
	crashLists        = 8                     // keys pushed and popped
	crashListMax      = 64                    // a helper pops rather than pushes past this length
	crashMaxValue     = 12 << 10              // largest value: three pages, a page run
	crashShards       = 4
	// crashZoneSize holds everything the helpers can write, about 2 MiB at
	// most, many times over: an eviction could legitimately lose a counter.
	crashZoneSize = 32 << 20
)

func crashCounterKey(k int) string { return fmt.Sprintf("ctr-%02d", k) }
func crashValueKey(k int) string   { return fmt.Sprintf("val-%03d", k) }
func crashListKey(k int) string    { return fmt.Sprintf("list-%d", k) }

// An ack file is a helper's record of what it has done, written through a
// shared mapping, so that every store made before a SIGKILL is in the file
// afterwards. Words of 8 bytes, native order:
//
//	0          8      16
//	+----------+------+------------------------------+
//	| inflight | ops  | acked [crashCounters]uint64  |
//	+----------+------+------------------------------+
//
// inflight is 1 + the counter being incremented, 0 between increments: the
// helper sets it before Incr and clears it after it has counted the
// increment in acked.
const (
	ackInflight = 0
	ackOps      = 8
	ackCounts   = 16
	ackSize     = ackCounts + 8*crashCounters
)

// crashValue returns the n-byte value of key: a header naming the key and
// the length, then a filler byte derived from the length, so that a torn or
// misplaced value is recognised. n is raised to the header's length.
func crashValue(key string, n int) []byte {
	b := fmt.Appendf(nil, "%s/%d/", key, n)
	for len(b) < n {
		b = append(b, byte('a'+n%26))
	}
	return b
}

// checkCrashValue reports whether v is a whole value written for key.
func checkCrashValue(key string, v []byte) error {
	rest, ok := strings.CutPrefix(string(v), key+"/")
	if !ok {
		return fmt.Errorf("value of %q starts %q", key, v[:min(len(v), 40)])
	}
	ns, _, ok := strings.Cut(rest, "/")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil {
		return fmt.Errorf("value of %q has no length: %q", key, v[:min(len(v), 40)])
	}
	if want := crashValue(key, n); string(v) != string(want) {
		return fmt.Errorf("value of %q: %d bytes differ from the %d written", key, len(v), len(want))
	}
	return nil
}

// crashValueSize picks a value size: mostly small, some of several slab
// classes, a few page runs.
func crashValueSize(r *rand.Rand) int {
	switch x := r.IntN(10); {
	case x < 6:
		return 1 + r.IntN(64)
	case x < 9:
		return 64 + r.IntN(2000)
	default:
		return 2048 + r.IntN(crashMaxValue-2048)
	}
}

// crashKills returns the number of kills a run makes.
func crashKills(t *testing.T) int {
	n := crashDefaultKills
	if s := os.Getenv("SHMZONE_CRASH_KILLS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("SHMZONE_CRASH_KILLS=%q: want a positive number", s)
		}
		n = v
	}
	return n
}

// crashTally sums what the killed helpers acknowledged.
type crashTally struct {
	kills    int
	ops      uint64
	acked    [crashCounters]uint64
	inflight [crashCounters]uint64
}

func (c *crashTally) add(o *crashTally) {
	c.kills += o.kills
	c.ops += o.ops
	for k := range c.acked {
		c.acked[k] += o.acked[k]
		c.inflight[k] += o.inflight[k]
	}
}

// readAck adds a dead helper's ack file to c.
func (c *crashTally) readAck(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) != ackSize {
		return fmt.Errorf("ack file %s has %d bytes, want %d", path, len(b), ackSize)
	}
	word := func(off int) uint64 { return binary.NativeEndian.Uint64(b[off:]) }
	if f := word(ackInflight); f != 0 {
		if f > crashCounters {
			return fmt.Errorf("ack file %s: in flight %d", path, f)
		}
		c.inflight[f-1]++
	}
	c.ops += word(ackOps)
	for k := range c.acked {
		c.acked[k] += word(ackCounts + 8*k)
	}
	return nil
}

// TestCrashKill kills hammering helpers at random moments, crashKills times,
// then checks that the zone is whole and no acknowledged increment is lost.
func TestCrashKill(t *testing.T) {
	kills := crashKills(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SHMZONE_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SHMZONE_CRASH_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (SHMZONE_CRASH_SEED), %d kills (SHMZONE_CRASH_KILLS)", seed, kills)

	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: crashZoneSize, Shards: crashShards})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for k := 0; k < crashCounters; k++ {
		if _, err := d.Set(crashCounterKey(k), dict.Int(0), 0, 0); err != nil {
			t.Fatalf("Set(%q, 0) = %v", crashCounterKey(k), err)
		}
	}

	dir := t.TempDir()
	start := time.Now()
	var (
		started atomic.Int64 // helpers started, each to be killed
		failed  atomic.Bool
		mu      sync.Mutex
		total   crashTally
		wg      sync.WaitGroup
	)
	for slot := 0; slot < crashSlots; slot++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(slot)))
			var mine crashTally
			defer func() {
				mu.Lock()
				total.add(&mine)
				mu.Unlock()
			}()
			for !failed.Load() {
				n := started.Add(1)
				if n > int64(kills) {
					return
				}
				if err := crashOnce(t, path, dir, int(n), seed+uint64(n), r, &mine); err != nil {
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
	hammered := time.Since(start)

	// Stats locks every shard: one whose lock a killed helper held is taken
	// over and rebuilt here.
	st := d.Stats()
	for i := 0; i < st.Shards; i++ {
		if o := shm.Owner(shm.Word64(d.Zone().Shard(i), 0)); o != 0 {
			t.Errorf("shard %d lock held by %d after Stats, want free", i, o)
		}
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after %d kills = %v", total.kills, err)
	}
	var acked, inflight uint64
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
	checkCrashLeftovers(t, d)
	if st.Evictions != 0 {
		t.Errorf("Stats() evictions = %d, want 0: the zone is too small for the test", st.Evictions)
	}
	if st.Recoveries == 0 {
		t.Errorf("Stats() recoveries = 0 after %d kills: no kill hit a held lock", total.kills)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after reading everything = %v", err)
	}
	t.Logf("%d kills in %v: %d ops, %d increments acknowledged, %d in flight; %d recoveries, %d lock waits",
		total.kills, hammered, total.ops, acked, inflight, st.Recoveries, st.LockWaits)
}

// crashOnce starts helper n, kills it at a random moment after it is ready,
// and adds its ack file to tally.
func crashOnce(t *testing.T, path, dir string, n int, seed uint64, r *rand.Rand, tally *crashTally) error {
	ack := filepath.Join(dir, fmt.Sprintf("ack-%d", n))
	if err := os.WriteFile(ack, make([]byte, ackSize), 0o600); err != nil {
		return err
	}
	ready := make(chan struct{})
	p := testutil.Start(t, testutil.Helper(t, "crash-hammer", path, ack, strconv.FormatUint(seed, 10)), func(line string) {
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
	time.Sleep(time.Duration(r.Int64N(int64(crashMaxDelay) + 1)))
	if err := p.Kill(); err != nil {
		return fmt.Errorf("failed before it was killed: %w", err)
	}
	tally.kills++
	if err := tally.readAck(ack); err != nil {
		return err
	}
	return os.Remove(ack)
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
		if !strings.HasPrefix(k, "ctr-") && !strings.HasPrefix(k, "val-") {
			t.Errorf("Keys(0) holds %q, which no helper writes", k)
		}
	}
}

// helperHammer is one process of TestCrashKill: args are the zone path, the
// ack file and a seed. It writes until it is killed, and fails on any result
// a sound zone cannot give.
func helperHammer(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("want path, ack file and seed, got %q", args)
	}
	seed, err := strconv.ParseUint(args[2], 10, 64)
	if err != nil {
		return err
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(args[1], os.O_RDWR, 0)
	if err != nil {
		return err
	}
	ack, err := unix.Mmap(int(f.Fd()), 0, ackSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	h := &hammer{
		d:        d,
		r:        rand.New(rand.NewPCG(seed, seed>>32)),
		inflight: shm.Word64(ack, ackInflight),
		ops:      shm.Word64(ack, ackOps),
		last:     make([]int64, crashCounters),
	}
	for k := 0; k < crashCounters; k++ {
		h.acked = append(h.acked, shm.Word64(ack, ackCounts+8*k))
	}
	fmt.Println(readyLine)
	for {
		if err := h.step(); err != nil {
			return err
		}
		atomic.AddUint64(h.ops, 1)
	}
}

// hammer is the state of one helperHammer process.
type hammer struct {
	d        *dict.Dict
	r        *rand.Rand
	inflight *uint64   // in the ack file
	ops      *uint64   // in the ack file
	acked    []*uint64 // in the ack file
	last     []int64   // the last sum seen per counter: sums only grow
}

// step does one random operation.
func (h *hammer) step() error {
	d, r := h.d, h.r
	x := r.IntN(100)
	switch {
	case x < 40:
		return h.incr(r.IntN(crashCounters), x < 20)
	case x < 72:
		return h.write(r.IntN(crashValues), x)
	case x < 80:
		k := r.IntN(crashValues)
		key := crashValueKey(k)
		v, _, err := d.Get(key)
		switch {
		case errors.Is(err, dict.ErrNotFound):
		case err != nil:
			return fmt.Errorf("Get(%q) = %v", key, err)
		case v.Kind() == dict.KindInt && v.Int() != int64(k):
			return fmt.Errorf("Get(%q) = %d, want %d", key, v.Int(), k)
		case v.Kind() == dict.KindBytes:
			return checkCrashValue(key, v.Bytes())
		}
		return nil
	default:
		return h.list(crashListKey(r.IntN(crashLists)), x < 90)
	}
}

// incr increments counter k by one, with Incr or IncrInit, and acknowledges
// it in the ack file.
func (h *hammer) incr(k int, init bool) error {
	key := crashCounterKey(k)
	atomic.StoreUint64(h.inflight, uint64(k)+1)
	var n int64
	var err error
	if init {
		var forcible bool
		n, forcible, err = h.d.IncrInit(key, 1, 0, 0)
		if err == nil && forcible {
			err = errors.New("evicted")
		}
	} else {
		n, err = h.d.Incr(key, 1)
	}
	if err != nil {
		return fmt.Errorf("increment %q: %v", key, err)
	}
	atomic.AddUint64(h.acked[k], 1)
	atomic.StoreUint64(h.inflight, 0)
	if n <= h.last[k] {
		return fmt.Errorf("increment %q = %d after %d", key, n, h.last[k])
	}
	h.last[k] = n
	return nil
}

// write sets, adds, replaces or deletes value key k; x picks which.
func (h *hammer) write(k, x int) error {
	d, r := h.d, h.r
	key := crashValueKey(k)
	v := dict.Bytes(crashValue(key, crashValueSize(r)))
	if r.IntN(8) == 0 {
		v = dict.Int(int64(k))
	}
	var forcible bool
	var err error
	switch {
	case x < 50:
		forcible, err = d.Set(key, v, 0, 0)
	case x < 56:
		err = d.SafeSet(key, v, 0, 0)
	case x < 60:
		forcible, err = d.Add(key, v, 0, 0)
		if errors.Is(err, dict.ErrExists) {
			err = nil
		}
	case x < 62:
		err = d.SafeAdd(key, v, 0, 0)
		if errors.Is(err, dict.ErrExists) {
			err = nil
		}
	case x < 66:
		forcible, err = d.Replace(key, v, 0, 0)
		if errors.Is(err, dict.ErrNotFound) {
			err = nil
		}
	default:
		err = d.Delete(key)
	}
	if err == nil && forcible {
		err = errors.New("evicted")
	}
	if err != nil {
		return fmt.Errorf("write %q (%d): %v", key, x, err)
	}
	return nil
}

// list pushes to (push) or pops from list key, at either end; it pops when
// the list is long.
func (h *hammer) list(key string, push bool) error {
	d, r := h.d, h.r
	if push {
		n, err := d.LLen(key)
		if err != nil {
			return fmt.Errorf("LLen(%q) = %v", key, err)
		}
		push = n < crashListMax
	}
	left := r.IntN(2) == 0
	if push {
		v := dict.Bytes(crashValue(key, 1+r.IntN(600)))
		var err error
		if left {
			_, err = d.LPush(key, v)
		} else {
			_, err = d.RPush(key, v)
		}
		if err != nil {
			return fmt.Errorf("push %q: %v", key, err)
		}
		return nil
	}
	var v dict.Value
	var err error
	if left {
		v, err = d.LPop(key)
	} else {
		v, err = d.RPop(key)
	}
	switch {
	case errors.Is(err, dict.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("pop %q: %v", key, err)
	}
	return checkCrashValue(key, v.Bytes())
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
			p := testutil.Start(t, testutil.Helper(t, "crash-lock", args...), func(line string) {
				if line == readyLine {
					close(ready)
				}
			})
			select {
			case <-ready:
			case <-p.Done():
				t.Fatalf("helper ended before it held the locks: %v", p.Wait())
			case <-time.After(time.Minute):
				t.Fatal("helper not ready after a minute")
			}
			for _, i := range tt.shards {
				if o := shm.Owner(shm.Word64(d.Zone().Shard(i), 0)); o != uint32(p.Pid()) {
					t.Fatalf("shard %d lock owner %d, want the helper %d", i, o, p.Pid())
				}
			}
			if err := p.Kill(); err != nil {
				t.Fatalf("Kill() = %v", err)
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
				if o := shm.Owner(shm.Word64(d.Zone().Shard(i), 0)); o != 0 {
					t.Errorf("shard %d lock held by %d, want free", i, o)
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

// helperHoldLock is the helper of TestCrashHoldingLock: args are the zone
// path and shard numbers. It takes those shards' locks, prints readyLine and
// waits to be killed.
func helperHoldLock(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("want path and shards, got %q", args)
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	for _, a := range args[1:] {
		i, err := strconv.Atoi(a)
		if err != nil {
			return err
		}
		w := shm.Word64(d.Zone().Shard(i), 0)
		shm.Lock(w)
		if o := shm.Owner(w); o != shm.Self {
			return fmt.Errorf("shard %d lock owner %d after Lock, want %d", i, o, shm.Self)
		}
	}
	fmt.Println(readyLine)
	for {
		time.Sleep(time.Hour)
	}
}

//go:build dicthooks

package dict_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// TestCrashEvict is TestCrashKill in a zone too small for what the helpers
// write: every write evicts, keys read often are promoted to the protected
// segment and pin the pages they sit on, so that shards clear pages and
// move entries, and the SIGKILLs land inside all of that. Afterwards the
// zone must pass Check, every value left must be one some helper wrote
// whole for its key with the TTL it wrote it with, and no counter may
// exceed the increments made to it. Its helpers record page clearings
// (dict.LogClears), so it builds only with the dicthooks tag.
//
// What eviction may legitimately lose cannot be told apart from what a
// crash would lose, so the acknowledged increments are no lower bound here:
// any counter may be evicted, however often it is used (a repair resets
// every entry to probation, protected entries go when probation is empty,
// and the rounds of one allocation in a shard this small can pass the
// hand over an entry twice, spending its second chance). The checks are those
// that hold whatever eviction did.
//
// What the run exercised is checked too, and holds whatever the
// scheduling. A helper signals readiness, and may be killed, only once it
// has done evMinOps operations. The witness (crashWitness) also waits
// until it has made a write that evicted, cleared a page and moved an
// entry in a clearing. Its Stats calls must also have seen a protected
// entry and an expired entry reclaimed. Then it is killed inside an
// update, holding a shard's lock, which forces a recovery. How often each
// of these happened, and how many kills landed in a page clearing, are
// logged (helpers record a clearing's steps in their ack files).
//
// The helpers' bodies, keys and values are in crash_evict_helpers_test.go.

const (
	evDefaultKills = 100 // SIGKILLs per run; SHMZONE_CRASH_KILLS overrides
	evSlots        = 4
	evMaxDelay     = 20 * time.Millisecond
	evShards       = 2
	// evZoneSize holds a few hundred of the values the helpers write:
	// a tenth of the cold keys at most.
	evZoneSize = 256 << 10
)

func TestCrashEvict(t *testing.T) {
	kills := crashKills(t, evDefaultKills)
	seed := testutil.Seed(t)
	t.Logf("%d kills (SHMZONE_CRASH_KILLS)", kills)

	// This process reads the wall clock itself: a value written with a
	// TTL by helper n expires at the latest ttl after n was killed.
	wall := func() int64 { return time.Now().UnixMilli() }
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: evZoneSize, Shards: evShards, Clock: wall})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Full before the first helper starts: every helper evicts from its
	// first writes on.
	r := rand.New(rand.NewPCG(seed, 0))
	for k := 0; d.Stats().Evictions == 0; k++ {
		if k == evCold {
			t.Fatalf("no eviction after writing all %d cold keys: the zone is too large", evCold)
		}
		key := evColdKey(k)
		if _, err := d.Set(key, dict.Bytes(evValue(nil, key, evValueSize(r), 0, 0)), 0, 0); err != nil && !errors.Is(err, dict.ErrNoMemory) {
			t.Fatalf("Set(%q) = %v", key, err)
		}
	}
	before := d.Stats()

	dir := t.TempDir()
	killed := make([]atomic.Int64, kills+1) // helper n's death, Unix ms
	var total evTally
	hammered := killRounds(t, evSlots, kills, seed, 1<<32, &total, func(n int, r *rand.Rand, mine *evTally) error {
		ack := filepath.Join(dir, fmt.Sprintf("ack-%d", n))
		err := os.WriteFile(ack, make([]byte, evAckSize), 0o600)
		if err == nil {
			err = crashKill(t, testutil.Helper(t, "crash-evict", path, ack,
				strconv.FormatUint(seed, 10), strconv.Itoa(n), crashRole(n)), r, evMaxDelay)
		}
		killed[n].Store(wall())
		if err == nil {
			mine.kills++
			ops := mine.ops
			err = mine.readAck(ack)
			if n == crashWitness {
				mine.witnessOps = mine.ops - ops
			}
		}
		if err == nil {
			err = os.Remove(ack)
		}
		return err
	})

	after := crashStats(t, d)
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after %d kills = %v", total.kills, err)
	}
	below := checkEvLeftovers(t, d, &total, func(w int) int64 { return killed[w].Load() }, wall)
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after reading everything = %v", err)
	}

	evictions := after.Evictions - before.Evictions
	recoveries := after.Recoveries - before.Recoveries
	t.Logf("%d kills in %v: %d ops (%d found no memory, %d of them writes that evict); %d writes evicted; %d evictions, %d expirations, %d recoveries; "+
		"page clearings: %d pages cleared, %d entries moved, %d evicted or expired; most protected %d",
		total.kills, hammered, total.ops, total.nomem, total.noroom, total.evicting, evictions, after.Expirations-before.Expirations, recoveries,
		total.cleared, total.moved, total.dropped, total.prot)
	t.Logf("%d kills inside an operation, %d of them after a page clearing's first step and before its end; "+
		"%d of %d counters below their acknowledged increments (lost to eviction); the witness did %d ops",
		total.inOp, total.inClear, below, evCounters, total.witnessOps)
	// What the run must have exercised for its checks to mean anything.
	// Every helper was ready before its kill (evHammer.ready), so these
	// hold however the kills fell.
	if want := uint64(evMinOps * kills); total.ops < want {
		t.Errorf("%d operations in %d kills, want at least %d", total.ops, kills, want)
	}
	if total.evicting == 0 || evictions < total.evicting {
		t.Errorf("%d evictions, %d writes that evicted, want the witness's write and at least one eviction each",
			evictions, total.evicting)
	}
	if total.cleared == 0 || total.moved == 0 {
		t.Errorf("%d pages cleared, %d entries moved by clearings, want the witness's", total.cleared, total.moved)
	}
	if recoveries == 0 {
		t.Errorf("no recovery after %d kills, want the witness's shard rebuilt", total.kills)
	}
	if total.prot == 0 {
		t.Error("no Stats call in a helper saw a protected entry, want the witness's")
	}
	if after.Expirations == before.Expirations {
		t.Error("no expired entry reclaimed, want the one the witness saw")
	}
}

// checkEvLeftovers reads every key the helpers write: each value must be
// whole and have the TTL it was written with, each counter at most the
// increments made to it. killed returns when writer w died (the test
// itself, writer 0, writes no TTL); now is the dictionary's clock. It
// returns the counters below their acknowledged increments.
func checkEvLeftovers(t *testing.T, d *dict.Dict, tally *evTally, killed func(w int) int64, now func() int64) (below int) {
	t.Helper()
	known := map[string]bool{}
	for k := 0; k < evCounters; k++ {
		key := evCounterKey(k)
		known[key] = true
		hi := tally.acked[k] + tally.inflight[k]
		v, _, err := d.Get(key)
		switch {
		case errors.Is(err, dict.ErrNotFound):
		case err != nil || v.Kind() != dict.KindInt || v.Int() < 1 || uint64(v.Int()) > hi:
			t.Errorf("Get(%q) = %v, %v, want Int from 1 to %d (acknowledged + in flight)", key, v, err, hi)
		}
		if err != nil || uint64(v.Int()) < tally.acked[k] {
			below++
		}
	}
	for k := 0; k < evStates; k++ {
		key := evStateKey(k)
		known[key] = true
		checkStateKey(t, d, key)
	}
	check := func(key string, k int) {
		known[key] = true
		at := now() // before Get: a value found expires after at
		v, _, err := d.Get(key)
		w, ttl := 0, 0
		switch {
		case errors.Is(err, dict.ErrNotFound):
			return
		case err != nil:
			t.Errorf("Get(%q) = %v", key, err)
			return
		case v.Kind() == dict.KindInt && k >= 0:
			if v.Int() != int64(k) {
				t.Errorf("Get(%q) = Int %d, want %d", key, v.Int(), k)
			}
		case v.Kind() == dict.KindBytes:
			w, ttl, err = checkEvValue(key, v.Bytes())
			if err != nil {
				t.Errorf("Get(%q): %v", key, err)
				return
			}
			// The test itself (writer 0) gives no TTL.
			if w > tally.kills || ttl != 0 && w == 0 || k < 0 && ttl > evHotTTL {
				t.Errorf("Get(%q): a value of writer %d with a TTL of %d ms, which it never wrote", key, w, ttl)
				return
			}
			if end := killed(w) + int64(ttl); ttl != 0 && at >= end {
				t.Errorf("Get(%q) at %d found a value that expired by %d (writer %d, dead at %d, TTL %d ms)",
					key, at, end, w, killed(w), ttl)
			}
		default:
			t.Errorf("Get(%q) = %v of kind %v", key, v, v.Kind())
			return
		}
		left, err := d.TTL(key)
		switch {
		case errors.Is(err, dict.ErrNotFound) && ttl != 0: // expired since Get
		case err != nil:
			t.Errorf("TTL(%q) = %v after Get found it", key, err)
		case ttl == 0 && left != 0:
			t.Errorf("TTL(%q) = %v, want none: its value was written without one", key, left)
		case ttl != 0 && left == 0:
			t.Errorf("TTL(%q) = none, want at most %d ms: its value was written with one", key, ttl)
		case ttl != 0:
			if most := time.Duration(killed(w)+int64(ttl)-at) * time.Millisecond; left > most {
				t.Errorf("TTL(%q) = %v, want at most %v (written with %d ms by writer %d)", key, left, most, ttl, w)
			}
		}
	}
	for k := 0; k < evHot; k++ {
		check(evHotKey(k), -1)
	}
	for k := 0; k < evCold; k++ {
		check(evColdKey(k), k)
	}
	keys, err := d.Keys(0)
	if err != nil {
		t.Fatalf("Keys(0) = %v", err)
	}
	for _, k := range keys {
		if !known[k] {
			t.Errorf("Keys(0) holds %q, which no helper writes", k)
		}
	}
	return below
}

// evTally sums what the killed helpers of TestCrashEvict acknowledged.
type evTally struct {
	kills                    int
	inOp                     int // helpers killed inside an operation
	inClear                  int // ... after a page clearing's first step and before its end
	ops, nomem, noroom, prot uint64
	moved, cleared, dropped  uint64
	evicting                 uint64 // writes that evicted live entries
	witnessOps               uint64 // the witness's operations
	acked, inflight          [evCounters]uint64
}

func (c *evTally) add(o *evTally) {
	c.kills += o.kills
	c.inOp += o.inOp
	c.inClear += o.inClear
	c.ops += o.ops
	c.nomem += o.nomem
	c.noroom += o.noroom
	c.prot = max(c.prot, o.prot)
	c.moved += o.moved
	c.cleared += o.cleared
	c.dropped += o.dropped
	c.evicting += o.evicting
	c.witnessOps += o.witnessOps
	for k := range c.acked {
		c.acked[k] += o.acked[k]
		c.inflight[k] += o.inflight[k]
	}
}

// readAck adds a dead helper's ack file to c.
func (c *evTally) readAck(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) != evAckSize {
		return fmt.Errorf("ack file %s has %d bytes, want %d", path, len(b), evAckSize)
	}
	word := func(off int) uint64 { return binary.NativeEndian.Uint64(b[off:]) }
	if f := word(evAckInflight); f != 0 {
		if f > evCounters {
			return fmt.Errorf("ack file %s: in flight %d", path, f)
		}
		c.inflight[f-1]++
	}
	c.ops += word(evAckOps)
	c.nomem += word(evAckNoMem)
	c.noroom += word(evAckNoRoom)
	c.prot = max(c.prot, word(evAckProt))
	c.moved += word(evAckMoved)
	c.cleared += word(evAckCleared)
	c.dropped += word(evAckDropped)
	c.evicting += word(evAckEvicting)
	for k := range c.acked {
		c.acked[k] += word(evAckCounts + 8*k)
	}
	// The steps of the operation it was killed in (or had just done).
	steps := dict.ClearSteps(b[evAckLog:])
	for _, s := range steps {
		switch s {
		case dict.StepMoved:
			c.moved++
		case dict.StepCleared:
			c.cleared++
		default:
			c.dropped++
		}
	}
	if op := word(evAckOp); op != 0 {
		if evKeyOf(op) == "" {
			return fmt.Errorf("ack file %s: operation on key %#x", path, op)
		}
		c.inOp++
		if len(steps) > 0 && steps[len(steps)-1] != dict.StepCleared {
			c.inClear++
		}
	}
	return nil
}

// TestEvValue checks the values of TestCrashEvict's helpers: each reads
// back as its writer and TTL, and a torn one, a shorter one, or one of
// another key or TTL does not.
func TestEvValue(t *testing.T) {
	for _, n := range []int{0, 1, 30, 31, 100, 2000, evMaxValue} {
		v := evValue(nil, "val17-", n, 12, 345)
		if w, ttl, err := checkEvValue("val17-", v); w != 12 || ttl != 345 || err != nil {
			t.Errorf("checkEvValue(evValue(%d)) = %d, %d, %v, want 12, 345, nil", n, w, ttl, err)
		}
		bad := map[string][]byte{
			"another key": v,
			"shorter":     v[:len(v)-1],
			"longer":      append(v[:len(v):len(v)], v[len(v)-1]),
		}
		if h := evHeader(nil, "val17-", n, 12, 345); len(h) < len(v) {
			// The header of one value and the filler of another.
			bad["other filler"] = append(h, evValue(nil, "val17-", n, 12, 346)[len(h):]...)
		}
		for i := len(v) - 1; i >= 0; i -= 7 {
			b := append([]byte(nil), v...)
			b[i] ^= 0x20
			bad[fmt.Sprintf("byte %d flipped", i)] = b
		}
		for name, b := range bad {
			key := "val17-"
			if name == "another key" {
				key = "val17"
			}
			if _, _, err := checkEvValue(key, b); err == nil {
				t.Errorf("checkEvValue(%q, %d bytes: %s) = nil, want an error", key, len(b), name)
			}
		}
	}
}

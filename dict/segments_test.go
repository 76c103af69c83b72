package dict

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// The eviction queue's two segments and the traces (shard.go): keys used
// again outlive a flood of keys used once, expired entries go first, and a
// key whose live entry was evicted is reported Lost when it comes back.

// fill sets new keys prefix0, prefix1, ... until one evicts; it returns how
// many it set before that one.
func fill(t *testing.T, d *Dict, prefix string) int {
	t.Helper()
	for i := 0; ; i++ {
		if i > 100_000 {
			t.Fatalf("no eviction after %d keys", i)
		}
		f, err := d.Set(fmt.Sprintf("%s%d", prefix, i), Int(int64(i)), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if f {
			return i
		}
	}
}

// TestFloodKeepsUsedKeys fills a one-shard zone, reads a third of its keys
// again, and floods it with ten times as many new keys used once: every key
// read again survives the flood, which evicts only keys of its own and the
// keys never read again.
func TestFloodKeepsUsedKeys(t *testing.T) {
	d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
	n := fill(t, d, "old")
	used := map[string]bool{}
	for i := 0; i < n; i += 3 {
		k := fmt.Sprintf("old%d", i)
		if _, _, err := d.Get(k); err == nil {
			used[k] = true
		}
	}
	if len(used) < n/4 {
		t.Fatalf("only %d of %d keys left to read", len(used), n)
	}
	for i := 0; i < 10*n; i++ {
		if _, err := d.Set(fmt.Sprintf("flood%d", i), Int(1), 0, 0); err != nil {
			t.Fatal(err)
		}
		if i%97 == 0 {
			specCheck(t, d)
		}
	}
	lost := 0
	for k := range used {
		if _, _, err := d.Get(k); err != nil {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d keys read again were evicted by a flood of %d keys used once", lost, len(used), 10*n)
	}
	// A flood key whose fingerprint meets a trace, about one new key in
	// four million, joins the protected segment as a key lost: at most
	// two such here.
	st := d.Stats()
	if extra := st.Protected - int64(len(used)); extra < 0 || extra > 2 {
		t.Errorf("Stats().Protected = %d, want the %d keys read again", st.Protected, len(used))
	}
	if int64(st.Lost) > st.Protected-int64(len(used)) {
		t.Errorf("Stats().Lost = %d, want 0: no evicted key came back", st.Lost)
	}
}

// TestProtectedSegmentBounded reads every key of a full zone again and
// again while new keys arrive: the protected segment never holds more than
// seven eighths of the entries, so new keys can still prove themselves,
// and keys read on every round outlive those read once.
func TestProtectedSegmentBounded(t *testing.T) {
	d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
	n := fill(t, d, "k")
	for round := 0; round < 20; round++ {
		for i := 0; i < n; i++ {
			d.Get(fmt.Sprintf("k%d", i))
		}
		for i := 0; i < n/4; i++ {
			if _, err := d.Set(fmt.Sprintf("r%d-%d", round, i), Int(1), 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		st := d.Stats()
		if st.Protected > st.Entries-st.Entries/probationShare {
			t.Fatalf("round %d: %d protected of %d entries, more than seven eighths", round, st.Protected, st.Entries)
		}
		specCheck(t, d)
	}
	if p := d.Stats().Protected; p == 0 {
		t.Error("no entry protected after 20 rounds of reads")
	}
}

// TestExpiredProtectedKept protects keys with a short TTL, lets them
// expire, and floods the zone: the flood is served from probation, and the
// expired protected entries stay, the slots of keys in use whose state ran
// out. Written again, each key takes its slot back in place, protected
// still, and outlives the next flood.
func TestExpiredProtectedKept(t *testing.T) {
	d, c := openTest(t, Options{Size: specMinZone, Shards: 1})
	n := fill(t, d, "k")
	var keys []string
	for i := 0; i < n; i += 2 {
		k := fmt.Sprintf("k%d", i)
		if err := d.Expire(k, time.Second); err == nil {
			d.Get(k)
			keys = append(keys, k)
		}
	}
	flood := func(prefix string) {
		t.Helper()
		for i := 0; i < 4*n; i++ {
			if _, err := d.Set(fmt.Sprintf("%s%d", prefix, i), Int(1), 0, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	flood("a") // the hand passes the keys read: promoted
	protected := d.Stats().Protected
	if protected < int64(len(keys))/2 {
		t.Fatalf("%d protected after a flood, want most of the %d keys read", protected, len(keys))
	}
	c.Advance(2 * time.Second)
	before := d.Stats()
	flood("b")
	after := d.Stats()
	// A flood key whose fingerprint meets a trace of an evicted one, about
	// one new key in four million, joins the protected segment too.
	if extra := after.Protected - protected; extra < 0 || extra > 2 {
		t.Errorf("%d protected entries after their TTL and a flood, want the %d expired ones kept", after.Protected, protected)
	}
	if after.Expirations != before.Expirations {
		t.Errorf("%d expired entries reclaimed during the flood, want none: probation served it", after.Expirations-before.Expirations)
	}
	kept := 0
	for _, k := range keys {
		if _, err := d.TTL(k); errors.Is(err, ErrNotFound) {
			// Expired: Set brings it back in its slot if the slot is
			// still there.
			if _, err := d.Set(k, Int(2), time.Minute, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := d.Stats().Protected; got != after.Protected {
		t.Errorf("%d protected after the keys were written again, want %d: in place, protected still", got, after.Protected)
	}
	flood("c")
	for _, k := range keys {
		if _, err := d.TTL(k); err == nil {
			kept++
		}
	}
	if int64(kept) < protected {
		t.Errorf("%d of the keys written again outlived a flood, want the %d protected", kept, protected)
	}
}

// TestLost evicts keys while live and brings them back: Outcome.Lost and
// Stats.Lost count each once, and only while its entry would still have
// been live; a key never stored, or one whose entry had expired by the time
// it came back, is not lost. A generation of traces keeps the earliest
// expiry among them, so b, whose entry lives a second, is evicted a
// generation before a and c.
func TestLost(t *testing.T) {
	d, c := openTest(t, Options{Size: specMinZone, Shards: 1})
	store := func(k string, ttl time.Duration) Outcome {
		t.Helper()
		out, err := d.UpdateOutcome(k, func(Value, bool) (Value, time.Duration, bool) { return Int(1), ttl, true })
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := store("never", 0); out.Lost {
		t.Fatal("a new key is Lost")
	}
	// "b" lives for a second, "a" for a minute, "c" for ever; the flood
	// evicts them live, in that order.
	store("b", time.Second)
	for i := 0; i < int(d.shards[0].traceFill()); i++ {
		store(fmt.Sprintf("g%d", i), 0)
	}
	store("a", time.Minute)
	store("c", 0)
	for i := 0; ; i++ {
		if i > 100_000 {
			t.Fatal("a, b and c were never evicted")
		}
		store(fmt.Sprintf("f%d", i), 0)
		// TTL is no use of the key: a, b and c stay unused, in
		// probation, and go in turn.
		_, ea := d.TTL("a")
		_, eb := d.TTL("b")
		_, ec := d.TTL("c")
		if ea != nil && eb != nil && ec != nil {
			break
		}
	}
	c.Advance(2 * time.Second) // b's entry would have expired by now
	if out := store("b", 0); out.Lost {
		t.Error("b came back after its TTL: Lost, want not")
	}
	if out := store("a", 0); !out.Lost {
		t.Error("a came back within its TTL: not Lost")
	}
	if out := store("c", 0); !out.Lost {
		t.Error("c, which had no TTL, came back: not Lost")
	}
	if got := d.Stats().Lost; got != 2 {
		t.Errorf("Stats().Lost = %d, want 2 (a and c)", got)
	}
	// Each loss counts once: the trace is gone with the key's return.
	d.Delete("a")
	if out := store("a", 0); out.Lost {
		t.Error("a, deleted and stored again: Lost again")
	}
}

// TestLostForgetsOldTraces evicts more live keys than a shard keeps traces
// of: the oldest come back unreported (Lost errs toward false), the newest
// are reported.
func TestLostForgetsOldTraces(t *testing.T) {
	d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
	slots := len(d.shards[0].traces)
	n := fill(t, d, "k") // k0 was evicted by the last Set
	for i := 1; i < n+slots; i++ {
		if _, err := d.Set(fmt.Sprintf("x%d", i), Int(1), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Every kN is gone now, evicted in order, and more than slots x keys
	// after them. Back newest first.
	lost := 0
	for i := n - 1; i >= 0; i-- {
		out, err := d.UpdateOutcome(fmt.Sprintf("k%d", i), func(Value, bool) (Value, time.Duration, bool) { return Int(1), 0, true })
		if err != nil {
			t.Fatal(err)
		}
		if out.Lost {
			lost++
		}
	}
	if lost > slots/traceBucket {
		t.Errorf("%d of %d evicted keys reported Lost on their return after %d other evictions, want few: the shard keeps %d traces", lost, n, n+slots, slots)
	}
}

// TestCheckSettlesDeadWriter leaves an entry as an entry writer killed
// inside it does (Ver odd, its page lock free after the takeover): a
// writable Check drops it, as the key's next write would, and reports
// nothing, where it used to report the entry as invalid.
func TestCheckSettlesDeadWriter(t *testing.T) {
	d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
	specSet(t, d, "dead", Int(1), 0, 0)
	specSet(t, d, "alive", Int(2), 0, 0)
	s := &d.shards[0]
	off, err := s.findInShard("dead", hashKey(d.seed, "dead"))
	if err != nil || off == 0 {
		t.Fatalf("findInShard = %d, %v", off, err)
	}
	s.entryAt(off).beginWrite() // and dies
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v, want the half-written entry settled", err)
	}
	wantGetErr(t, d, "dead", ErrNotFound)
	wantGet(t, d, "alive", Int(2), 0)
	if r := d.Stats().Recoveries; r != 1 {
		t.Errorf("Stats().Recoveries = %d, want 1", r)
	}
}

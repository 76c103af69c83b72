package limiter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// fullKinds builds one limiter of every kind over d, each allowing the
// first request of a key.
func fullKinds(t *testing.T, d *dict.Dict) []struct {
	name string
	l    interface {
		Limiter
		Stats() Stats
	}
} {
	t.Helper()
	req, err1 := NewReq(d, "full", 1, 0)
	count, err2 := NewCount(d, "full", 10, time.Hour)
	conn, err3 := NewConn(d, "full", 10, 0, 0)
	leased, err4 := NewLeasedConn(d, "full", 10, 0, 0, time.Hour)
	sw, err5 := NewSlidingWindow(d, "full", 10, time.Hour)
	gcra, err6 := NewGCRA(d, "full", 1, 10)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		t.Fatal(err)
	}
	return []struct {
		name string
		l    interface {
			Limiter
			Stats() Stats
		}
	}{{"Req", req}, {"Count", count}, {"Conn", conn}, {"LeasedConn", leased}, {"SlidingWindow", sw}, {"GCRA", gcra}}
}

// clientKey returns a client key as a server makes them: an IPv4 address,
// an IPv6 /64 or a user id, of lengths that spread entries over the slab's
// classes.
func clientKey(r *rand.Rand) string {
	switch r.IntN(3) {
	case 0:
		return fmt.Sprintf("%d.%d.%d.%d", r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(256))
	case 1:
		return fmt.Sprintf("2001:db8:%x:%x::/64", r.IntN(1<<16), r.IntN(1<<16))
	}
	return fmt.Sprintf("user-%d", r.Int64N(1<<(8+r.IntN(50))))
}

// TestFullZoneFlood floods a 256 KiB zone with 20,000 distinct client keys
// through every kind of limiter: every decision succeeds, evicting what it
// must, and Stats().Forcible counts exactly the decisions that evicted.
// (With the dictionary's 30 eviction rounds alone, a Count answered
// "dict: no memory" a few times per flood.)
func TestFullZoneFlood(t *testing.T) {
	const keys = 20000
	seed := testutil.Seed(t)
	ctx := context.Background()
	d, err := dict.Open(testutil.TempZone(t), dict.Options{Size: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for _, k := range fullKinds(t, d) {
		t.Run(k.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0))
			seen := make(map[string]bool, keys)
			evicting := uint64(0) // decisions during which the zone evicted
			evictions0 := d.Stats().Evictions
			for i := range keys {
				key := clientKey(r)
				for seen[key] {
					key = clientKey(r)
				}
				seen[key] = true
				before := d.Stats().Evictions
				dec, err := k.l.Incoming(ctx, key, true)
				if err != nil {
					t.Fatalf("decision %d, Incoming(%q): %v", i, key, err)
				}
				if !dec.Allowed {
					t.Fatalf("decision %d, Incoming(%q) rejected a new key: %+v", i, key, dec)
				}
				if d.Stats().Evictions > before {
					evicting++
				}
			}
			st := k.l.Stats()
			if st.Forcible != evicting {
				t.Errorf("Stats().Forcible = %d, want %d: the decisions that evicted", st.Forcible, evicting)
			}
			// The zone holds a few thousand states: most keys evict one, in
			// few decisions when each frees a whole slab page.
			if ev := d.Stats().Evictions - evictions0; ev < keys/2 {
				t.Errorf("only %d evictions in %d decisions: the zone was not full", ev, keys)
			}
			t.Logf("%d decisions, %d forcible, %d retries", keys, st.Forcible, st.Retries)
			if err := d.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFullZoneRetries fills the zone with small entries in insertion
// order, so that the entries a write's eviction rounds evict are on one
// slab page, and decides on a key of another size. A short key's entry
// takes a chunk of another size: the dictionary frees a whole page for it
// in the write's own rounds (dict's page clearing), with no retry. A key
// of many pages needs a run of free pages, which the rounds do not make
// for sure: the decision succeeds by trying again, and counts its retries.
func TestFullZoneRetries(t *testing.T) {
	ctx := context.Background()
	keys := []struct {
		name, key string
		retries   bool // the decision must retry
	}{
		{"short key", "k", false},
		{"long key", strings.Repeat("k", 40000), true}, // ten pages and more
	}
	for _, kk := range keys {
		t.Run(kk.name, func(t *testing.T) {
			d, err := dict.Open(testutil.TempZone(t), dict.Options{Size: 256 << 10, Shards: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			for _, k := range fullKinds(t, d) {
				t.Run(k.name, func(t *testing.T) {
					fill(t, d)
					dec, err := k.l.Incoming(ctx, kk.key, true)
					if err != nil || !dec.Allowed {
						msg := fmt.Sprint(err)
						if len(msg) > 200 {
							msg = msg[:200] + "…"
						}
						t.Fatalf("Incoming on a full zone = %+v, %s; want allowed", dec, msg)
					}
					if st := k.l.Stats(); st.Forcible != 1 || (st.Retries != 0) != kk.retries {
						t.Errorf("Stats() = %+v, want 1 forcible decision, retries %v", st, kk.retries)
					}
					if err := d.Check(); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}

// fill empties d and fills it with entries of a key of 6 bytes and an int,
// in insertion order, until a Set evicts.
func fill(t *testing.T, d *dict.Dict) {
	t.Helper()
	if err := d.FlushAll(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		forcible, err := d.Set(fmt.Sprintf("%06d", i), dict.Int(1), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if forcible {
			return
		}
		if i == 1e6 {
			t.Fatal("zone not full after a million entries")
		}
	}
}

// TestFullZoneTooLarge: an entry that cannot fit in an empty shard is the
// one write a decision may fail, and it fails at once, not after evicting
// without end.
func TestFullZoneTooLarge(t *testing.T) {
	d, err := dict.Open(testutil.TempZone(t), dict.Options{Size: 4096 + 16*4096, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	key := strings.Repeat("k", dict.MaxKeyLen-32)
	for _, k := range fullKinds(t, d) {
		_, err := k.l.Incoming(context.Background(), key, true)
		if !errors.Is(err, dict.ErrValueTooLarge) && !errors.Is(err, dict.ErrNoMemory) {
			t.Errorf("%s: Incoming of a key larger than the shard = %v, want ErrValueTooLarge or ErrNoMemory", k.name, err)
		}
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}

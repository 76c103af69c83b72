package limiter

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// TestRejectionWritesNothing: Req, GCRA and SlidingWindow decide through
// dict.Revise, whose rejection takes no lock and writes nothing. After
// a first admitted request, a rejected one changes the zone file where a
// Get of its key does, and nowhere else: the operation counts of the
// shard's header (the entry's Ver word, value, TTL and flags, the locks
// and Seq of every shard among what stays as it was). The value and TTL
// read back the same, and Stats counts no write. A first rejection comes
// before, so that the entry's use bit, which a read may set once, is set
// already. Every count is added to the zone (SyncStats) before each look
// at the file, so that the clock's ticker, which adds them too, changes
// nothing between two looks.
//
// Package limiter cannot hold a shard's lock of the zone (dict's test
// helpers are not reachable from here); dict's TestReviseRejectTakesNoLock
// shows a rejection deciding while the lock is held.
func TestRejectionWritesNothing(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		make func(d *dict.Dict) (Limiter, error)
	}{
		{"Req", func(d *dict.Dict) (Limiter, error) { return NewReq(d, "r", 1, 0) }},
		{"GCRA", func(d *dict.Dict) (Limiter, error) { return NewGCRA(d, "g", 1, 1) }},
		{"SlidingWindow", func(d *dict.Dict) (Limiter, error) { return NewSlidingWindow(d, "s", 1, time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := testutil.TempZone(t)
			d, clk := zonetest.OpenAt(t, path, dict.Options{Size: 1 << 20, Shards: 1})
			l, err := tc.make(d)
			if err != nil {
				t.Fatal(err)
			}
			zk := zoneKey(l, "client")
			before := d.Stats().Writes
			if dec, err := l.Incoming(ctx, "client", true); err != nil || !dec.Allowed {
				t.Fatalf("first Incoming = %+v, %v; want allowed", dec, err)
			}
			if w := d.Stats().Writes; w == before {
				t.Fatalf("Stats().Writes = %d after an admission, unchanged: no witness of writes", w)
			}
			clk.Advance(time.Millisecond)
			rejectOnce(t, l)
			v, flags, ttl := readEntry(t, d, zk)
			writes := d.Stats().Writes
			look := func() []byte {
				d.SyncStats()
				return readZone(t, path)
			}
			zone := look()
			if _, _, err := d.Get(zk); err != nil {
				t.Fatal(err)
			}
			afterGet := look()
			rejectOnce(t, l)
			after := look()
			got, read := diffWords(afterGet, after), diffWords(zone, afterGet)
			if len(got) == 0 || len(read) == 0 {
				t.Fatalf("a Get changed %d words and a rejection %d, want some each: no witness of the counts", len(read), len(got))
			}
			for _, off := range got {
				if !slices.Contains(read, off) {
					t.Errorf("a rejection changed the zone file at byte %d, where a Get writes nothing", off)
				}
			}
			if w := d.Stats().Writes; w != writes {
				t.Errorf("Stats().Writes %d -> %d after a rejection", writes, w)
			}
			v2, flags2, ttl2 := readEntry(t, d, zk)
			if !v2.Equal(v) || flags2 != flags || ttl2 != ttl {
				t.Errorf("after a rejection %q = %v, %d, TTL %v; want %v, %d, TTL %v", zk, v2, flags2, ttl2, v, flags, ttl)
			}
		})
	}
}

// rejectOnce fails unless l rejects a committed request of "client".
func rejectOnce(t *testing.T, l Limiter) {
	t.Helper()
	if dec, err := l.Incoming(context.Background(), "client", true); err != nil || dec.Allowed {
		t.Fatalf("Incoming = %+v, %v; want a rejection", dec, err)
	}
}

// readEntry returns zk's value, flags and TTL.
func readEntry(t *testing.T, d *dict.Dict, zk string) (dict.Value, uint32, time.Duration) {
	t.Helper()
	v, flags, err := d.Get(zk)
	if err != nil {
		t.Fatalf("Get(%q) = %v", zk, err)
	}
	ttl, err := d.TTL(zk)
	if err != nil {
		t.Fatalf("TTL(%q) = %v", zk, err)
	}
	return v, flags, ttl
}

func readZone(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// diffWords returns the offsets of the 8-byte words that differ between
// a and b, two readings of one zone file.
func diffWords(a, b []byte) []int {
	var offs []int
	for i := 0; i+8 <= min(len(a), len(b)); i += 8 {
		if !bytes.Equal(a[i:i+8], b[i:i+8]) {
			offs = append(offs, i)
		}
	}
	return offs
}

package dict

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Test helpers shared by the package's tests: a fake clock, specOpen for a
// zone in a temporary directory, and the specSet/wantGet/wantErr assertions.

// specEpoch is where the fake clocks start: a fixed instant in the past, so a
// TTL measured on a fake clock has long run out on the system clock.
const specEpoch = int64(1_700_000_000_000)

// specMinZone is the smallest zone of one shard (shm.HeaderSize +
// shm.MinShardSize): 14 slab pages of 4 KiB.
const specMinZone = 4096 + 16*4096

// specClock is a fake clock in Unix ms that only moves when told.
type specClock struct{ ms atomic.Int64 }

func newSpecClock() *specClock {
	c := &specClock{}
	c.ms.Store(specEpoch)
	return c
}

func (c *specClock) Now() int64                { return c.ms.Load() }
func (c *specClock) Advance(d time.Duration)   { c.ms.Add(int64(d / time.Millisecond)) }
func (c *specClock) SetOffset(d time.Duration) { c.ms.Store(specEpoch + int64(d/time.Millisecond)) }

// specOpen creates a zone in a temporary directory with a fake clock (unless
// o.Clock is set) and 1 MiB unless o.Size is set; the Dict closes with the test.
func specOpen(t *testing.T, o Options) (*Dict, *specClock) {
	t.Helper()
	c := newSpecClock()
	if o.Clock == nil {
		o.Clock = c.Now
	}
	if o.Size == 0 {
		o.Size = 1 << 20
	}
	d, err := Open(filepath.Join(t.TempDir(), "zone"), o)
	if err != nil {
		t.Fatalf("Open(%+v) = %v", o, err)
	}
	t.Cleanup(func() { d.Close() })
	return d, c
}

func specCheck(t *testing.T, d *Dict) {
	t.Helper()
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
}

// wantGet fails unless Get(key) returns want and flags.
func wantGet(t *testing.T, d *Dict, key string, want Value, flags uint32) {
	t.Helper()
	v, f, err := d.Get(key)
	if err != nil || !v.Equal(want) || f != flags {
		t.Fatalf("Get(%q) = %s %v, %d, %v; want %s %v, %d, <nil>", short(key), v.Kind(), short(v.String()), f, err, want.Kind(), short(want.String()), flags)
	}
}

// wantGetErr fails unless Get(key) returns the error want.
func wantGetErr(t *testing.T, d *Dict, key string, want error) {
	t.Helper()
	if v, f, err := d.Get(key); !errors.Is(err, want) {
		t.Fatalf("Get(%q) = %s %v, %d, %v; want %v", short(key), v.Kind(), short(v.String()), f, err, want)
	}
}

func wantErr(t *testing.T, call string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s = %v, want %v", call, err, want)
	}
}

// short abbreviates long keys and values in messages.
func short(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s…(%d bytes)", s[:16], len(s))
	}
	return s
}

func specKey(i int) string { return fmt.Sprintf("key%05d", i) }

func specSet(t *testing.T, d *Dict, key string, v Value, ttl time.Duration, flags uint32) {
	t.Helper()
	if _, err := d.Set(key, v, ttl, flags); err != nil {
		t.Fatalf("Set(%q, %s %v, %v, %d) = %v", short(key), v.Kind(), short(v.String()), ttl, flags, err)
	}
}

package dict

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// Test helpers shared by the package's tests: openTest for a zone in a
// temporary directory on a fake clock, checked and closed when the test
// ends, and the specSet/wantGet/wantErr assertions. The external tests
// (package dict_test) open theirs with internal/zonetest, which these
// cannot import: it imports dict.

// specMinZone is the smallest zone of one shard (shm.HeaderSize +
// shm.MinShardSize): 14 slab pages of 4 KiB.
const specMinZone = 4096 + 16*4096

// openTest creates a zone in a temporary directory on a fake clock, which
// it returns (nil when o.Clock is set), of 1 MiB unless o.Size is set. When
// the test ends the zone is checked, a Check error failing the test, and
// the Dict closed; a test that closed the Dict itself is not checked. A
// test that leaves its zone broken on purpose opens it with Open.
func openTest(t *testing.T, o Options) (*Dict, *testutil.Clock) {
	t.Helper()
	var c *testutil.Clock
	if o.Clock == nil {
		c = new(testutil.Clock)
		o.Clock = c.UnixMilli
	}
	if o.Size == 0 {
		o.Size = 1 << 20
	}
	d, err := Open(filepath.Join(t.TempDir(), "zone"), o)
	if err != nil {
		t.Fatalf("Open(%+v) = %v", o, err)
	}
	t.Cleanup(func() {
		if err := d.Check(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Check() when the test ended = %v", err)
		}
		d.Close()
	})
	return d, c
}

// specCheck fails the test unless d is sound at this point of it.
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

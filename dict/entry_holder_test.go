package dict_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// TestEntryHolderStopped: a process stopped inside Update on a live int
// holds that entry's page lock and not its shard's: reads of the key go on
// (they take no lock: the old value, as Update has written nothing), keys
// in other pages of the same shard go on, and only writers of the entry's
// page wait, then give up with ErrLockTimeout having changed nothing. Once
// the holder goes on, its write lands.
func TestEntryHolderStopped(t *testing.T) {
	const timeout = 50 * time.Millisecond
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 1 << 20, Shards: 1, LockTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tmSet(t, d, "k", dict.Int(0))
	h := stopHolderOf(t, "hold-entry", path, "k")
	// A value of another size class sits in another page.
	if _, err := d.Set("far", dict.String(strings.Repeat("x", 500)), 0, 0); err != nil {
		t.Fatalf("Set(far) with an entry held = %v, want it to go on", err)
	}
	if v, _, err := d.Get("k"); err != nil || v.Int() != 0 {
		t.Fatalf("Get(k) with its entry held = %v, %v; want 0, nil", v, err)
	}
	start := time.Now()
	if _, err := d.Incr("k", 5); !errors.Is(err, dict.ErrLockTimeout) {
		t.Fatalf("Incr(k) with its entry held by a stopped process = %v, want ErrLockTimeout", err)
	}
	if waited := time.Since(start); waited < timeout {
		t.Fatalf("Incr(k) gave up after %v, before LockTimeout %v", waited, timeout)
	}
	h.release(t)
	if v, _, err := d.Get("k"); err != nil || v.Int() != 1 {
		t.Fatalf("Get(k) after the holder went on = %v, %v; want 1 (its write, not the timed-out one)", v, err)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check = %v", err)
	}
}

package counter_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/counter"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// wantStats checks the failure figures of c.Stats().
func wantStats(t *testing.T, c *counter.Counter, failures, dropped uint64, pending int, lastErr error) {
	t.Helper()
	st := c.Stats()
	if st.Failures != failures || st.Dropped != dropped || st.Pending != pending || !errors.Is(st.LastError, lastErr) || (lastErr == nil) != (st.LastError == nil) {
		t.Errorf("Stats() = %+v; want %d failures, %d dropped, %d pending, last error %v", st, failures, dropped, pending, lastErr)
	}
}

// TestSyncKeepsDelta shows that a delta whose write fails stays in the
// process and that the next Sync that can write it does, with what was
// added meanwhile; another key, which the zone holds already, is written
// by the failing Sync.
func TestSyncKeepsDelta(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		o       dict.Options
		breakIt func(t *testing.T, d *dict.Dict) // makes key's write fail
		mend    func(t *testing.T, d *dict.Dict) // lets it succeed
		want    error
	}{
		{
			name: "the key holds bytes",
			key:  "k",
			breakIt: func(t *testing.T, d *dict.Dict) {
				if _, err := d.Set("k", dict.String("text"), 0, 0); err != nil {
					t.Fatal(err)
				}
			},
			mend: func(t *testing.T, d *dict.Dict) {
				if err := d.Delete("k"); err != nil {
					t.Fatal(err)
				}
			},
			want: dict.ErrNotNumber,
		},
		{
			// The zone (one shard of 16 pages) is full of lists pushed
			// to in turn, so that every page holds nodes of many lists:
			// a key of 30,000 bytes needs 8 free pages in a row, which
			// neither a page clearing (it leaves pages that hold list
			// nodes alone) nor the 90 evictions of an allocation (of 300
			// lists) can give.
			name: "the zone is full",
			key:  strings.Repeat("k", 30000),
			o:    dict.Options{Size: 4096 + 16*4096, Shards: 1},
			breakIt: func(t *testing.T, d *dict.Dict) {
				for i := 0; ; i++ {
					if _, err := d.RPush(fmt.Sprintf("fill%03d", i%300), dict.Int(1)); err != nil {
						if !errors.Is(err, dict.ErrNoMemory) {
							t.Fatal(err)
						}
						return
					}
				}
			},
			mend: func(t *testing.T, d *dict.Dict) {
				if err := d.FlushAll(); err != nil {
					t.Fatal(err)
				}
			},
			want: dict.ErrNoMemory,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := zonetest.Open(t, tt.o)
			c, err := counter.New(d, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := d.Set("ok", dict.Int(0), 0, 0); err != nil {
				t.Fatal(err)
			}
			tt.breakIt(t, d)
			c.Incr(tt.key, 5)
			c.Incr("ok", 1)
			err = c.Sync()
			if !errors.Is(err, tt.want) {
				t.Fatalf("Sync() = %v, want %v", err, tt.want)
			}
			wantStats(t, c, 1, 0, 1, tt.want)
			wantGet(t, c, "ok", 1, nil)

			// Still failing: the delta is kept again, and grows.
			c.Incr(tt.key, 2)
			if err := c.Sync(); !errors.Is(err, tt.want) {
				t.Fatalf("second Sync() = %v, want %v", err, tt.want)
			}
			wantStats(t, c, 2, 0, 1, tt.want)

			tt.mend(t, d)
			c.Incr(tt.key, 3)
			mustSync(t, c)
			wantGet(t, c, tt.key, 10, nil)
			wantStats(t, c, 2, 0, 0, nil)
			mustSync(t, c)
			wantGet(t, c, tt.key, 10, nil)
			if err := d.Check(); err != nil {
				t.Fatalf("Check() = %v", err)
			}
		})
	}
}

// TestSyncDropsImpossible shows that a delta for a key the dict can never
// hold is reported once and dropped, not retried forever.
func TestSyncDropsImpossible(t *testing.T) {
	tests := []struct {
		key  string
		want error
	}{
		{"", dict.ErrEmptyKey},
		{strings.Repeat("k", dict.MaxKeyLen+1), dict.ErrKeyTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.want.Error(), func(t *testing.T) {
			c, _ := newCounter(t)
			c.Incr(tt.key, 1)
			if err := c.Sync(); !errors.Is(err, tt.want) {
				t.Fatalf("Sync() = %v, want %v", err, tt.want)
			}
			wantStats(t, c, 1, 1, 0, tt.want)
			mustSync(t, c)
			wantStats(t, c, 1, 1, 0, nil)
		})
	}
}

// TestSyncErrorsCapped shows that a Sync with many failing keys returns a
// bounded error that still names the cause.
func TestSyncErrorsCapped(t *testing.T) {
	c, d := newCounter(t)
	const n = 100
	for i := 0; i < n; i++ {
		d.Set(key(i), dict.String("x"), 0, 0)
		c.Incr(key(i), 1)
	}
	err := c.Sync()
	if !errors.Is(err, dict.ErrNotNumber) || !strings.Contains(err.Error(), fmt.Sprintf("%d more keys failed", n-8)) {
		t.Fatalf("Sync() = %v, want %v and a count of the rest", err, dict.ErrNotNumber)
	}
	if lines := strings.Count(err.Error(), "\n") + 1; lines != 9 {
		t.Errorf("Sync() error has %d lines, want 9", lines)
	}
	wantStats(t, c, n, 0, n, dict.ErrNotNumber)
}
